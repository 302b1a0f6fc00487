//! The one reader of /proc: a process's state, command line, CPU time, resident memory, thread
//! count, children and allowed cores, the CPU of some of its threads by name, and the machine's
//! memory, name, kernel and each CPU's time. Provisioning uses it to tell a node's JVM from a
//! recycled PID and to size heaps; telemetry samples it once per interval; results record the
//! machine.

use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;

/// CPU time (user and system), resident set size and threads at one instant, from
/// `/proc/<pid>/stat` (one read).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    pub user_ticks: u64,
    pub system_ticks: u64,
    pub rss_bytes: u64,
    pub threads: u64,
}

impl ProcSample {
    pub fn cpu_ticks(&self) -> u64 {
        self.user_ticks + self.system_ticks
    }

    /// The same in seconds, as `caplab node status` shows it.
    pub fn usage(&self) -> Usage {
        let tck = ticks_per_second();
        Usage {
            user_seconds: self.user_ticks as f64 / tck,
            system_seconds: self.system_ticks as f64 / tck,
            rss_bytes: self.rss_bytes,
            threads: self.threads,
        }
    }
}

/// A process's CPU time and memory in human units.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Usage {
    pub user_seconds: f64,
    pub system_seconds: f64,
    pub rss_bytes: u64,
    pub threads: u64,
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

/// `pid`'s CPU time, RSS and threads, or None if it is gone.
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f = fields(&stat)?;
    // After ")": state(0) ppid(1) … utime(11) stime(12) … num_threads(17) … rss(21) in pages.
    Some(ProcSample {
        user_ticks: f.get(11)?.parse().ok()?,
        system_ticks: f.get(12)?.parse().ok()?,
        threads: f.get(17)?.parse().ok()?,
        rss_bytes: f.get(21)?.parse::<u64>().ok()? * page_size(),
    })
}

/// `pid`'s state letter (R, S, D, Z, X…), or None if it is gone.
pub fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    fields(&stat)?.first()?.chars().next()
}

/// `pid`'s command line (NUL-separated; empty while a process exits), or None if it is gone.
pub fn cmdline(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok()
}

/// How many threads `pid` has left (None if it is gone).
pub fn task_count(pid: u32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/task")).ok().map(|d| d.count())
}

/// This machine's memory, from /proc/meminfo (8 GiB if it cannot be read).
pub fn total_ram() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(8 << 30)
}

/// This machine's name (the client host in results and CSV rows).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// The kernel's release.
pub fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The CPU's model name, as /proc/cpuinfo gives it (empty when it does not).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split_once(':')?.1.trim().to_string())
        })
        .unwrap_or_default()
}

/// This boot's identifier: a new one at every boot of the machine (or of its virtual machine).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One CPU's time since boot, in clock ticks, from /proc/stat: busy (user, nice, system, irq,
/// softirq; a guest's time is inside user and nice already), idle (idle, iowait), and steal (what
/// the hypervisor ran elsewhere while this virtual CPU wanted to run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub busy: u64,
    pub idle: u64,
    pub steal: u64,
}

/// Each CPU's ticks, indexed by its number (a CPU /proc/stat does not list, being offline, reads
/// as zeros); empty when /proc/stat cannot be read.
pub fn cpu_ticks() -> Vec<CpuTicks> {
    std::fs::read_to_string("/proc/stat").map_or_else(|_| Vec::new(), |t| parse_cpu_ticks(&t))
}

fn parse_cpu_ticks(stat: &str) -> Vec<CpuTicks> {
    let mut out: Vec<CpuTicks> = Vec::new();
    for line in stat.lines() {
        // The first "cpu" line (all CPUs together) has no number.
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(Ok(cpu)) = f.next().map(str::parse::<usize>) else {
            continue;
        };
        let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        if out.len() <= cpu {
            out.resize(cpu + 1, CpuTicks::default());
        }
        // user nice system idle iowait irq softirq steal guest guest_nice
        out[cpu] = CpuTicks {
            busy: at(0) + at(1) + at(2) + at(5) + at(6),
            idle: at(3) + at(4),
            steal: at(7),
        };
    }
    out
}

/// The cores `pid` may run on, as /proc/<pid>/status lists them (`0-1`, `0,2`); None if it is
/// gone.
pub fn allowed_cpus(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Cpus_allowed_list:"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// The processes `pid` started and that still run (every thread's children), e.g. the JVM a
/// JMX watch starts; empty where the kernel does not list children.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The threads of one process whose names start with given prefixes (Linux truncates thread
/// names to 15 characters), and the CPU they use.
///
/// A JVM has a hundred threads or more: reading every thread's name at every sample took
/// ~1 ms, on the thread that also records latency. Names are read once per thread instead
/// (twice, a sample apart: a new thread briefly carries its creator's name until it sets its
/// own), so a sample reads the task list and the matching threads' counters only.
pub struct NamedThreads {
    pid: u32,
    prefixes: &'static [&'static str],
    known: HashMap<u32, Thread>,
    samples: u64,
    total: u64,
}

