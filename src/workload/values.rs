//! Deterministic value generation into caller-owned buffers (nothing allocated per
//! operation): hashing, keys, text, and drawing an index from a distribution.

use serde::{Deserialize, Serialize};

/// How a value index is drawn from `[0, cardinality)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Distribution {
    /// Every value equally likely.
    #[default]
    Uniform,
    /// Normal around the middle of the range, 1/6 of the range per standard deviation.
    Gaussian,
    /// Small values most likely; mean at 1/8 of the range.
    Exponential,
    /// A few values very likely (exponent 1.1 over the range).
    Zipf,
    /// The row index itself (modulo the cardinality): consecutive rows get consecutive values.
    Sequence,
}

const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

/// A well-mixed 64-bit hash of `x` (SplitMix64's finaliser).
#[inline]
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Writes `n` in base 32, left-padded with '0' to the buffer's width (distinct `n` give
/// distinct keys while `n < 32^width`).
#[inline]
pub fn fill_key(buf: &mut [u8], mut n: u64) {
    for b in buf.iter_mut().rev() {
        *b = ALPHABET[(n & 31) as usize];
        n >>= 5;
    }
}

/// The version of the text `fill_text` writes, kept with every result (`config.values`) and in
/// the history's series key from 2 on: version 1 drew each 12 characters from
/// the 4 bits the last 12 left over, so every value past its 12th character was one of 16 tails
/// and a table of 1 kB values compressed to almost nothing.
pub const TEXT_VERSION: u32 = 2;

/// Fills the buffer with pseudo-random base-32 text determined by `seed`: 12 characters from
/// each word of the SplitMix64 stream that starts at `seed` (as random as base 32 allows, so
/// Cassandra's LZ4 finds next to nothing to compress).
#[inline]
pub fn fill_text(buf: &mut [u8], seed: u64) {
    let mut word = seed;
    for chunk in buf.chunks_mut(12) {
        let mut h = mix(word);
        word = word.wrapping_add(0x9E37_79B9_7F4A_7C15);
        for b in chunk {
            *b = ALPHABET[(h & 31) as usize];
            h >>= 5;
        }
    }
}

/// Draws a value index in `[0, n)` from `h` (a uniform 64-bit hash) under `d`; `seq` is used
/// by `Sequence`.
pub fn draw(d: Distribution, h: u64, n: u64, seq: u64) -> u64 {
    let n = n.max(1);
    let u = (h >> 11) as f64 / (1u64 << 53) as f64; // uniform in [0, 1)
    let idx = match d {
        Distribution::Uniform => return h % n,
        Distribution::Sequence => return seq % n,
        Distribution::Gaussian => {
            // Sum of four uniforms: close to normal, bounded, cheap.
            let mut s = u;
            let mut x = h;
            for _ in 0..3 {
                x = mix(x);
                s += (x >> 11) as f64 / (1u64 << 53) as f64;
            }
            // Mean 2, sd 0.577: map to mean n/2, sd n/6.
            (n as f64 / 2.0) + (s - 2.0) / 0.577 * (n as f64 / 6.0)
        }
        Distribution::Exponential => -(1.0 - u).ln() * (n as f64 / 8.0),
        Distribution::Zipf => {
            // Inverse of the continuous Zipf CDF with exponent 1.1 over [1, n].
            let a = 1.1_f64;
            let nf = n as f64;
            let t = 1.0 - u * (1.0 - nf.powf(1.0 - a));
            t.powf(1.0 / (1.0 - a)) - 1.0
        }
    };
    (idx.max(0.0) as u64).min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_width_and_distinct() {
        let mut a = [0u8; 15];
        let mut b = [0u8; 15];
        fill_key(&mut a, 0);
        assert_eq!(&a, b"000000000000000");
        fill_key(&mut a, 1_000_000);
        fill_key(&mut b, 1_000_001);
        assert_ne!(a, b);
        assert_eq!(std::str::from_utf8(&a).unwrap(), "00000000000ugi0");
    }

    #[test]
    fn text_is_deterministic_and_varied() {
        let mut a = [0u8; 40];
        let mut b = [0u8; 40];
        fill_text(&mut a, 7);
        fill_text(&mut b, 7);
        assert_eq!(a, b, "same seed, same text");
        fill_text(&mut b, 8);
        assert_ne!(a, b);
        let distinct: std::collections::HashSet<u8> = a.iter().copied().collect();
        assert!(distinct.len() > 10, "uses the alphabet: {distinct:?}");
        assert!(a.iter().all(|c| ALPHABET.contains(c)));
    }

    /// Every character depends on the whole seed, so a table of long values holds no repeats to
    /// compress: 64 values of 1 kB share no tail, and Snappy (LZ4's kind: no entropy coding)
    /// keeps all their bytes. Version 1's text, whose tails were one of 16, shrank to 6.5 %.
    #[test]
    fn long_values_are_distinct_past_every_word_and_do_not_compress() {
        let mut table = vec![0u8; 64 * 1000];
        for (i, v) in table.chunks_mut(1000).enumerate() {
            fill_text(v, mix(i as u64));
        }
        let tails: std::collections::HashSet<&[u8]> = table.chunks(1000).map(|v| &v[12..]).collect();
        assert_eq!(tails.len(), 64);
        let packed = snap::raw::Encoder::new().compress_vec(&table).unwrap();
        let kept = packed.len() as f64 / table.len() as f64;
        assert!(kept > 0.95, "Snappy kept {:.1} % of the text", kept * 100.0);
    }

    fn histogram(d: Distribution, n: u64, samples: u64) -> Vec<u64> {
        let mut counts = vec![0u64; n as usize];
        for i in 0..samples {
            counts[draw(d, mix(i), n, i) as usize] += 1;
        }
        counts
    }

    #[test]
    fn uniform_is_flat_and_sequence_counts() {
        let c = histogram(Distribution::Uniform, 10, 100_000);
        assert!(c.iter().all(|&x| (9_500..=10_500).contains(&x)), "{c:?}");
        assert_eq!(draw(Distribution::Sequence, 123, 10, 37), 7);
    }

    #[test]
    fn gaussian_centres_and_exponential_and_zipf_skew_low() {
        let g = histogram(Distribution::Gaussian, 12, 120_000);
        // sd = 2 of 12 buckets: the middle two (within 0.5 sd) hold ~38 %; the outer two ~1 %.
        let middle = g[5] + g[6];
        assert!((42_000..=48_000).contains(&middle), "gaussian middle {middle} {g:?}");
        assert!(g[0] + g[11] < 2_500, "gaussian tails {g:?}");
        let e = histogram(Distribution::Exponential, 8, 80_000);
        // Mean n/8 = 1: P(0) = 1 - e^-1 = 63 %.
        assert!((48_000..=53_500).contains(&e[0]), "exponential {e:?}");
        assert!(e.windows(2).all(|w| w[0] >= w[1]), "exponential decreases {e:?}");
        let z = histogram(Distribution::Zipf, 100, 100_000);
        assert!(z[0] > z[1] && z[1] > z[10] && z[10] > z[90], "zipf {z:?}");
        assert!(z[0] > 10_000, "zipf head {}", z[0]);
    }
}
