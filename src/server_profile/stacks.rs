//! Collapsed stacks (`frame;frame;frame count` per line, as async-profiler's converter writes
//! them) read into per-frame shares: self (the frame was on top) and total (the frame was
//! anywhere on the stack), the quick read of a profile without a browser, and the difference
//! between two profiles, frame by frame.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A frame's share of a profile's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameShare {
    pub frame: String,
    /// Samples with the frame on top of the stack, and their share of all samples.
    pub self_samples: u64,
    pub self_share: f64,
    /// Samples with the frame anywhere on the stack, and their share.
    pub total_samples: u64,
    pub total_share: f64,
}

/// A frame whose share changed between a baseline profile and another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameChange {
    pub frame: String,
    pub base_total_share: f64,
    pub total_share: f64,
    pub base_self_share: f64,
    pub self_share: f64,
}

impl FrameChange {
    /// Change of the total share, in percentage points.
    pub fn total_points(&self) -> f64 {
        100.0 * (self.total_share - self.base_total_share)
    }

    pub fn self_points(&self) -> f64 {
        100.0 * (self.self_share - self.base_self_share)
    }
}

/// Samples per frame of one or more collapsed profiles added together.
#[derive(Debug, Clone, Default)]
pub struct Stacks {
    pub samples: u64,
    /// frame → (self samples, total samples)
    frames: HashMap<String, (u64, u64)>,
}

/// Cassandra's own code outside its executors: the code paths a profile is read for.
fn is_code_path(frame: &str) -> bool {
    frame.starts_with("org.apache.cassandra.") && !frame.starts_with("org.apache.cassandra.concurrent.")
}

/// A frame's name without the converter's type suffix (`_[j]` JIT-compiled, `_[i]` inlined,
/// `_[k]` kernel, `_[0]` interpreted…), so the same method compiled differently is one frame,
/// and with lambda classes' generated numbers removed (`Foo$$Lambda$1510.run`,
/// `Foo$$Lambda/0x00007f….run` → `Foo$$Lambda.run`), so two JVMs' profiles name them alike.
fn bare(frame: &str) -> std::borrow::Cow<'_, str> {
    let frame = match frame.rfind("_[") {
        Some(i) if frame.ends_with(']') && frame.len() - i <= 5 => &frame[..i],
        _ => frame,
    };
    const LAMBDA: &str = "$$Lambda";
    let Some(at) = frame.find(LAMBDA) else {
        return frame.into();
    };
    let (head, mut rest) = frame.split_at(at + LAMBDA.len());
    loop {
        let generated = |r: &str| {
            let mut c = r.chars();
            matches!(c.next(), Some('$' | '/' | '+' | '.')) && c.next().is_some_and(|d| d.is_ascii_digit())
        };
        if !generated(rest) {
            break;
        }
        let end = rest[1..]
            .find(|c: char| !(c.is_ascii_hexdigit() || c == 'x'))
            .map_or(rest.len(), |e| e + 1);
        rest = &rest[end..];
    }
    format!("{head}{}", bare(rest)).into()
}

