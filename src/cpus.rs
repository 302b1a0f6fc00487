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

/// The cores this machine has online.
pub fn count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(1)
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

/// Pins the calling process (and every thread it starts afterwards) to `cores`.
pub fn pin_self(cores: &[usize]) -> Result<()> {
    let set = mask(cores);
    // SAFETY: sched_setaffinity reads `set`, a valid cpu_set_t of the size given.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        bail!(
            "cannot pin caplab to cores {}: {}",
            describe(cores),
            std::io::Error::last_os_error()
        );
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
}
