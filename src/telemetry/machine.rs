//! What else the machine did while a run went on (result.json `server.machine`): the CPU time of
//! the cores caplab's client and its local nodes may run on, second by second, less what caplab,
//! the helpers it started (a JMX watch's JVM) and the nodes used: other processes' CPU. Beside it,
//! the CPU the hypervisor stole from those cores. A run whose cores other processes took at
//! least `DISTURBED_CORES` of, or the hypervisor `DISTURBED_STEAL`, was disturbed: the history
//! leaves it out of a series' levels (`history::detect`), and the client audit tells a client
//! starved by other work from one whose own nodes took the cores (`measure::audit`).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use crate::procfs::{self, CpuTicks};

/// Other processes' CPU on the run's cores, in cores, from which a run is disturbed. On the
/// machines measured, runs alone had 0.00–0.05 (kernel threads, the shell); two busy loops beside
/// a node took 1.3–1.7 (bench/results/slow-causes.md, disturbed).
pub const DISTURBED_CORES: f64 = 0.25;

/// Steal, in cores, from which a run is disturbed: the hypervisor ran other machines' work on
/// the run's cores.
pub const DISTURBED_STEAL: f64 = 0.1;

/// The rule, as result.json states it.
pub const RULE: &str = "disturbed when other processes used at least 0.25 cores of the cores caplab and its nodes may run on, or the hypervisor stole at least 0.1 cores of them, over the measured window";

/// One interval of the machine, in cores.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MachineSecond {
    /// Every process's CPU on the run's cores.
    pub busy: f64,
    pub steal: f64,
    /// caplab's helpers (processes it started: a JMX watch's JVM).
    pub helpers: f64,
}

/// Samples /proc/stat for the run's cores at every interval.
pub struct MachineWatch {
    cores: Vec<usize>,
    shared: bool,
    last: Vec<CpuTicks>,
    helpers: HashMap<u32, u64>,
    tck: f64,
}

impl MachineWatch {
    /// The cores caplab (this process) and the nodes `node_pids` may run on, together.
    pub fn new(node_pids: &[u32]) -> MachineWatch {
        let all = || (0..crate::cpus::count()).collect::<Vec<usize>>();
        let allowed = |pid: u32| procfs::allowed_cpus(pid).and_then(|l| crate::cpus::parse(&l).ok());
        let client = allowed(std::process::id()).unwrap_or_else(all);
        let nodes: Vec<usize> = node_pids.iter().filter_map(|&p| allowed(p)).flatten().collect();
        let shared = nodes.iter().any(|c| client.contains(c));
        let mut cores = client;
        cores.extend(nodes);
        cores.sort_unstable();
        cores.dedup();
        let mut w = MachineWatch {
            cores,
            shared,
            last: procfs::cpu_ticks(),
            helpers: HashMap::new(),
            tck: procfs::ticks_per_second(),
        };
        w.helper_ticks(node_pids);
        w
    }

    /// What the run's cores did since the last call, `secs` long (`node_pids` are not helpers).
    pub fn tick(&mut self, secs: f64, node_pids: &[u32]) -> MachineSecond {
        let now = procfs::cpu_ticks();
        let (mut busy, mut steal) = (0u64, 0u64);
        for &c in &self.cores {
            let (Some(a), Some(b)) = (self.last.get(c), now.get(c)) else {
                continue;
            };
            busy += b.busy.saturating_sub(a.busy);
            steal += b.steal.saturating_sub(a.steal);
        }
        self.last = now;
        let helpers = self.helper_ticks(node_pids);
        let cores = |ticks: u64| ticks as f64 / self.tck / secs.max(1e-3);
        MachineSecond {
            busy: cores(busy),
            steal: cores(steal),
            helpers: cores(helpers),
        }
    }

    /// Ticks caplab's helpers used since the last call (a new one's whole life so far).
    fn helper_ticks(&mut self, node_pids: &[u32]) -> u64 {
        let mut used = 0;
        let mut seen = HashMap::new();
        for pid in procfs::children(std::process::id()) {
            if node_pids.contains(&pid) {
                continue;
            }
            if let Some(p) = procfs::sample(pid) {
                let before = self.helpers.get(&pid).copied().unwrap_or(0);
                used += p.cpu_ticks().saturating_sub(before);
                seen.insert(pid, p.cpu_ticks());
            }
        }
        self.helpers = seen;
        used
    }

    /// The cores watched, and whether the client may run on a node's.
    pub fn cores(&self) -> (&[usize], bool) {
        (&self.cores, self.shared)
    }
}

