//! One measured step: drive the engine through warm-up and the measured window with the
//! outputs attached (interval log, CSV, progress, service-level judge, server telemetry),
//! handle interruption and failure, and leave a typed `RunResult` in result.json. The step
//! knows nothing of the command line: `run`, `capacity` (and later experiments) build a `Step`
//! from their own options.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::about::About;
use super::render;
use super::result::{CapacityStep, EngineRecord, Files, RESULT_FILE, RunConfig, RunResult, RunStatus, WarmupRecord};
use super::sinks::{Outputs, Show};
use super::start;
use super::target::Site;
use crate::cluster::nodetool::JmxTarget;
use crate::console::say;
use crate::engine::{self, EngineConfig, LoaderSlice, Meeting, RunEnd, Sliced, Span, StartAt, Stop, Warmup, Workload};
use crate::faults::{Injector, UndoFaults, impact};
use crate::metrics::{csv::CsvLog, hdrlog::HdrLog, summary::Summary};
use crate::server_profile::{Profiler, Recording, Slice};
use crate::sla::{Judge, Sla, SlaVerdict};
use crate::telemetry::gclog::epoch_ms;
use crate::telemetry::{ServerFacts, Watch, jmx, jmx_watch::JmxWatch, pools::PoolWatch};

use super::phases;
pub use super::result::{CSV, HDR_LOG};

/// One measured step's settings.
pub struct Step {
    pub engine: EngineConfig,
    /// Client threads (for the record; the runtime already has them).
    pub threads: u32,
    /// The results directory, created when the step starts.
    pub out: PathBuf,
    pub loader: LoaderSlice,
    pub show: Show,
    pub sla: Option<Sla>,
    /// Set when the step is part of a capacity search.
    pub capacity_step: Option<CapacityStep>,
    /// JMX endpoints to read GCInspector from, before and after the step.
    pub jmx: Vec<JmxTarget>,
    /// The command line that ran it, as results record it.
    pub command: Vec<String>,
    /// Profile the local nodes over the measured window.
    pub server_profile: Option<Arc<Profiler>>,
    /// When the schedule starts (`--start-at`); None: the next whole second.
    pub start_at: Option<StartAt>,
    /// Runs to start with, in one second once all are ready (a duet); before `start_at`.
    pub meet: Option<Arc<Meeting>>,
    /// Read every node's thread pools over CQL each second (`--server-facts`).
    pub pools: bool,
    /// Faults to apply during the measured window (`--fault`).
    pub faults: Option<Arc<Injector>>,
    /// The user's labels, kept in result.json.
    pub labels: std::collections::BTreeMap<String, String>,
    /// Read back the acknowledged writes after the step (`--validate`).
    pub validate: Option<crate::readback::ValidateOptions>,
    /// The live metrics (`--metrics-listen`, `--metrics-push`) this step adds to.
    pub live: Option<crate::live::Feed>,
    /// How a shaped run's knee is judged (`--knee-on`, `--knee-factor`).
    pub knee: phases::KneeRule,
}

