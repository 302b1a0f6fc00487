//! A step's result as a type: what result.json holds, written while the step goes on
//! (status `running`) and again at its end, and read back from any results directory by
//! `RunResult::load` (histograms decoded), for comparisons and reports.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use crate::client::ClientOptions;
use crate::engine::EndReason;
use hdrhistogram::Histogram;

pub use super::environment::Environment;
use super::sinks::Incomplete;
use crate::metrics::{OpStats, hdrlog::Encoded, hdrlog::TagKind, recorder::new_histogram, summary::Summary};
use crate::sla::{Sla, SlaVerdict};
use crate::telemetry::ServerFacts;
use crate::workload::e1::E1Options;
use crate::workload::profile::Profile;
use crate::workload::spread::TablesMade;

/// The layout of result.json; raised when a field changes meaning or goes away.
pub const FORMAT: u32 = 2;
pub const RESULT_FILE: &str = "result.json";
/// The interval log (HdrHistogram's format) and the per-second CSV of a run.
pub const HDR_LOG: &str = "latency.hlog";
pub const CSV: &str = "latency.csv";
/// A capacity search's report.
pub const CAPACITY_FILE: &str = "capacity.json";

/// How a step ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Completed,
    Interrupted,
    Failed,
}

impl RunStatus {
    pub fn of(reason: &EndReason) -> RunStatus {
        match reason {
            EndReason::Completed => RunStatus::Completed,
            EndReason::Interrupted => RunStatus::Interrupted,
            EndReason::ClusterLost { .. } | EndReason::OutputFailed(_) => RunStatus::Failed,
        }
    }

    /// The process exit code for a step that ended so: 0 completed, 130 interrupted, 1 failed
    /// (or, read from a file, never finished).
    pub fn exit_code(self) -> u8 {
        match self {
            RunStatus::Completed => 0,
            RunStatus::Interrupted => 130,
            RunStatus::Running | RunStatus::Failed => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// How warm-up went: what was asked, when the measured window began, and for an automatic
/// warm-up whether it settled (and what its rule last measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmupRecord {
    /// `auto (max 5m)`, `30s`, `10000 ops` or `none`.
    pub asked: String,
    /// Seconds of warm-up before the measured window (None when nothing was measured).
    pub length_s: Option<f64>,
    /// An automatic warm-up: true it settled, false it reached its maximum (the window was
    /// measured anyway, not steady); None for other warm-ups.
    pub settled: Option<bool>,
    /// What the settle rule measured last (an automatic warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

impl WarmupRecord {
    /// The summary line.
    pub fn render(&self) -> String {
        let length = self.length_s.map_or("nothing measured".into(), |s| format!("{s:.0} s"));
        let what = match (self.settled, &self.check) {
            (Some(true), Some(c)) => format!("settled after {length} ({c})"),
            (Some(false), c) => format!(
                "NOT SETTLED within its maximum ({length}{}): the window was measured anyway and is not steady",
                c.as_ref().map(|c| format!("; last: {c}")).unwrap_or_default()
            ),
            _ => length,
        };
        format!("Warm-up                       : {} — {what}", self.asked)
    }
}

/// The engine's settings, as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineRecord {
    /// Operations per second; 0 is flat out. With a rate shape, its mean.
    pub rate: f64,
    /// The rate shape the schedule followed after the warm-up (`ramp:1k..40k/5m`, `trace
    /// FILE`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_shape: Option<String>,
    pub concurrency: usize,
    pub threads: u32,
    pub duration_s: Option<f64>,
    pub ops: Option<u64>,
    pub warmup: String,
    pub interval_s: f64,
    /// This loader's share, `i/n`.
    pub loader: String,
}

/// Which workload ran: E1's writer with its options, a profile, the bank, or a replay.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WorkloadRecord {
    E1(E1Options),
    Profile {
        /// Where the profile came from (a file, or `workloads/NAME.yaml`).
        profile: String,
        definition: Box<Profile>,
        /// What a cassandra-stress profile could not carry over exactly.
        not_mapped: Vec<String>,
    },
    /// The bank's transfers and audits (`bank-accord`, `bank-paxos`).
    Bank {
        bank: crate::workload::bank::BankOptions,
    },
    /// A captured trace replayed (`--replay`).
    Replay {
        replay: crate::workload::replay::ReplayOptions,
    },
}

/// Which step of a capacity search this was.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CapacityStep {
    pub rate: f64,
    pub repeat: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    pub client: ClientOptions,
    pub engine: EngineRecord,
    pub workload: WorkloadRecord,
    pub sla: Option<Sla>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_step: Option<CapacityStep>,
    /// The text values were written with (`workload::values::TEXT_VERSION`; 1 before it was kept).
    #[serde(default = "one")]
    pub values: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Files {
    pub hdr_log: String,
    pub csv: String,
    /// Every operation as a row (`--ops-parquet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<crate::metrics::ops::OpsFile>,
}

/// result.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub caplab_version: String,
    /// Absent from files written before formats were numbered (read as 1: the same layout).
    #[serde(default = "one")]
    pub format: u32,
    pub status: RunStatus,
    /// The workload's name.
    pub workload: String,
    pub started_at: String,
    pub command: Vec<String>,
    pub config: RunConfig,
    pub environment: Environment,
    /// The schema as the server had it when the step started (`DESCRIBE KEYSPACE`).
    pub schema: Vec<String>,
    /// The schema statements caplab ran to get there.
    #[serde(default)]
    pub schema_requested: Vec<String>,
    pub statements: Vec<String>,
    /// What making the workload's many tables took, and how many the cluster then held
    /// (`--tables`; absent with one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables_made: Option<TablesMade>,
    pub files: Files,
    /// Why a step that failed failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    /// Results files that could not be written whole (a full disk), and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<Incomplete>,
    /// The signal that interrupted the step (`SIGINT`, `SIGTERM`, `SIGHUP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sla: Option<SlaVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<WarmupRecord>,
    /// The measured window's steady-state verdict (`steady`: flat, and any automatic warm-up
    /// settled). Absent from results written before verdicts were made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::steady::SteadyState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerFacts>,
    /// The server profile of the measured window (`--server-profile`): its presence says the
    /// run was profiled.
    #[serde(rename = "profile", default, skip_serializing_if = "Option::is_none")]
    pub server_profile: Option<crate::server_profile::ProfileResult>,
    /// Requests the client retried on another node (`--retries`; warm-up included).
    #[serde(default)]
    pub retries: u64,
    /// Operations started, warm-up included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ops: Option<u64>,
    /// Each constant part of the rate shape the run followed, as it went (`phases`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shape_parts: Vec<super::phases::ShapePart>,
    /// Where latency turned along the shape's rates (`phases::knee`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<super::phases::Knee>,
    /// Per operation type over the measured window: `<op>.response` (every due operation),
    /// `<op>.ok` (successes), `<op>.service` (every operation sent) and `<op>.error`.
    #[serde(default)]
    pub histograms: BTreeMap<String, Encoded>,
    /// Each fault of the schedule (`--fault`): when it ran, when the client saw it, when it
    /// recovered, what failed during and after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::faults::FaultRecord>,
    /// The measured operations over their type's p99 and what made them slow (`causes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow: Option<super::causes::Slow>,
    /// Whether the client was the limit, and caplab's own figures (`audit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<super::audit::ClientAudit>,
    /// The server's traces of slow operations sent traced (`--trace-slow`, `traces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<super::traces::Traces>,
    /// Successful share of the measured window's due operations, with faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability: Option<f64>,
    /// Present when this result is several loaders' results merged (`caplab merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeRecord>,
    /// The user's labels (`--label KEY=VALUE`; an experiment's steps also `experiment` and
    /// `variant`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// What reading back the acknowledged writes found (`--validate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<crate::readback::Validation>,
    /// Recall@k of the workload's ANN queries, one per ANN operation (profiles with
    /// `ORDER BY … ANN OF ? LIMIT k`), measured on a sample after the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recall: Vec<crate::workload::ann::Recall>,
    /// The bank's invariant: what its audits found during the run and the closing check after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank: Option<crate::readback::BankCheck>,
}