/// result.json `server.machine`: the run's cores over its measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFacts {
    /// The cores caplab and its local nodes may run on (`0-1`), and how many.
    pub cores: String,
    pub core_count: usize,
    /// Whether caplab's client may run on a core a local node may run on.
    pub shared: bool,
    /// Every process's CPU on those cores, in cores.
    pub busy_cores: f64,
    /// Of it, what neither caplab (with its helpers) nor its nodes used.
    pub other_cpu_cores: f64,
    /// What the hypervisor stole from those cores.
    pub steal_cores: f64,
    /// Why the run was disturbed (`RULE`); None when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
    pub rule: String,
}

impl MachineFacts {
    /// Over `measured` seconds: (length, busy, other, steal) each.
    pub fn of(cores: &[usize], shared: bool, measured: &[(f64, f64, f64, f64)]) -> Option<MachineFacts> {
        let span: f64 = measured.iter().map(|m| m.0).sum();
        if span <= 0.0 {
            return None;
        }
        let mean = |f: fn(&(f64, f64, f64, f64)) -> f64| measured.iter().map(|m| m.0 * f(m)).sum::<f64>() / span;
        let (busy, other, steal) = (mean(|m| m.1), mean(|m| m.2), mean(|m| m.3));
        Some(MachineFacts {
            cores: crate::cpus::describe(cores),
            core_count: cores.len(),
            shared,
            busy_cores: busy,
            other_cpu_cores: other,
            steal_cores: steal,
            disturbed: disturbed(other, steal),
            rule: RULE.to_string(),
        })
    }

    /// The summary line.
    pub fn render(&self) -> String {
        let state = match &self.disturbed {
            Some(why) => format!("DISTURBED ({why})"),
            None => "undisturbed".into(),
        };
        format!(
            "Machine                       : {:.2} of {} cores busy (cores {}{}), other processes {:.2}, stolen {:.2}: {state}",
            self.busy_cores,
            self.core_count,
            self.cores,
            if self.shared {
                ", client and nodes share them"
            } else {
                ""
            },
            self.other_cpu_cores,
            self.steal_cores
        )
    }
}

/// Why a run whose cores other processes used `other` of and the hypervisor stole `steal` of
/// (in cores) was disturbed; None when it was not.
pub fn disturbed(other: f64, steal: f64) -> Option<String> {
    if other >= DISTURBED_CORES {
        Some(format!(
            "other processes used {other:.2} cores of the run's cores, at least {DISTURBED_CORES}"
        ))
    } else if steal >= DISTURBED_STEAL {
        Some(format!(
            "the hypervisor stole {steal:.2} cores of the run's cores, at least {DISTURBED_STEAL}"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_disturbed_when_other_work_took_a_quarter_core_of_its_cores() {
        let facts = |m: &[(f64, f64, f64, f64)]| MachineFacts::of(&[0, 1], true, m).unwrap();
        let quiet = facts(&[(1.0, 1.2, 0.05, 0.0), (1.0, 1.3, 0.03, 0.01)]);
        assert_eq!((quiet.busy_cores, quiet.disturbed.as_deref()), (1.25, None));
        assert_eq!(quiet.cores, "0-1");
        // 0.2 for 1 s and 0.4 for 3 s: 0.35 over the window.
        let busy = facts(&[(1.0, 1.9, 0.2, 0.0), (3.0, 2.0, 0.4, 0.0)]);
        assert!((busy.other_cpu_cores - 0.35).abs() < 1e-12, "{busy:?}");
        assert!(busy.disturbed.as_deref().unwrap().contains("0.35 cores"), "{busy:?}");
        assert!(busy.render().contains("DISTURBED"), "{}", busy.render());
        let stolen = facts(&[(1.0, 1.0, 0.0, 0.15)]);
        assert!(stolen.disturbed.unwrap().contains("hypervisor"));
        assert!(MachineFacts::of(&[0], false, &[]).is_none(), "nothing measured");
    }

    #[test]
    fn a_busy_loop_on_the_runs_cores_is_seen_as_busy() {
        let mut w = MachineWatch::new(&[]);
        let (cores, shared) = w.cores();
        assert!(!cores.is_empty() && !shared, "no nodes: nothing shared");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let spin = std::thread::spawn(move || while !s.load(std::sync::atomic::Ordering::Relaxed) {});
        std::thread::sleep(std::time::Duration::from_millis(500));
        let m = w.tick(0.5, &[]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spin.join().unwrap();
        // The loop had a core for most of the half second whatever else ran: at least half of one.
        assert!(m.busy >= 0.5, "{m:?}");
    }
}