impl Step {
    /// Runs `workload` against `site`; `stop` ends the step early (status `interrupted`).
    /// The schedule starts at the next whole wall-clock second (so the intervals of loaders
    /// started apart line up), and that instant is the one anchor of the schedule, the interval
    /// log, the CSV and the server's window. Errors are for results that could not be written
    /// at all; everything else, a failing cluster included, is a result with its status.
    pub async fn run<W: Workload>(
        &self,
        site: &Site,
        workload: Arc<W>,
        about: About,
        stop: Arc<Stop>,
    ) -> Result<RunResult> {
        let (ecfg, out) = (&self.engine, &self.out);
        refuse_untraced(ecfg, workload.as_ref(), &about.name)?;
        let compacts = about.compacts();
        std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create the results directory {}", out.display()))?;
        let workload = Arc::new(Sliced {
            inner: workload,
            slice: self.loader,
        });
        let names = workload.op_names();
        let mut result = self.new_result(site, &about);
        result.save(out)?;
        let marked = super::signal::running_result(&stop, out.join(RESULT_FILE));
        say(&render::running(&about.name, &self.loader, &site.describe(), ecfg, out));

        if !self.jmx.is_empty() {
            // Starts GCInspector's interval (it reports since its previous reading).
            let targets = self.jmx.clone();
            tokio::task::spawn_blocking(move || jmx::read(&targets)).await?;
        }
        let csv = CsvLog::create(File::create(out.join(CSV))?, crate::procfs::hostname())?;
        let target_rate = (ecfg.rate > 0.0).then_some(ecfg.rate);
        // A profile starts shortly before the measured window (at once when the window's start
        // is not known ahead) and is cut to the window when converted.
        let lead = Duration::from_millis(1500);
        let profile_after = match ecfg.warmup {
            Warmup::Time(d) if d > 2 * lead => Some(d - lead),
            _ => None,
        };
        let mut recording = None;
        if let Some(p) = &self.server_profile
            && profile_after.is_none()
        {
            let (p, out, nodes) = (p.clone(), out.clone(), site.local_nodes.clone());
            recording = Some(tokio::task::spawn_blocking(move || p.start(&out, &nodes)).await??);
        }
        let anchor = start::anchor(self.start_at, self.meet.as_deref()).await?;
        let started = anchor.wall;
        let (cancel_profile, delayed) = match (&self.server_profile, profile_after) {
            (Some(p), Some(after)) => {
                let (tx, task) = profile_later(p.clone(), out.clone(), site, started + after);
                (Some(tx), Some(task))
            }
            _ => (None, None),
        };
        let sink = Outputs::new(
            HdrLog::create(&out.join(HDR_LOG), started)?,
            csv,
            names.clone(),
            names.iter().cloned().zip(about.tables).collect(),
            started,
            self.show,
            ecfg.duration,
            ecfg.warmup,
            ecfg.asked(),
            self.sla.as_ref().map(|s| Judge::new(s, ecfg.asked())),
            Watch::new(&site.local_nodes),
        );
        let pools = match (&site.cql, self.pools) {
            (Some(session), true) => Some(PoolWatch::start(
                session.clone(),
                started + Duration::from_millis(500),
                ecfg.interval,
            )),
            _ => None,
        };
        let mut sink = sink;
        sink.agreement = start::agreement(
            self.loader,
            &self.engine.warmup,
            self.start_at,
            site,
            &about.name,
            started,
        )
        .await?;
        Self::watch_over_jmx(&mut sink, &self.jmx, site, compacts);
        let undo = self.start_faults(&mut sink, started);
        sink.live = self.live_begin(&names, target_rate);
        let retries_before = site.retries.load(std::sync::atomic::Ordering::Relaxed);
        let (end, mut sink) = engine::run(workload, ecfg, anchor, stop.clone(), sink).await;
        if let Some(live) = &self.live {
            live.end();
        }
        if let Some(undo) = undo {
            undo.now().await?;
        }
        if let Some(tx) = cancel_profile {
            let _ = tx.send(());
        }
        if let Some(task) = delayed {
            // None: the step ended before the profile was due (nothing measured).
            if let Some(started) = task.await? {
                recording = Some(started??);
            }
        }
        result.started_at = humantime::format_rfc3339_millis(started).to_string();
        let verdict = sink.judge.take().map(Judge::finish);
        let mut server = self.server_report(sink.watch.take(), pools, &end, started);
        if let Some(v) = &verdict
            && self.show.windows
        {
            // Windows closed by the end of the run rather than by a later interval.
            for w in v.windows.iter().skip(sink.windows_shown) {
                eprintln!("  {}", w.line());
            }
        }
        result.incomplete = std::mem::take(&mut sink.incomplete);
        result.warmup = Some(WarmupRecord {
            asked: ecfg.warmup.describe(),
            length_s: end.measured.map(|s| s.from.as_secs_f64()),
            settled: end.settled,
            check: sink.check.take().map(|c| c.text),
        });
        result.steady_state = steady_state(&end, &mut sink.seconds, ecfg.rate);
        let seconds = std::mem::take(&mut sink.seconds);
        self.fault_records(&mut result, &sink.tallies, &end, started, verdict.as_ref());
        drop(sink);
        if !self.jmx.is_empty() {
            let targets = self.jmx.clone();
            server.jmx = tokio::task::spawn_blocking(move || jmx::read(&targets)).await?;
        }
        // Converted once the server's figures are read (the converter runs on this machine).
        if let (Some(p), Some(rec)) = (&self.server_profile, recording) {
            let window = end.measured.map(|s| (started + s.from, started + s.to));
            let failed = failed_windows(verdict.as_ref(), window);
            let p = p.clone();
            result.server_profile = Some(tokio::task::spawn_blocking(move || p.finish(rec, window, &failed)).await?);
        }
        result.status = RunStatus::of(&end.reason);
        if result.status == RunStatus::Interrupted {
            result.interrupted_by = Some(stop.cause().unwrap_or("SIGINT").to_string());
        }
        result.end_reason = render::end_reason(&end.reason, ecfg, out);
        result.finished_at = Some(humantime::format_rfc3339_millis(SystemTime::now()).to_string());
        result.summary = Some(Summary::of(&names, &end.totals, end.measured_length(), end.abandoned));
        result.sla = verdict;
        (result.slow, result.client) =
            super::audit::of_run(&names, &end, &mut server, &result.faults, started, result.sla.as_mut());
        if let (Some(sample), Some(session)) = (&ecfg.trace, &site.cql) {
            let ev = super::causes::evidence(&end, &server, &result.faults, started);
            result.traces = Some(super::traces::read(session, &names, &end, sample, ev.as_ref()).await);
        }
        result.server = Some(server);
        result.started_ops = Some(end.started_ops);
        result.files.operations = end.ops_file.clone();
        (result.shape_parts, result.knee) = phases::of_run(ecfg, end.measured, &out.join(HDR_LOG), self.knee, &seconds);
        result.retries = site.retries.load(std::sync::atomic::Ordering::Relaxed) - retries_before;
        result.keep_histograms(&names, end.totals);
        marked.finish();
        result.save_or_compact(out);
        Ok(result)
    }