/// Which loaders' results a merged result holds, and where they did not all report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergeRecord {
    pub loaders: Vec<LoaderRecord>,
    /// Runs of seconds in which not every loader reported: their operations are in the merged
    /// figures, but they are not the whole load.
    pub partial: Vec<PartialSpan>,
}

/// One loader of a merged result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoaderRecord {
    /// Its results directory, as given to `caplab merge`.
    pub dir: String,
    pub host: String,
    /// `i/n`.
    pub slice: String,
    pub status: RunStatus,
    pub engine: EngineRecord,
    pub started_at: String,
    /// The seconds it reported (the first interval's start to the last one's end), after the
    /// merged log's start, and how many intervals.
    pub from_s: f64,
    pub to_s: f64,
    pub intervals: usize,
    /// Successful operations in its measured window.
    pub ops: u64,
}

/// Seconds `[from_s, to_s)` after the merged log's start in which only some loaders reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialSpan {
    pub from_s: f64,
    pub to_s: f64,
    /// The slices that did not report.
    pub missing: Vec<String>,
}

/// Where results written before a version was kept read one.
fn one() -> u32 {
    1
}

impl RunResult {
    /// The exit code of the command that ran this step: the status's, and 1 for a completed
    /// step that missed its service level or lost acknowledged writes.
    pub fn exit_code(&self) -> u8 {
        match self.status {
            RunStatus::Interrupted => super::signal::exit_code(self.interrupted_by.as_deref()),
            RunStatus::Completed
                if self.sla.as_ref().is_some_and(|v| !v.pass)
                    || !self.incomplete.is_empty()
                    || self.validation.as_ref().is_some_and(|v| v.lost() > 0)
                    || self.bank.as_ref().is_some_and(|b| b.fails()) =>
            {
                1
            }
            s => s.exit_code(),
        }
    }

    /// Whether the measured window is known not to be steady (a verdict other than flat, or an
    /// automatic warm-up that never settled).
    pub fn unsteady(&self) -> bool {
        self.steady_state.as_ref().is_some_and(|s| !s.steady)
    }

