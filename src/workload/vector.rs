//! Vectors for approximate-nearest-neighbour (ANN) search, and the exact neighbours they are
//! judged against. A vector is a pure function of its value index, like every generated value:
//! the index picks one of `clusters` centroids and a point of that cluster's own 8-dimensional
//! subspace, the vector is the centroid plus `spread` times that point, scaled to unit length. Real embeddings are clustered (topics,
//! products, faces), and an ANN index's recall on clustered data is not its recall on uniform
//! noise. Queries come from the same clusters with noise of their own, so a query is near stored
//! vectors without being one of them.
//!
//! Centroid components and the subspace's coordinates are sums of four uniforms (close to
//! normal, mean 0, variance 1), so with `spread` 0.5 a vector's distance to its centroid is about
//! half the distance between two centroids: clusters overlap at their edges, as topics do.

use serde::{Deserialize, Serialize};

use super::values::mix;

/// Centroids when a profile does not say.
pub const DEFAULT_CLUSTERS: u64 = 64;
/// Noise relative to the centroid when a profile does not say.
pub const DEFAULT_SPREAD: f64 = 0.5;

const CLUSTER_SALT: u64 = 0x636c_7573_7465_7273;
const CENTROID_SALT: u64 = 0x6365_6e74_726f_6964;
const QUERY_SALT: u64 = 0x7175_6572_7976_6563;
const BASIS_SALT: u64 = 0x6261_7369_7376_6563;
/// Dimensions of a cluster's spread: a vector is its centroid plus a point of the cluster's own
/// 8-dimensional subspace. Real embeddings vary along far fewer directions than they have
/// (their intrinsic dimension), which is what lets an ANN index tell near from nearest; noise in
/// all N dimensions would make every member of a cluster about as near as every other.
const LATENT: usize = 8;

/// Close to a standard normal: the sum of four 16-bit uniforms of `h`, centred and scaled.
fn normal(h: u64) -> f32 {
    let sum: u64 = (0..4).map(|k| (h >> (16 * k)) & 0xffff).sum();
    ((sum as f64 / 65_536.0 - 2.0) * 3f64.sqrt()) as f32
}

/// Fills `out` with the unit vector of value index `v` (`query`: a query's vector, which has
/// noise of its own). Allocates nothing.
pub fn fill_vector(out: &mut [f32], v: u64, salt: u64, clusters: u64, spread: f64, query: bool) {
    let cluster = mix(v ^ salt ^ CLUSTER_SALT) % clusters.max(1);
    let centre = mix(cluster ^ salt ^ CENTROID_SALT);
    let noise = mix(v ^ salt ^ if query { QUERY_SALT } else { 0 });
    let mut latent = [0f32; LATENT];
    for (j, z) in latent.iter_mut().enumerate() {
        *z = normal(mix(noise.wrapping_add(j as u64)));
    }
    let scale = spread as f32 / (LATENT as f32).sqrt();
    let basis = mix(centre ^ BASIS_SALT);
    let mut norm = 0f32;
    for (i, x) in out.iter_mut().enumerate() {
        let row = basis.wrapping_add((i * LATENT) as u64);
        let offset: f32 = latent
            .iter()
            .enumerate()
            .map(|(j, z)| z * normal(mix(row.wrapping_add(j as u64))))
            .sum();
        *x = normal(mix(centre.wrapping_add(i as u64))) + scale * offset;
        norm += *x * *x;
    }
    let norm = norm.sqrt().max(f32::MIN_POSITIVE);
    out.iter_mut().for_each(|x| *x /= norm);
}

/// How an ANN index ranks vectors (the index's `similarity_function`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Similarity {
    Cosine,
    DotProduct,
    Euclidean,
}

impl Similarity {
    /// The index option's value (any case); None for one caplab does not know.
    pub fn parse(s: &str) -> Option<Similarity> {
        match s.to_ascii_lowercase().as_str() {
            "cosine" => Some(Similarity::Cosine),
            "dot_product" => Some(Similarity::DotProduct),
            "euclidean" => Some(Similarity::Euclidean),
            _ => None,
        }
    }

    /// Higher is nearer.
    pub fn score(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Similarity::DotProduct => dot(a, b),
            Similarity::Cosine => dot(a, b) / (dot(a, a) * dot(b, b)).sqrt().max(f32::MIN_POSITIVE),
            Similarity::Euclidean => -a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>(),
        }
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The `k` best-scoring keys offered so far, best first.
#[derive(Debug, Clone)]
pub struct TopK<K> {
    k: usize,
    best: Vec<(f32, K)>,
}

impl<K> TopK<K> {
    pub fn new(k: usize) -> TopK<K> {
        TopK {
            k,
            best: Vec::with_capacity(k + 1),
        }
    }

    /// Offers a row; `key` is only called when the row enters the top k.
    pub fn offer(&mut self, score: f32, key: impl FnOnce() -> K) {
        if self.best.len() == self.k && self.best.last().is_some_and(|(s, _)| score <= *s) {
            return;
        }
        let at = self.best.partition_point(|(s, _)| *s >= score);
        self.best.insert(at, (score, key()));
        self.best.truncate(self.k);
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.best.iter().map(|(_, k)| k)
    }