    /// Tells the live metrics a step begins; the feed the sink adds each interval to.
    fn live_begin(&self, names: &[String], target_rate: Option<f64>) -> Option<crate::live::Feed> {
        let live = self.live.clone()?;
        let faults = self.faults.as_ref().map_or_else(Vec::new, |f| {
            f.faults()
                .iter()
                .map(|s| crate::live::FaultWindow {
                    at: s.at,
                    length: s.length,
                })
                .collect()
        });
        live.begin(names, target_rate, faults);
        Some(live)
    }

    /// Starts the fault schedule, if any: each fault waits for the measured window's start (the
    /// sink announces it). The guard undoes every fault when the step ends, however it ends.
    fn start_faults(&self, sink: &mut Outputs, started: SystemTime) -> Option<UndoFaults> {
        let injector = self.faults.clone()?;
        let known = match self.engine.warmup {
            Warmup::None => Some(started),
            Warmup::Time(d) => Some(started + d),
            Warmup::Ops(_) | Warmup::Auto { .. } => None,
        };
        let (tx, rx) = tokio::sync::watch::channel(known);
        sink.window_started = Some(tx);
        injector.start(rx);
        Some(UndoFaults::of(injector))
    }

    /// Each fault's record, judged on the measured seconds, and the window's availability.
    fn fault_records(
        &self,
        result: &mut RunResult,
        tallies: &[impact::Tally],
        end: &RunEnd,
        started: SystemTime,
        verdict: Option<&SlaVerdict>,
    ) {
        let (Some(injector), Some(Span { from, to })) = (&self.faults, end.measured) else {
            return;
        };
        let (from, to) = (from.as_secs_f64(), to.as_secs_f64());
        let failed: Option<Vec<(f64, f64)>> = verdict.map(|v| {
            v.windows
                .iter()
                .filter(|w| w.judged && !w.pass)
                .map(|w| (from + w.start_s, from + w.start_s + w.length_s))
                .collect()
        });
        result.faults = impact::assess(&injector.happened(started), tallies, (from, to), failed.as_deref());
        result.availability = impact::availability(tallies);
    }