    /// Every operation type's response times (`<op>.response`) over the measured window, merged.
    pub fn response_histogram(&self) -> Histogram<u64> {
        let mut all = new_histogram();
        for (tag, h) in &self.histograms {
            if TagKind::Response.is(tag) {
                all.add(&h.0).expect("histograms share their range");
            }
        }
        all
    }

    /// The measured window's seconds as the steady-state verdict reads them, from the interval
    /// log in `dir`: successes per second (`<op>.ok`), and p50 and p99 of every due operation
    /// (the untagged histogram). Seconds shorter than half a second (a partial last one) are
    /// left out; `at_s` counts from the window's first second.
    pub fn seconds(&self, dir: &Path) -> Result<Vec<crate::steady::SecondFigures>> {
        use std::collections::BTreeMap;
        // Per interval start (ms): length, successes, p50, p99.
        let mut at: BTreeMap<u64, (f64, f64, Option<f64>, Option<f64>)> = BTreeMap::new();
        crate::metrics::hdrlog::each(&dir.join(&self.files.hdr_log), |l| {
            let secs = l.length.as_secs_f64();
            if secs < 0.5 {
                return Ok(());
            }
            let s = at.entry(l.start.as_millis() as u64).or_insert((secs, 0.0, None, None));
            match l.tag.as_deref() {
                None if !l.histogram.is_empty() => {
                    s.2 = Some(l.histogram.value_at_quantile(0.5) as f64 / 1e6);
                    s.3 = Some(l.histogram.value_at_quantile(0.99) as f64 / 1e6);
                }
                Some(t) if TagKind::Ok.is(t) => s.1 += l.histogram.len() as f64,
                _ => {}
            }
            Ok(())
        })?;
        let first = at.keys().next().copied().unwrap_or(0);
        Ok(at
            .into_iter()
            .map(|(ms, (secs, ok, p50_ms, p99_ms))| crate::steady::SecondFigures {
                at_s: (ms - first) as f64 / 1000.0,
                ops_per_s: ok / secs,
                p50_ms,
                p99_ms,
            })
            .collect())
    }

    /// Successful operations per second over the measured window.
    pub fn achieved_rate(&self) -> f64 {
        self.summary.as_ref().map_or(0.0, |s| s.total.op_rate)
    }

    /// The longest time any of its faults took to recover; one not recovered counts as the
    /// rest of the window after its end (a lower bound). None without faults.
    pub fn longest_recovery(&self) -> Option<f64> {
        let window = self.summary.as_ref()?.operation_time_s;
        self.faults
            .iter()
            .filter_map(|f| f.recover_s.or(f.end_s.map(|e| (window - e).max(0.0))))
            .reduce(f64::max)
    }

    /// Writes the final self.json. On a full disk the result is still returned (and printed),
    /// and a smaller result.json (without histograms and the per-second server timeline) may still
    /// fit; what could not be written is said in `incomplete`.
    pub fn save_or_compact(&mut self, out: &Path) {
        if let Err(e) = self.save(out) {
            // A full disk: the result is still printed; a smaller result.json (without
            // histograms and the per-second server timeline) may still fit.
            self.incomplete.push(Incomplete {
                file: RESULT_FILE.into(),
                reason: format!("{e:#}"),
            });
            let mut compact = self.clone();
            compact.histograms.clear();
            if let Some(s) = &mut compact.server {
                s.timeline.clear();
            }
            if let Some(last) = compact.incomplete.last_mut() {
                last.reason
                    .push_str("; written without histograms and the server timeline");
            }
            if compact.save(out).is_err() {
                self.incomplete.last_mut().expect("just pushed").reason.push_str(
                    "; the result.json on disk is the one written at the start (status running): the summary printed \
                     is this run's result",
                );
            }
        }
    }

    /// Each operation type's response, success-only, service and error histograms, in the result.
    pub fn keep_histograms(&mut self, names: &[String], totals: Vec<OpStats>) {
        for (n, t) in names.iter().zip(totals) {
            for (kind, h) in TagKind::histograms(t) {
                self.histograms.insert(kind.tag(n), Encoded(h));
            }
        }
    }

    /// Writes result.json into `dir` (atomically).
    pub fn save(&self, dir: &Path) -> Result<()> {
        crate::files::write_json(&dir.join(RESULT_FILE), self)
    }

    /// Reads a results directory's result.json (or the file itself).
    pub fn load(path: &Path) -> Result<RunResult> {
        let file = if path.extension().is_some_and(|e| e == "json") {
            path.to_path_buf()
        } else {
            path.join(RESULT_FILE)
        };
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "cannot read {}: give a directory that 'caplab run' wrote results into",
                file.display()
            )
        })?;
        let r: RunResult = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a result caplab can read", file.display()))?;
        if r.format > FORMAT {
            bail!(
                "{} was written by a newer caplab (result format {}, this one reads up to {FORMAT}): use that caplab",
                file.display(),
                r.format
            );
        }
        Ok(r)
    }
}
