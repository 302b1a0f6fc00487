//! Splitting one workload between several loader processes (`--loader i/n`): loader `i` of
//! `n` runs the operations whose global index is `i - 1` modulo `n`. Workloads derive keys and
//! values from the operation index alone, so loaders write disjoint rows (populate splits
//! exactly) and together do what one loader would.
//!
//! `--loader auto` takes the slice from a Kubernetes Indexed Job: each pod has its index, from
//! 0, in `JOB_COMPLETION_INDEX`; the count is given after a slash (`auto/3`) or in
//! `CAPLAB_LOADERS`.

use std::sync::Arc;

use super::{Outcome, Workload};

/// This process's share of the operation index space: `index` of `count` (0-based inside).
/// Slices order by index (then count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LoaderSlice {
    index: u64,
    count: u64,
}

impl Default for LoaderSlice {
    fn default() -> Self {
        LoaderSlice { index: 0, count: 1 }
    }
}

impl LoaderSlice {
    /// Parses `i/n`, loaders numbered from 1 (`1/3`, `2/3`, `3/3`), or `auto` / `auto/n` from
    /// this process's environment.
    pub fn parse(s: &str) -> Result<LoaderSlice, String> {
        LoaderSlice::parse_in(s, |k| std::env::var(k).ok())
    }

    /// `parse`, reading environment variables through `env`.
    pub fn parse_in(s: &str, env: impl Fn(&str) -> Option<String>) -> Result<LoaderSlice, String> {
        let t = s.trim();
        if let Some(rest) = t.strip_prefix("auto") {
            let count = match rest.strip_prefix('/') {
                Some(n) => n.to_string(),
                None if rest.is_empty() => env("CAPLAB_LOADERS").ok_or(
                    "--loader auto needs the loader count: write --loader auto/N, or set CAPLAB_LOADERS=N (an \
                     Indexed Job's completions)",
                )?,
                None => return Err(format!("'{s}' is not a loader slice: write auto or auto/N")),
            };
            let index = env("JOB_COMPLETION_INDEX").ok_or(
                "--loader auto reads JOB_COMPLETION_INDEX, which Kubernetes sets in the pods of an Indexed Job \
                 (completionMode: Indexed); outside one, give --loader i/n",
            )?;
            let i: u64 = index.trim().parse().map_err(|_| {
                format!("JOB_COMPLETION_INDEX is '{index}', not a number: --loader auto needs an Indexed Job's index")
            })?;
            return LoaderSlice::parse(&format!("{}/{}", i + 1, count.trim())).map_err(|e| {
                format!(
                    "--loader auto: JOB_COMPLETION_INDEX {index} (from 0) with {} loaders: {e}",
                    count.trim()
                )
            });
        }
        let bad = || format!("'{s}' is not a loader slice: write i/n with 1 <= i <= n, e.g. --loader 2/3");
        let (i, n) = t.split_once('/').ok_or_else(bad)?;
        let (i, n): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if i == 0 || i > n {
            return Err(bad());
        }
        Ok(LoaderSlice { index: i - 1, count: n })
    }

    /// This loader's number, from 0.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Loaders of the run.
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// The global index of this loader's `i`-th operation.
    pub fn global(&self, i: u64) -> u64 {
        i * self.count + self.index
    }

    /// How many of the global operations `0..total` are this loader's.
    pub fn share(&self, total: u64) -> u64 {
        total / self.count + u64::from(total % self.count > self.index)
    }
}

impl std::fmt::Display for LoaderSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// A workload run as one loader's slice of it.
pub struct Sliced<W> {
    pub inner: Arc<W>,
    pub slice: LoaderSlice,
}

impl<W: Workload> Workload for Sliced<W> {
    type Worker = W::Worker;

    fn op_names(&self) -> Vec<String> {
        self.inner.op_names()
    }

    fn worker(&self, id: usize) -> W::Worker {
        self.inner.worker(id)
    }

    fn op_of(&self, i: u64) -> usize {
        self.inner.op_of(self.slice.global(i))
    }

    async fn execute(&self, worker: &mut W::Worker, i: u64) -> Outcome {
        self.inner.execute(worker, self.slice.global(i)).await
    }

    fn traces(&self) -> bool {
        self.inner.traces()
    }

    async fn execute_traced(&self, worker: &mut W::Worker, i: u64) -> (Outcome, Option<uuid::Uuid>) {
        self.inner.execute_traced(worker, self.slice.global(i)).await
    }

    fn statements(&self) -> Vec<String> {
        self.inner.statements()
    }

    fn facts(&self, i: u64) -> super::OpFacts {
        self.inner.facts(self.slice.global(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_partition_the_index_space() {
        for total in [0u64, 1, 7, 10, 1001] {
            for n in 1..=4 {
                let slices: Vec<_> = (1..=n)
                    .map(|i| LoaderSlice::parse(&format!("{i}/{n}")).unwrap())
                    .collect();
                let mut seen: Vec<u64> = slices
                    .iter()
                    .flat_map(|s| (0..s.share(total)).map(|i| s.global(i)))
                    .collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{total} ops over {n} loaders");
            }
        }
        assert_eq!(LoaderSlice::parse("2/3").unwrap().to_string(), "2/3");
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(LoaderSlice::parse(bad).unwrap_err().contains("--loader 2/3"), "{bad}");
        }
    }

    #[test]
    fn auto_takes_the_slice_from_an_indexed_job() {
        let env = |index: Option<&'static str>, count: Option<&'static str>| {
            move |k: &str| match k {
                "JOB_COMPLETION_INDEX" => index.map(String::from),
                "CAPLAB_LOADERS" => count.map(String::from),
                _ => None,
            }
        };
        let parse = |s: &str, e| LoaderSlice::parse_in(s, e).map(|l| l.to_string());
        assert_eq!(parse("auto/3", env(Some("0"), None)), Ok("1/3".into()));
        assert_eq!(parse("auto", env(Some("2"), Some("3"))), Ok("3/3".into()));
        let err = |s: &str, e| parse(s, e).unwrap_err();
        assert!(err("auto", env(Some("2"), None)).contains("CAPLAB_LOADERS"));
        assert!(err("auto/3", env(None, None)).contains("Indexed Job"));
        assert!(err("auto/3", env(Some("x"), None)).contains("not a number"));
        // Index 3 of 3 loaders (from 0) is outside the job.
        assert!(err("auto/3", env(Some("3"), None)).contains("JOB_COMPLETION_INDEX 3"));
        assert!(err("autox", env(Some("0"), None)).contains("auto/N"));
    }
}
