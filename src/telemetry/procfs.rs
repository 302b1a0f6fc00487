//! CPU time and resident memory of a process (and of some of its threads) from /proc.

use std::path::Path;

/// CPU time (user + system) and resident set size at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    pub user_ticks: u64,
    pub system_ticks: u64,
    pub rss_bytes: u64,
}

impl ProcSample {
    pub fn cpu_ticks(&self) -> u64 {
        self.user_ticks + self.system_ticks
    }
}

/// Clock ticks per second (for the tick counts in /proc/<pid>/stat).
pub fn ticks_per_second() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100.0, |t| t as f64)
}

fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4096, |p| p as u64)
}

/// The fields after the command name (which may hold spaces and parentheses).
fn fields(stat: &str) -> Option<Vec<&str>> {
    Some(stat.rsplit_once(')')?.1.split_whitespace().collect())
}

/// `pid`'s CPU time and RSS, or None if it is gone.
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f = fields(&stat)?;
    // After ")": state(0) ppid(1) … utime(11) stime(12) … rss(21) in pages.
    Some(ProcSample {
        user_ticks: f.get(11)?.parse().ok()?,
        system_ticks: f.get(12)?.parse().ok()?,
        rss_bytes: f.get(21)?.parse::<u64>().ok()? * page_size(),
    })
}

/// CPU ticks of `pid`'s threads whose name starts with one of `prefixes` (Linux truncates
/// thread names to 15 characters).
pub fn thread_ticks(pid: u32, prefixes: &[&str]) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let task = e.path();
            let name = std::fs::read_to_string(task.join("comm")).ok()?;
            prefixes
                .iter()
                .any(|p| name.starts_with(p))
                .then(|| task_ticks(&task))
                .flatten()
        })
        .sum()
}

fn task_ticks(task: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    let f = fields(&stat)?;
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_uses_cpu_and_memory() {
        let me = std::process::id();
        let a = sample(me).unwrap();
        let mut x = 0u64;
        let begin = std::time::Instant::now();
        while begin.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = sample(me).unwrap();
        assert!(b.cpu_ticks() > a.cpu_ticks(), "{a:?} -> {b:?}");
        assert!(b.rss_bytes > 1 << 20);
        // This thread spun for 300 ms: its own ticks show it (Linux keeps 15 characters of a
        // thread's name; other test threads may have come and gone meanwhile).
        let name: String = std::thread::current().name().unwrap_or("").chars().take(15).collect();
        let mine = thread_ticks(me, &[&name]);
        assert!(
            mine >= 10 && mine <= b.cpu_ticks(),
            "this thread's ticks: {mine} of {}",
            b.cpu_ticks()
        );
        assert_eq!(sample(u32::MAX), None);
        assert_eq!(fields("1 (a) b) c) S 1 2").unwrap(), vec!["S", "1", "2"]);
    }
}