    /// Reads the servers over JMX once a second through the step: a cluster caplab does not
    /// watch here over its `--jmx` endpoints (its GC, CPU, heap, JIT, for the timeline and an
    /// automatic warm-up), the nodes it watches when the workload's tables compact (their
    /// compaction figures; the rest comes from their GC logs and /proc).
    fn watch_over_jmx(sink: &mut Outputs, jmx: &[JmxTarget], site: &Site, compacts: bool) {
        let targets: Vec<JmxTarget> = match &sink.watch {
            None => jmx.to_vec(),
            Some(_) if compacts => site.local_nodes.iter().map(JmxTarget::local).collect(),
            Some(_) => Vec::new(),
        };
        if targets.is_empty() {
            return;
        }
        match JmxWatch::start(&targets) {
            Ok(w) => {
                if sink.watch.is_none() {
                    sink.watch = Some(Watch::remote());
                    if let Some(settle) = &mut sink.settle {
                        settle.jit_from = " over JMX";
                    }
                }
                sink.jmx = Some(w);
            }
            Err(e) => crate::telemetry::jmx_watch::unwatched(&format!("{e:#}")),
        }
    }

    /// The server's facts over the measured window: the local nodes' (`watch`), else why none,
    /// and every node's thread pools over CQL (`pools`).
    fn server_report(
        &self,
        watch: Option<Watch>,
        pools: Option<PoolWatch>,
        end: &RunEnd,
        started: SystemTime,
    ) -> ServerFacts {
        let mut server = match (watch, end.measured) {
            (Some(w), Some(s)) => w.report(started + s.from, started + s.to),
            (Some(_), None) => ServerFacts::not_collected("nothing was measured"),
            (None, _) => ServerFacts::not_collected(render::not_local(self.jmx.is_empty())),
        };
        if let Some(p) = pools {
            // A reading at most a second after the window's end still describes its last second.
            let (from, to) = end.measured.map_or((0, 0), |s| {
                (epoch_ms(started + s.from), epoch_ms(started + s.to) + 1_000)
            });
            server.pools = Some(p.finish(from, to));
        }
        server
    }

    /// The result of a step about to run: its configuration and the workload's, nothing
    /// measured (written first, so a step that never ends still says what it was).
    fn new_result(&self, site: &Site, about: &About) -> RunResult {
        let ecfg = &self.engine;
        let started = SystemTime::now();
        RunResult {
            caplab_version: env!("CARGO_PKG_VERSION").to_string(),
            format: super::result::FORMAT,
            status: RunStatus::Running,
            workload: about.name.clone(),
            started_at: humantime::format_rfc3339_millis(started).to_string(),
            command: self.command.clone(),
            config: RunConfig {
                client: site.client.clone(),
                engine: EngineRecord {
                    rate: ecfg.rate,
                    rate_shape: ecfg.shape.as_ref().map(|s| s.text.clone()),
                    concurrency: ecfg.concurrency,
                    threads: self.threads,
                    duration_s: ecfg.duration.map(|d| d.as_secs_f64()),
                    ops: ecfg.ops,
                    warmup: ecfg.warmup.describe(),
                    interval_s: ecfg.interval.as_secs_f64(),
                    loader: self.loader.to_string(),
                },
                workload: about.record.clone(),
                sla: self.sla.clone(),
                capacity_step: self.capacity_step,
                values: crate::workload::values::TEXT_VERSION,
            },
            environment: site.environment(),
            schema: about.schema.clone(),
            schema_requested: about.schema_requested.clone(),
            statements: about.statements.clone(),
            tables_made: about.tables_made.clone(),
            files: Files {
                hdr_log: HDR_LOG.into(),
                csv: CSV.into(),
                operations: None,
            },
            end_reason: None,
            interrupted_by: None,
            incomplete: Vec::new(),
            retries: 0,
            shape_parts: Vec::new(),
            knee: None,
            finished_at: None,
            summary: None,
            sla: None,
            warmup: None,
            steady_state: None,
            server: None,
            server_profile: None,
            started_ops: None,
            histograms: BTreeMap::new(),
            slow: None,
            client: None,
            traces: None,
            faults: Vec::new(),
            availability: None,
            merged: None,
            labels: self.labels.clone(),
            validation: None,
            recall: Vec::new(),
            bank: None,
        }
    }
}

/// A run that asks for traces of a workload that cannot send its operations traced.
/// A profile due to start later: None if the step ended first.
type Later = tokio::task::JoinHandle<Option<std::result::Result<Result<Recording>, tokio::task::JoinError>>>;

/// Starts the profile of the local nodes at `at` (shortly before the measured window), unless
/// the sender is used or dropped first.
fn profile_later(
    p: Arc<Profiler>,
    out: PathBuf,
    site: &Site,
    at: SystemTime,
) -> (tokio::sync::oneshot::Sender<()>, Later) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let nodes = site.local_nodes.clone();
    let wait = at.duration_since(SystemTime::now()).unwrap_or_default();
    let task = tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {
                Some(tokio::task::spawn_blocking(move || p.start(&out, &nodes)).await)
            }
            _ = rx => None,
        }
    });
    (tx, task)
}