struct Thread {
    matches: bool,
    names_read: u8,
    last_seen: u64,
    ticks: u64,
}

impl NamedThreads {
    pub fn new(pid: u32, prefixes: &'static [&'static str]) -> NamedThreads {
        NamedThreads {
            pid,
            prefixes,
            known: HashMap::new(),
            samples: 0,
            total: 0,
        }
    }

    /// CPU ticks (user + system) the matching threads have used, summed over samples: each
    /// sample adds what every matching thread used since the previous one (all of it, for a
    /// thread that is new), so a thread ending takes nothing already counted away. What a
    /// thread used after the last sample it was alive for is not seen. Take differences
    /// between calls; the first call counts the threads' whole lives.
    pub fn ticks(&mut self) -> u64 {
        self.samples += 1;
        let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            self.known.clear();
            return self.total;
        };
        for e in dir.filter_map(|e| e.ok()) {
            let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
                continue;
            };
            let task = e.path();
            let t = self.known.entry(tid).or_insert(Thread {
                matches: false,
                names_read: 0,
                last_seen: 0,
                ticks: 0,
            });
            if t.names_read < 2 {
                let Ok(name) = std::fs::read_to_string(task.join("comm")) else {
                    continue;
                };
                t.matches = self.prefixes.iter().any(|p| name.starts_with(p));
                t.names_read += 1;
            }
            t.last_seen = self.samples;
            if t.matches
                && let Some(now) = task_ticks(&task)
            {
                self.total += now.saturating_sub(t.ticks);
                t.ticks = now;
            }
        }
        let now = self.samples;
        self.known.retain(|_, t| t.last_seen == now);
        self.total
    }
}