impl Stacks {
    /// Adds the lines of a collapsed file; lines that are not `stack count` are skipped.
    pub fn add_collapsed(&mut self, text: &str) {
        for line in text.lines() {
            let Some((stack, count)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(count) = count.trim().parse::<u64>() else {
                continue;
            };
            self.samples += count;
            let mut seen: Vec<&str> = Vec::new();
            let frames: Vec<std::borrow::Cow<str>> = stack.split(';').map(bare).collect();
            for (i, f) in frames.iter().enumerate() {
                let f = f.as_ref();
                let entry = self.frames.entry(f.to_string()).or_default();
                if i + 1 == frames.len() {
                    entry.0 += count;
                }
                // Recursion counts a frame once per stack.
                if !seen.contains(&f) {
                    seen.push(f);
                    entry.1 += count;
                }
            }
        }
    }

    pub fn of(text: &str) -> Stacks {
        let mut s = Stacks::default();
        s.add_collapsed(text);
        s
    }

    fn share(&self, n: u64) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            n as f64 / self.samples as f64
        }
    }

    fn frame_share(&self, frame: &str, (own, total): (u64, u64)) -> FrameShare {
        FrameShare {
            frame: frame.to_string(),
            self_samples: own,
            self_share: self.share(own),
            total_samples: total,
            total_share: self.share(total),
        }
    }

    /// The `n` frames with the most samples on top of the stack.
    pub fn top_self(&self, n: usize) -> Vec<FrameShare> {
        self.top(n, |&(own, total)| (own, total))
    }

    /// The `n` frames of Cassandra's own code with the most samples anywhere on the stack.
    /// Thread entry points and executors (`Thread.run`, `SEPWorker.run`, `start_thread`) are on
    /// nearly every stack and say nothing; the code paths under them are the quick read.
    pub fn top_total(&self, n: usize) -> Vec<FrameShare> {
        self.top_where(n, |&(own, total)| (total, own), is_code_path)
    }

    fn top(&self, n: usize, key: impl Fn(&(u64, u64)) -> (u64, u64)) -> Vec<FrameShare> {
        self.top_where(n, key, |_| true)
    }

    fn top_where(
        &self,
        n: usize,
        key: impl Fn(&(u64, u64)) -> (u64, u64),
        keep: impl Fn(&str) -> bool,
    ) -> Vec<FrameShare> {
        let mut all: Vec<(&String, &(u64, u64))> =
            self.frames.iter().filter(|(f, c)| key(c).0 > 0 && keep(f)).collect();
        all.sort_by(|a, b| key(b.1).cmp(&key(a.1)).then_with(|| a.0.cmp(b.0)));
        all.into_iter().take(n).map(|(f, c)| self.frame_share(f, *c)).collect()
    }

    /// Cassandra's code paths (as `top_total`) whose total share moved most from `base` to
    /// `self`, either way: where one version or setting spends differently from the other.
    pub fn total_changes_from(&self, base: &Stacks, n: usize) -> Vec<FrameChange> {
        self.changes(base, n, |c| c.total_points().abs(), is_code_path)
    }

    /// Any frames (JVM, kernel and GC included) whose self share moved most.
    pub fn self_changes_from(&self, base: &Stacks, n: usize) -> Vec<FrameChange> {
        self.changes(base, n, |c| c.self_points().abs(), |_| true)
    }

    fn changes(
        &self,
        base: &Stacks,
        n: usize,
        size: impl Fn(&FrameChange) -> f64,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<FrameChange> {
        let names: std::collections::BTreeSet<&String> = self
            .frames
            .keys()
            .chain(base.frames.keys())
            .filter(|f| keep(f))
            .collect();
        let mut all: Vec<FrameChange> = names
            .into_iter()
            .map(|f| {
                let (bo, bt) = base.frames.get(f).copied().unwrap_or_default();
                let (no, nt) = self.frames.get(f).copied().unwrap_or_default();
                FrameChange {
                    frame: f.clone(),
                    base_total_share: base.share(bt),
                    total_share: self.share(nt),
                    base_self_share: base.share(bo),
                    self_share: self.share(no),
                }
            })
            .filter(|c| size(c) > 0.0)
            .collect();
        all.sort_by(|a, b| size(b).total_cmp(&size(a)).then_with(|| a.frame.cmp(&b.frame)));
        all.truncate(n);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "java.lang.Thread.run_[j];org.apache.cassandra.concurrent.SEPWorker.run_[j];\
                     org.apache.cassandra.db.Memtable.put_[i] 6\n\
                     java.lang.Thread.run_[j];org.apache.cassandra.concurrent.SEPWorker.run_[j];\
                     org.apache.cassandra.db.CommitLog.add_[j] 3\n\
                     java.lang.Thread.run_[j];org.apache.cassandra.f_[j];org.apache.cassandra.f_[j];org.apache.cassandra.f_[j] 1\n\
                     not a stack line\n";
    const MEMTABLE: &str = "org.apache.cassandra.db.Memtable.put";
    const COMMITLOG: &str = "org.apache.cassandra.db.CommitLog.add";

    #[test]
    fn self_and_total_shares_count_each_stack_once() {
        let s = Stacks::of(A);
        assert_eq!(s.samples, 10);
        let top = s.top_self(2);
        assert_eq!((top[0].frame.as_str(), top[0].self_samples), (MEMTABLE, 6));
        assert!((top[0].self_share - 0.6).abs() < 1e-9);
        assert_eq!((top[1].frame.as_str(), top[1].self_samples), (COMMITLOG, 3));
        let total = s.top_total(10);
        let names: Vec<&str> = total.iter().map(|f| f.frame.as_str()).collect();
        assert_eq!(
            names,
            [MEMTABLE, COMMITLOG, "org.apache.cassandra.f"],
            "Cassandra's code paths, not thread entries or executors"
        );
        let f = total.iter().find(|f| f.frame == "org.apache.cassandra.f").unwrap();
        assert_eq!((f.self_samples, f.total_samples), (1, 1), "recursion counted once");
    }

    #[test]
    fn generated_names_are_made_alike() {
        for (raw, bare_name) in [
            ("a.B$$Lambda$1510.toFlushItem_[j]", "a.B$$Lambda.toFlushItem"),
            ("a.B$$Lambda$430.0x00007f0d10313150.run_[0]", "a.B$$Lambda.run"),
            ("a.B$$Lambda/0x000071c3c8251a28.run", "a.B$$Lambda.run"),
            ("a.B$$Lambda+0x000071c3c8251a28.run", "a.B$$Lambda.run"),
            ("a.B$$Lambda.run", "a.B$$Lambda.run"),
            ("a.B$Inner.run_[i]", "a.B$Inner.run"),
            ("byte[]", "byte[]"),
        ] {
            assert_eq!(bare(raw), bare_name, "{raw}");
        }
    }

    #[test]
    fn changes_rank_frames_by_the_share_that_moved() {
        let base = Stacks::of(A);
        let sep = "java.lang.Thread.run;org.apache.cassandra.concurrent.SEPWorker.run";
        let new = Stacks::of(&format!("{sep};{MEMTABLE} 2\n{sep};{COMMITLOG} 7\n{sep};x 1\n"));
        let c = new.total_changes_from(&base, 10);
        let names: Vec<&str> = c.iter().map(|c| c.frame.as_str()).collect();
        assert_eq!(
            names,
            [COMMITLOG, MEMTABLE, "org.apache.cassandra.f"],
            "code paths, largest move first"
        );
        assert!((c[0].total_points() - 40.0).abs() < 1e-9, "{c:?}");
        assert!((c[1].self_points() + 40.0).abs() < 1e-9);
        let own = new.self_changes_from(&base, 10);
        let names: Vec<&str> = own.iter().map(|c| c.frame.as_str()).collect();
        assert_eq!(names, [COMMITLOG, MEMTABLE, "org.apache.cassandra.f", "x"], "{own:?}");
        assert!(Stacks::default().top_self(3).is_empty());
    }
}