fn refuse_untraced<W: Workload>(ecfg: &EngineConfig, workload: &W, name: &str) -> Result<()> {
    if ecfg.trace.is_some() && !workload.traces() {
        anyhow::bail!("--trace-slow: the {name} workload {}", super::traces::UNTRACED);
    }
    Ok(())
}

/// The measured window's steady-state verdict, from its seconds (given from the run's start;
/// None when nothing was measured). A warm-up that reached its maximum leaves it not steady.
fn steady_state(
    end: &RunEnd,
    seconds: &mut [crate::steady::SecondFigures],
    rate: f64,
) -> Option<crate::steady::SteadyState> {
    let from = end.measured?.from.as_secs_f64();
    for s in seconds.iter_mut() {
        s.at_s -= from;
    }
    let mut verdict = crate::steady::judge(seconds, crate::steady::Load::of(rate));
    if end.settled == Some(false) {
        verdict.steady = false;
        verdict
            .summary
            .push_str("; warm-up did not settle within its maximum (--warmup-max)");
    }
    Some(verdict)
}

/// The measured window's slices that failed the service level, for flame graphs of their own.
fn failed_windows(verdict: Option<&SlaVerdict>, window: Option<(SystemTime, SystemTime)>) -> Vec<Slice> {
    match (verdict, window) {
        (Some(v), Some((from, _))) => v
            .windows
            .iter()
            .filter(|w| w.judged && !w.pass)
            .map(|w| Slice {
                label: format!("failed-window-{}", w.index),
                from: from + Duration::from_secs_f64(w.start_s),
                to: from + Duration::from_secs_f64(w.start_s + w.length_s),
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    //! The steps here run on tokio's paused clock (`start_paused`): the engine's schedule, the
    //! workload's stalls and the per-second outputs move in virtual time, so what is asserted of
    //! counts and durations holds however busy the machine is.
    use super::*;
    use crate::client::ClientOptions;
    use crate::engine::testing::Stalling;
    use crate::measure::Load;
    use crate::measure::result::WorkloadRecord;
    use crate::workload::e1::{E1Options, E1Workload};
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    fn site() -> Site {
        Site {
            client: ClientOptions {
                hosts: vec!["test".into()],
                dc: None,
                consistency: scylla::statement::Consistency::LocalOne,
                connections_per_host: 1,
                compression: false,
                user: None,
                password: None,
                request_timeout: Duration::from_secs(12),
                connect_timeout: Duration::from_secs(3),
                tls: false,
                tls_ca: None,
                tls_insecure: false,
                retries: 0,
                via: Vec::new(),
            },
            local_nodes: Vec::new(),
            release: None,
            retries: Default::default(),
            cql: None,
        }
    }

    fn about() -> About {
        About {
            name: "op".into(),
            record: WorkloadRecord::E1(E1Options {
                kind: E1Workload::Insert,
                keyspace: "caplab".into(),
                partitions: 10,
                value_columns: 1,
                value_size: 1,
                batch_size: 1,
                replication_factor: 1,
                durable_writes: false,
                compaction: false,
                strategy: None,
                tables: 1,
                table_select: Default::default(),
            }),
            schema: vec!["CREATE TABLE t (k int PRIMARY KEY)".into()],
            schema_requested: vec!["CREATE TABLE t (k int PRIMARY KEY)".into()],
            statements: vec!["INSERT INTO t (k) VALUES (?)".into()],
            tables: vec!["t".into()],
            tables_made: None,
        }
    }

    fn step(name: &str, rate: f64, secs: u64, sla: Option<&str>) -> Step {
        let out = std::env::temp_dir().join(format!("caplab-step-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let load = Load {
            concurrency: 16,
            threads: 1,
            give_up_after: Duration::from_secs(2),
            request_timeout: Duration::from_secs(1),
            drain: Duration::from_secs(10),
        };
        Step {
            engine: load.engine(rate, Some(Duration::from_secs(secs)), None, Warmup::None),
            threads: 1,
            out,
            loader: LoaderSlice::default(),
            show: Show {
                progress: false,
                windows: false,
            },
            sla: sla.map(|s| Sla::parse(s, 0.97, 0.001).unwrap()),
            capacity_step: None,
            jmx: Vec::new(),
            command: vec!["caplab".into(), "run".into()],
            server_profile: None,
            start_at: None,
            meet: None,
            pools: false,
            faults: None,
            labels: Default::default(),
            validate: None,
            live: None,
            knee: Default::default(),
        }
    }

    /// (tag, count) of every histogram in the interval log, decoded ("" for the untagged one).
    fn hlog(dir: &std::path::Path) -> Vec<(String, u64)> {
        let bytes = std::fs::read(dir.join(HDR_LOG)).unwrap();
        IntervalLogIterator::new(&bytes)
            .filter_map(|e| match e.expect("a valid interval log line") {
                LogEntry::Interval(h) => Some((
                    h.tag().map(|t| t.as_str().to_string()).unwrap_or_default(),
                    crate::metrics::hdrlog::decode(h.encoded_histogram()).unwrap().len(),
                )),
                _ => None,
            })
            .collect()
    }

    /// The CSV's rows (without the header), split.
    fn csv(dir: &std::path::Path) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(dir.join(CSV)).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(crate::metrics::csv::HEADER.trim_end()));
        lines.map(|l| l.split(',').map(String::from).collect()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_completed_step_leaves_files_that_agree_and_read_back() {
        let s = step("completed", 500.0, 3, Some("p99<2s/1s"));
        let w = Arc::new(Stalling::steady(Duration::from_millis(1)));
        let r = s.run(&site(), w, about(), Stop::new()).await.unwrap();
        assert_eq!((r.status, r.exit_code()), (RunStatus::Completed, 0));
        let total = r.summary.as_ref().unwrap().total.clone();
        assert!((1_480..=1_500).contains(&total.ops), "3 s at 500/s: {}", total.ops);

        // result.json is the same result, histograms included.
        let back = RunResult::load(&s.out).unwrap();
        assert_eq!(back.status, RunStatus::Completed);
        assert_eq!(back.summary.unwrap().total.ops, total.ops);
        assert_eq!(back.histograms["op.response"].0.len(), total.ops);
        assert_eq!(back.histograms["op.service"].0.len(), total.ops);
        assert!(back.sla.unwrap().pass);
        assert_eq!(back.config.engine.rate, 500.0);
        assert_eq!(back.command, vec!["caplab", "run"]);

        // The interval log and the CSV hold the same operations, second by second.
        let log = hlog(&s.out);
        let logged = |tag: &str| -> u64 { log.iter().filter(|(t, _)| t == tag).map(|(_, n)| n).sum() };
        assert_eq!(logged("op.response"), total.ops);
        assert_eq!(logged("op.ok"), total.ops);
        assert_eq!(logged(""), total.ops, "the untagged histograms hold every operation");
        let rows = csv(&s.out);
        assert!((3..=4).contains(&rows.len()), "one row a second: {rows:?}");
        assert!(rows.iter().all(|r| r[2] == "t" && r[3] == "op" && r[10].is_empty()));
        let csv_total: u64 = rows.iter().map(|r| r[4].parse::<u64>().unwrap()).sum();
        assert_eq!(csv_total, total.ops);
        std::fs::remove_dir_all(&s.out).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_warm_up_that_never_settles_is_measured_and_marked_not_steady() {
        // An automatic warm-up of at most 2 s cannot settle (the rule judges 30 s at a time).
        let mut s = step("unsettled", 500.0, 2, None);
        s.engine.warmup = Warmup::Auto {
            max: Duration::from_secs(2),
        };
        let w = Arc::new(Stalling::steady(Duration::from_millis(1)));
        let r = s.run(&site(), w, about(), Stop::new()).await.unwrap();
        assert_eq!(
            (r.status, r.exit_code()),
            (RunStatus::Completed, 0),
            "it exits as any run"
        );
        let back = RunResult::load(&s.out).unwrap();
        let warm = back.warmup.as_ref().unwrap();
        assert_eq!(
            (warm.asked.as_str(), warm.settled, warm.length_s),
            ("auto (max 2s)", Some(false), Some(2.0))
        );
        assert!(back.unsteady(), "{:?}", back.steady_state);
        let text = back.render();
        assert!(text.contains("NOT SETTLED within its maximum"), "{text}");
        assert!(
            text.contains("did not settle within its maximum (--warmup-max)"),
            "{text}"
        );
        // Every operation due in the 2 s is accounted for (on a starved machine some are given up
        // unsent, so the due count, not the successes, is what the schedule fixes).
        assert_eq!(back.summary.unwrap().total.due, 1000, "2 s measured at 500/s after it");
        std::fs::remove_dir_all(&s.out).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_missed_service_level_exits_1_with_the_step_completed() {
        let s = step("sla-missed", 200.0, 2, Some("p50<100us/1s"));
        let w = Arc::new(Stalling::steady(Duration::from_millis(2)));
        let r = s.run(&site(), w, about(), Stop::new()).await.unwrap();
        assert_eq!((r.status, r.exit_code()), (RunStatus::Completed, 1));
        assert!(!RunResult::load(&s.out).unwrap().sla.unwrap().pass);
        std::fs::remove_dir_all(&s.out).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_step_says_running_then_interrupted_and_keeps_what_it_measured() {
        let s = step("interrupted", 500.0, 60, None);
        let stop = Stop::new();
        let (out, flag) = (s.out.clone(), stop.clone());
        let watcher = tokio::spawn(async move {
            // Once the first second is closed (a CSV row), the step is measuring: its
            // result.json must say running; then it is stopped.
            let csv = out.join(CSV);
            while std::fs::read_to_string(&csv).map_or(0, |t| t.lines().count()) < 2 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let during = RunResult::load(&out).map(|r| r.status);
            flag.request();
            during
        });
        let began = tokio::time::Instant::now();
        let w = Arc::new(Stalling::steady(Duration::from_millis(1)));
        let r = s.run(&site(), w, about(), stop).await.unwrap();
        assert_eq!(
            watcher.await.unwrap().unwrap(),
            RunStatus::Running,
            "written as the step goes"
        );
        // The schedule is 60 s: a step that ends in half of it was stopped (it takes ~3 s).
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "not stopped: {:?}",
            began.elapsed()
        );
        assert_eq!((r.status, r.exit_code()), (RunStatus::Interrupted, 130));
        let summary = r.summary.unwrap();
        let (total, secs) = (summary.total, summary.operation_time_s);
        let ops = total.ops;
        assert!(secs >= 1.0, "stopped after the first whole second: {secs} s");
        // Every operation due until the stop is kept: 500 a second of the measured time.
        let due = 500.0 * secs;
        assert!(
            (ops as f64 - due).abs() <= 5.0_f64.max(0.02 * due),
            "{ops} operations where {due:.0} were due"
        );
        assert_eq!(total.error_total, 0, "nothing due was left unsent at a clean stop");
        let logged: u64 = hlog(&s.out)
            .iter()
            .filter(|(t, _)| t == "op.response")
            .map(|(_, n)| n)
            .sum();
        assert_eq!(logged, ops, "the interval log holds every measured operation");
        assert_eq!(RunResult::load(&s.out).unwrap().status, RunStatus::Interrupted);
        std::fs::remove_dir_all(&s.out).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_cluster_that_stops_answering_fails_the_step_with_a_reason() {
        let s = step("failed", 200.0, 60, None);
        let w = Arc::new(Stalling {
            fail: true,
            ..Stalling::steady(Duration::from_millis(1))
        });
        let r = s.run(&site(), w, about(), Stop::new()).await.unwrap();
        assert_eq!((r.status, r.exit_code()), (RunStatus::Failed, 1));
        let back = RunResult::load(&s.out).unwrap();
        let why = back.end_reason.unwrap();
        assert!(
            why.contains("the cluster stopped answering") && why.contains("connection"),
            "{why}"
        );
        let errors = back.summary.unwrap().total.error_total;
        assert!(errors > 100, "{errors}");
        assert_eq!(
            back.histograms["op.error"].0.len(),
            errors,
            "each failure's latency is kept"
        );
        std::fs::remove_dir_all(&s.out).unwrap();
    }

    #[test]
    fn a_directory_without_results_is_named_in_the_error() {
        let err = RunResult::load(std::path::Path::new("/no/such/dir"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/no/such/dir/result.json") && err.contains("caplab run"),
            "{err}"
        );
    }
}
