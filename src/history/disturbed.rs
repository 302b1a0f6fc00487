//! Runs whose machine was busy with other work: each record keeps what other processes used of
//! the run's cores and what the hypervisor stole (result.json `server.machine`). A run that
//! reached `telemetry::machine`'s thresholds was disturbed: it is no point of its series' levels
//! (`detect::Points`), so a figure that moved with the machine's other load is never called a
//! change of the configuration; and a series whose latest run was disturbed cannot be judged
//! tonight, which the check says with a status of its own (`gate`).

use serde::Serialize;

use crate::measure::RunResult;
use crate::telemetry::machine;

/// What else the run's machine did (cores).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct MachineLoad {
    pub other_cpu_cores: f64,
    pub steal_cores: f64,
}

impl MachineLoad {
    /// A run's, where it was read (runs from before it was, and remote clusters' without local
    /// telemetry, have none).
    pub fn of(r: &RunResult) -> Option<MachineLoad> {
        let m = r.server.as_ref()?.machine.as_ref()?;
        Some(MachineLoad {
            other_cpu_cores: m.other_cpu_cores,
            steal_cores: m.steal_cores,
        })
    }

    /// Why the run was disturbed (`telemetry::machine::RULE`), or None.
    pub fn disturbed(&self) -> Option<String> {
        machine::disturbed(self.other_cpu_cores, self.steal_cores)
    }
}

/// A series whose latest run was disturbed: the check cannot judge it.
#[derive(Debug, Clone, Serialize)]
pub struct Undecided {
    pub series: String,
    pub series_name: String,
    pub run_id: i64,
    pub started_at: String,
    pub dir: String,
    pub load: MachineLoad,
    pub why: String,
    /// The series' runs disturbed in all (left out of its levels).
    pub disturbed_runs: usize,
}

impl Undecided {
    pub fn render(&self) -> String {
        format!(
            "DISTURBED {}  {}\n  its latest run ({}) ran while {}: not judged tonight (its levels leave out {} disturbed run{}); \
             rerun it on a quiet machine, or judge it anyway with --include-disturbed\n  the run: {}",
            &self.series[..8],
            self.series_name,
            self.started_at,
            self.why,
            self.disturbed_runs,
            if self.disturbed_runs == 1 { "" } else { "s" },
            self.dir
        )
    }
}