    pub fn len(&self) -> usize {
        self.best.len()
    }

    pub fn is_empty(&self) -> bool {
        self.best.is_empty()
    }
}

/// The exact neighbours of a set of queries, found by offering every stored row to each: memory
/// is the queries and k keys per query, whatever the table's size.
pub struct Exact<K> {
    similarity: Similarity,
    queries: Vec<Vec<f32>>,
    tops: Vec<TopK<K>>,
    pub rows: u64,
}

impl<K: Clone> Exact<K> {
    pub fn new(similarity: Similarity, queries: Vec<Vec<f32>>, k: usize) -> Exact<K> {
        let tops = queries.iter().map(|_| TopK::new(k)).collect();
        Exact {
            similarity,
            queries,
            tops,
            rows: 0,
        }
    }

    pub fn offer(&mut self, vector: &[f32], key: &K) {
        self.rows += 1;
        for (q, top) in self.queries.iter().zip(&mut self.tops) {
            top.offer(self.similarity.score(q, vector), || key.clone());
        }
    }

    /// Query `q`'s exact neighbours, nearest first.
    pub fn neighbours(&self, q: usize) -> &TopK<K> {
        &self.tops[q]
    }
}

/// The share of the exact neighbours an ANN answer returned (1 when there are none to find).
pub fn recall<K: PartialEq>(returned: &[K], exact: &TopK<K>) -> f64 {
    if exact.is_empty() {
        return 1.0;
    }
    let hits = exact.keys().filter(|k| returned.contains(k)).count();
    hits as f64 / exact.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(v: u64, clusters: u64, query: bool) -> Vec<f32> {
        let mut out = vec![0f32; 32];
        fill_vector(&mut out, v, 7, clusters, DEFAULT_SPREAD, query);
        out
    }

    #[test]
    fn vectors_are_unit_length_deterministic_and_queries_are_not_stored_vectors() {
        let a = vector(5, 16, false);
        assert_eq!(a, vector(5, 16, false));
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert_ne!(a, vector(5, 16, true));
        assert_ne!(a, vector(6, 16, false));
    }

    #[test]
    fn vectors_are_clustered() {
        // With one cluster every pair is near; with many, pairs of the same cluster are nearer
        // than pairs of different ones: clustered data, not uniform noise.
        let cos = |a: &[f32], b: &[f32]| Similarity::Cosine.score(a, b);
        let one: f32 = (0..50)
            .map(|i| cos(&vector(i, 1, false), &vector(i + 50, 1, false)))
            .sum::<f32>()
            / 50.0;
        assert!(one > 0.7, "one cluster: mean cosine {one}");
        let cluster = |v: u64| mix(v ^ 7 ^ CLUSTER_SALT) % 64;
        let (mut same, mut other) = (Vec::new(), Vec::new());
        for a in 0..200u64 {
            for b in a + 1..200 {
                let c = cos(&vector(a, 64, false), &vector(b, 64, false));
                if cluster(a) == cluster(b) {
                    same.push(c)
                } else {
                    other.push(c)
                }
            }
        }
        let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
        assert!(!same.is_empty());
        assert!(
            mean(&same) > 0.7 && mean(&other).abs() < 0.1,
            "{} {}",
            mean(&same),
            mean(&other)
        );
        // A query's nearest stored vectors are mostly of its own cluster.
        let q = vector(3, 64, true);
        let mut top = TopK::new(5);
        for v in 0..2000u64 {
            top.offer(cos(&q, &vector(v, 64, false)), || v);
        }
        assert!(top.keys().filter(|v| cluster(**v) == cluster(3)).count() >= 4);
    }

    #[test]
    fn top_k_keeps_the_best_in_order() {
        let mut top = TopK::new(3);
        for (s, k) in [(0.1, 'a'), (0.9, 'b'), (0.5, 'c'), (0.7, 'd'), (0.2, 'e')] {
            top.offer(s, || k);
        }
        assert_eq!(top.keys().copied().collect::<String>(), "bdc");
    }

    #[test]
    fn the_three_similarities_rank_unit_vectors_alike_and_recall_counts_hits() {
        let q = vector(1, 8, true);
        let rank = |s: Similarity| {
            let mut e = Exact::new(s, vec![q.clone()], 10);
            for v in 0..500u64 {
                e.offer(&vector(v, 8, false), &v);
            }
            e.neighbours(0).keys().copied().collect::<Vec<_>>()
        };
        let cosine = rank(Similarity::Cosine);
        assert_eq!(cosine, rank(Similarity::DotProduct));
        assert_eq!(cosine, rank(Similarity::Euclidean));
        let mut exact = TopK::new(4);
        for (i, k) in [1u64, 2, 3, 4].iter().enumerate() {
            exact.offer(1.0 - i as f32 / 10.0, || *k);
        }
        assert_eq!(recall(&[4, 9, 1, 7], &exact), 0.5);
        assert_eq!(recall(&[], &TopK::<u64>::new(4)), 1.0);
        assert_eq!(Similarity::parse("DOT_PRODUCT"), Some(Similarity::DotProduct));
    }
}
