//! CPU placement: lists of cores (`0`, `1-3`, `0,2`), and pinning a process to some of them
//! (`sched_setaffinity`), so a node and caplab's client can run on disjoint cores of a shared
//! machine instead of taking turns on every one. Any folder may use it.

use anyhow::{Result, bail};

/// The cores of a list like `0`, `1-3` or `0,2-3`, sorted, each once.
pub fn parse(list: &str) -> Result<Vec<usize>> {
    let bad = || {
        anyhow::anyhow!(
            "'{list}' is not a list of cores: write 1, 1-3 or 0,2 (this machine has cores 0 to {})",
            count() - 1
        )
    };
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let c: usize = part.parse().map_err(|_| bad())?;
                (c, c)
            }
        };
        if lo > hi {
            return Err(bad());
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(bad());
    }
    if let Some(c) = out.iter().find(|&&c| c >= count()) {
        bail!(
            "core {c} of '{list}' is not on this machine (it has cores 0 to {})",
            count() - 1
        );
    }
    Ok(out)
}

/// `0`, `1-3`, `0,2`: the list written back.
pub fn describe(cores: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cores[i].to_string()
        } else {
            format!("{}-{}", cores[i], cores[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The cores this machine has online, whatever this process is pinned to (reading its own
/// affinity instead made an experiment with `pin: true` refuse its second node: once caplab
/// was on core 0, the machine looked like one core).
pub fn count() -> usize {
    // SAFETY: sysconf reads a system constant.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if online >= 1 {
        return online as usize;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get()).max(1)
}

/// The affinity mask of `cores`.
pub fn mask(cores: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zeros is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cores {
        // SAFETY: CPU_SET writes one bit of `set`, within its size for any core the machine has.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

/// Pins this process to `cores`: every thread it has (the runtime's workers included), and so
/// every thread they start afterwards. `sched_setaffinity` on pid 0 would pin the calling thread
/// only, leaving the runtime's other workers free to run on the nodes' cores.
pub fn pin_self(cores: &[usize]) -> Result<()> {
    let set = mask(cores);
    let pin = |tid: libc::pid_t| {
        // SAFETY: sched_setaffinity reads `set`, a valid cpu_set_t of the size given.
        let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            bail!(
                "cannot pin caplab to cores {}: {}",
                describe(cores),
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    };
    pin(0)?;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for tid in tasks
            .flatten()
            .filter_map(|t| t.file_name().to_str()?.parse::<libc::pid_t>().ok())
        {
            // A thread that ended since the listing is not an error.
            if let Err(e) = pin(tid)
                && std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
            {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The default split of this machine for `pin`: caplab's client on the first core, the nodes
/// on the others. None on a single core.
pub fn split() -> Option<(Vec<usize>, Vec<usize>)> {
    let n = count();
    (n >= 2).then(|| (vec![0], (1..n).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_of_cores_read_and_write_back() {
        assert_eq!(parse("0").unwrap(), [0]);
        assert_eq!(describe(&[0, 1, 2, 5]), "0-2,5");
        assert!(parse("2-1").is_err() && parse("x").is_err() && parse("").is_err());
        let far = format!("{}", count() + 3);
        assert!(format!("{}", parse(&far).unwrap_err()).contains("is not on this machine"));
    }

    /// A thread pinned to core 0 still sees every core of the machine (an experiment with `pin`
    /// once refused its second node this way).
    #[test]
    fn a_pinned_thread_still_counts_the_machines_cores() {
        let all = count();
        let seen = std::thread::spawn(|| {
            let set = mask(&[0]);
            // SAFETY: as in pin_self; pid 0 is this (spawned) thread only.
            let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            assert_eq!(rc, 0);
            count()
        })
        .join()
        .unwrap();
        assert_eq!(seen, all);
    }

    /// `pin_self` pins every thread of the process, those started before it too. Run in a child
    /// process of this test binary (the test itself would otherwise pin every other test).
    #[test]
    fn pinning_reaches_every_thread_of_the_process() {
        if std::env::var_os("CAPLAB_PIN_CHILD").is_some() {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let before = std::thread::spawn(move || rx.recv().ok());
            pin_self(&[0]).unwrap();
            for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
                let allowed = status
                    .lines()
                    .find(|l| l.starts_with("Cpus_allowed_list:"))
                    .unwrap_or("");
                assert_eq!(
                    allowed.split_whitespace().nth(1),
                    Some("0"),
                    "{:?}: {allowed}",
                    task.path()
                );
            }
            tx.send(()).unwrap();
            before.join().unwrap();
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "cpus::tests::pinning_reaches_every_thread_of_the_process",
                "--test-threads",
                "1",
            ])
            .env("CAPLAB_PIN_CHILD", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