fn task_ticks(task: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    let f = fields(&stat)?;
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// How long the calling thread has waited for a CPU on a run queue, in nanoseconds, all its
/// life (the second field of /proc/thread-self/schedstat). The file is opened once per thread and
/// read again in place, so a read allocates nothing; None where the kernel keeps no schedstat.
#[derive(Default)]
pub struct RunQueueWait {
    open: Option<(std::thread::ThreadId, std::fs::File)>,
}

impl RunQueueWait {
    /// The thread read, and its wait so far.
    pub fn read(&mut self) -> Option<(std::thread::ThreadId, u64)> {
        use std::os::unix::fs::FileExt;
        let me = std::thread::current().id();
        if self.open.as_ref().is_none_or(|(t, _)| *t != me) {
            self.open = std::fs::File::open("/proc/thread-self/schedstat").ok().map(|f| (me, f));
        }
        let (_, file) = self.open.as_ref()?;
        let mut buf = [0u8; 96];
        let n = file.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        Some((me, text.split_whitespace().nth(1)?.parse().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread kept from a CPU by busy threads has its wait grow by about what it did not run.
    #[test]
    fn a_threads_run_queue_wait_grows_while_busy_threads_keep_it_from_a_cpu() {
        let mut rq = RunQueueWait::default();
        let Some((_, before)) = rq.read() else {
            return eprintln!("no schedstat on this kernel: nothing to read");
        };
        // Busy threads, three for each CPU this thread may run on, beside it for 300 ms.
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let busy: Vec<_> = (0..3 * cpus)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || while !stop.load(std::sync::atomic::Ordering::Relaxed) {})
            })
            .collect();
        let began = std::time::Instant::now();
        while began.elapsed() < std::time::Duration::from_millis(300) {}
        let (_, crowded) = rq.read().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        busy.into_iter().for_each(|b| b.join().unwrap());
        // Four threads a CPU: this one ran about a quarter of the 300 ms and waited most of the
        // rest; asserted at a third of it, for a scheduler that favours the thread already running.
        assert!(
            crowded - before > 100_000_000,
            "waited {} ms among busy threads",
            (crowded - before) / 1_000_000
        );
    }

    #[test]
    fn each_cpus_busy_idle_and_stolen_ticks_are_read_by_its_number() {
        let stat = "cpu  10 1 5 100 3 1 1 7 0 0\ncpu0 4 0 2 50 1 0 1 3 0 0\ncpu2 6 1 3 50 2 1 0 4 2 0\nintr 1 2\n";
        let t = parse_cpu_ticks(stat);
        assert_eq!(t.len(), 3, "cpu1 offline, cpu2 still at index 2");
        assert_eq!(
            t[0],
            CpuTicks {
                busy: 7,
                idle: 51,
                steal: 3
            }
        );
        assert_eq!(t[1], CpuTicks::default());
        assert_eq!(
            t[2],
            CpuTicks {
                busy: 11,
                idle: 52,
                steal: 4
            },
            "guest time is inside user"
        );
        let here = cpu_ticks();
        assert!(here.iter().any(|c| c.busy > 0), "{here:?}");
        assert!(allowed_cpus(std::process::id()).is_some_and(|l| !l.is_empty()));
        let child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        assert!(children(std::process::id()).contains(&child.id()));
        let mut child = child;
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn this_process_uses_cpu_and_memory() {
        let me = std::process::id();
        let a = sample(me).unwrap();
        // Spin until /proc shows 100 ms of this process's CPU: a loaded machine takes longer
        // to give it, but a reader that never sees it fails at the 30 s bound.
        let mut x = 0u64;
        let begin = std::time::Instant::now();
        let mut b = a;
        while b.cpu_ticks() - a.cpu_ticks() < 10 && begin.elapsed() < std::time::Duration::from_secs(30) {
            for _ in 0..1_000_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            b = sample(me).unwrap();
        }
        std::hint::black_box(x);
        assert!(b.rss_bytes > 1 << 20 && b.threads >= 1);
        assert!(matches!(state(me), Some('R' | 'S')));
        assert!(cmdline(me).is_some_and(|c| !c.is_empty()));
        assert!(b.cpu_ticks() - a.cpu_ticks() >= 10, "30 s of spinning: {a:?} -> {b:?}");
        assert_eq!(sample(u32::MAX), None);
        assert_eq!(fields("1 (a) b) c) S 1 2").unwrap(), vec!["S", "1", "2"]);
    }

    /// A thread named `name` that uses `ticks` of CPU, then waits, alive, until `exit` is
    /// dropped; returns once it has used them, with its /proc task path. One such thread
    /// spins at a time, so the timing tests running beside this one keep a core.
    fn worker(
        name: &str,
        ticks: u64,
        exit: std::sync::mpsc::Receiver<()>,
    ) -> (std::path::PathBuf, std::thread::JoinHandle<()>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let me = Path::new("/proc").join(std::fs::read_link("/proc/thread-self").unwrap());
                let begin = std::time::Instant::now();
                let mut x = 0u64;
                while task_ticks(&me).unwrap() < ticks && begin.elapsed().as_secs() < 10 {
                    for _ in 0..100_000 {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
                    }
                }
                tx.send(me).unwrap();
                let _ = exit.recv();
            })
            .unwrap();
        (rx.recv().unwrap(), h)
    }

    #[test]
    fn named_threads_count_only_their_own_and_survive_threads_ending() {
        let mut writers = NamedThreads::new(std::process::id(), &["cpl-writer"]);
        assert_eq!(writers.ticks(), 0, "no such thread yet");
        let (other_exit, rx) = std::sync::mpsc::channel();
        let (other_task, other) = worker("cpl-other", 20, rx);
        let (first_exit, rx) = std::sync::mpsc::channel();
        let (first_task, first) = worker("cpl-writer-1", 20, rx);
        let a = writers.ticks();
        let first_ticks = task_ticks(&first_task).unwrap();
        drop(first_exit);
        first.join().unwrap();
        // The first writer has ended; a second one starts and works.
        let (second_exit, rx) = std::sync::mpsc::channel();
        let (second_task, second) = worker("cpl-writer-2", 20, rx);
        let b = writers.ticks();
        let second_ticks = task_ticks(&second_task).unwrap();
        let other_ticks = task_ticks(&other_task).unwrap();
        drop(second_exit);
        second.join().unwrap();
        drop(other_exit);
        other.join().unwrap();
        // The thread named cpl-other is alive throughout with as much CPU: it is not counted.
        assert!(first_ticks >= 20 && other_ticks >= 20, "{first_ticks} {other_ticks}");
        // (A tick may land between a worker's last look at its CPU and its wait.)
        assert!(
            a.abs_diff(first_ticks) <= 1,
            "the first writer alone: {a} vs {first_ticks}"
        );
        // What the second writer used is added to what the first one had used: the count never
        // goes back when a thread ends.
        assert!(
            (b - a).abs_diff(second_ticks) <= 1,
            "after the first writer ended: {a} -> {b}, the second used {second_ticks}"
        );
    }
}
