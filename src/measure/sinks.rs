//! Where each interval goes as it closes, in this order: the server's telemetry is sampled for
//! the same second; the live metrics (`--metrics-listen`, `--metrics-push`) add it; during an
//! automatic warm-up, the settle rule judges it (and the engine asks whether warm-up may end);
//! the interval is appended to the interval log and the CSV (with that second's GC pause and
//! server CPU); a progress line is printed; the service-level judge takes it, printing each
//! window's verdict as it closes; and its throughput and latency are kept for the window's
//! steady-state verdict. A file that cannot be written (a full disk) is closed where it was,
//! whole, and noted as incomplete; measuring goes on.

use anyhow::Result;
use hdrhistogram::Histogram;
use std::time::{Duration, SystemTime};

use crate::console::group;
use crate::engine::intervals::Settled;
use crate::engine::{IntervalSink, Warmup};
use crate::metrics::csv::CsvLog;
use crate::metrics::hdrlog::HdrLog;
use crate::metrics::recorder::warmup_histogram;
use crate::metrics::{Interval, OpStats};
use crate::sla::Judge;
use crate::steady::{self, Check, Settle};
use crate::telemetry::jmx_watch::JmxWatch;
use crate::telemetry::{ClientSecond, Watch};

/// What the user sees while a step runs.
#[derive(Debug, Clone, Copy)]
pub struct Show {
    /// One progress line per second.
    pub progress: bool,
    /// Each SLA window's verdict as it closes.
    pub windows: bool,
}

/// A results file that stopped being written, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Incomplete {
    pub file: String,
    pub reason: String,
}

pub struct Outputs {
    /// None once it could not be written.
    pub hlog: Option<HdrLog>,
    pub csv: Option<CsvLog>,
    pub incomplete: Vec<Incomplete>,
    pub names: Vec<String>,
    /// (operation type, table) per operation type, for the CSV.
    pub csv_ops: Vec<(String, String)>,
    /// The wall-clock time of the schedule's anchor.
    pub started: SystemTime,
    /// Scratch space for the all-operations histogram of the interval log.
    pub all: Histogram<u64>,
    pub show: Show,
    pub windows_shown: usize,
    pub planned: Option<Duration>,
    pub warmup: Warmup,
    pub judge: Option<Judge>,
    pub watch: Option<Watch>,
    /// The automatic warm-up's rule (with `Warmup::Auto`), and its last judgement.
    pub settle: Option<Settle>,
    pub check: Option<Check>,
    /// The measured seconds, for the window's steady-state verdict (times from the anchor).
    pub seconds: Vec<steady::SecondFigures>,
    /// Scratch space for the merged histograms of a second.
    pub merged: Histogram<u64>,
    pub merged_warmup: Histogram<u64>,
    /// Told the measured window's start (wall clock) once it is known (a fault schedule waits
    /// for it).
    pub window_started: Option<tokio::sync::watch::Sender<Option<SystemTime>>>,
    /// The measured seconds' operations, failures and p99, for judging faults.
    pub tallies: Vec<crate::faults::Tally>,
    /// Loaders of one run agreeing on when measuring starts (`--loader i/n`, `--start-at`,
    /// automatic warm-up).
    pub agreement: Option<super::agree::Agreement>,
    /// The servers read over JMX once a second through the run (`--jmx`, or nodes caplab runs
    /// whose tables compact), whose seconds `watch` keeps.
    pub jmx: Option<JmxWatch>,
    /// The live metrics (`--metrics-listen`, `--metrics-push`), and when the measured window
    /// began (from the anchor), once it has.
    pub live: Option<crate::live::Feed>,
    pub measured_from: Option<Duration>,
    /// What the schedule asks, written beside what was done (the CSV, the live metrics).
    pub asked: crate::engine::Asked,
}

impl Outputs {
    /// The outputs of a step, with nothing written yet.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        hlog: HdrLog,
        csv: CsvLog,
        names: Vec<String>,
        csv_ops: Vec<(String, String)>,
        started: SystemTime,
        show: Show,
        planned: Option<Duration>,
        warmup: Warmup,
        asked: crate::engine::Asked,
        judge: Option<Judge>,
        watch: Option<Watch>,
    ) -> Outputs {
        Outputs {
            hlog: Some(hlog),
            csv: Some(csv),
            incomplete: Vec::new(),
            names,
            csv_ops,
            started,
            all: crate::metrics::recorder::new_histogram(),
            show,
            windows_shown: 0,
            planned,
            warmup,
            judge,
            watch,
            settle: matches!(warmup, Warmup::Auto { .. })
                .then(|| Settle::new(matches!(asked, crate::engine::Asked::FlatOut))),
            check: None,
            seconds: Vec::new(),
            merged: crate::metrics::recorder::new_histogram(),
            merged_warmup: warmup_histogram(),
            window_started: None,
            tallies: Vec::new(),
            agreement: None,
            jmx: None,
            live: None,
            measured_from: None,
            asked,
        }
    }
}

impl IntervalSink for Outputs {
    fn settled(&mut self) -> Settled {
        let mine = self.check.as_ref().is_some_and(|c| c.settled);
        match &mut self.agreement {
            None if mine => Settled::Now,
            None => Settled::Not,
            Some(a) => a.poll(mine).map_or(Settled::Not, Settled::At),
        }
    }

    fn interval(&mut self, iv: &Interval) -> Result<()> {
        let end = iv.start + iv.length;
        let jmx = self.jmx.as_mut().and_then(JmxWatch::tick);
        let second = self.watch.as_mut().and_then(|w| {
            w.tick(
                self.started + end,
                iv.length.as_secs_f64(),
                !iv.warmup,
                jmx.as_ref(),
                client_second(iv),
            )
        });
        let jit = second.map(|s| s.jit_cpu_cores);
        let server = second.map(|s| (s.gc_pause_ms, s.server_cpu_cores));
        let compaction =
            second.and_then(|s| Some((s.pending_compactions?, s.compaction_mb_per_s?, s.sstables_per_read)));
        let server_cores = server.map(|s| s.1);
        let whole = iv.length >= Duration::from_millis(500);
        if iv.warmup && whole && self.check.as_ref().is_none_or(|c| !c.settled) {
            self.judge_warmup(iv, jit, server_cores);
        }
        if !iv.warmup && whole {
            self.keep_second(iv);
        }
        if !iv.warmup
            && let Some(tx) = &self.window_started
            && tx.borrow().is_none()
        {
            let _ = tx.send(Some(self.started + iv.start));
        }
        if !iv.warmup && self.measured_from.is_none() {
            self.measured_from = Some(iv.start);
        }
        let asked = self.asked.over(iv.start, iv.length);
        if let Some(live) = &self.live {
            live.interval(&self.names, iv, self.measured_from, server, asked);
            if let Some((pending, mb_per_s, per_read)) = compaction {
                live.compaction(pending, mb_per_s * iv.length.as_secs_f64(), per_read);
            }
        }
        if iv.is_reported() {
            let at = humantime::format_rfc3339_seconds(self.started + iv.start);
            if let Some(h) = &mut self.hlog
                && let Err(e) = asked
                    .map_or(Ok(()), |r| h.write_target(iv.start, iv.length, r))
                    .and_then(|()| h.write_interval(&self.names, iv, &mut self.all))
            {
                self.give_up("latency.hlog", &e, &at);
                self.hlog = None;
            }
            if let Some(c) = &mut self.csv
                && let Err(e) = c.write(self.started, iv, &self.csv_ops, server, asked)
            {
                self.give_up("latency.csv", &e, &at);
                self.csv = None;
            }
        }
        if self.show.progress && iv.length >= Duration::from_millis(200) {
            let mut line = self.progress(iv);
            if let Some((gc_ms, cpu)) = server {
                line.push_str(&format!("  server gc {gc_ms:.0} ms cpu {cpu:.2}"));
            }
            eprintln!("{line}");
        }
        if let Some(judge) = &mut self.judge {
            for w in judge.feed(iv) {
                if self.show.windows {
                    eprintln!("  {}", w.line());
                }
                self.windows_shown += 1;
            }
        }
        Ok(())
    }
}

impl Outputs {
    fn give_up(&mut self, file: &str, e: &anyhow::Error, at: &impl std::fmt::Display) {
        let reason = format!("{e:#}; it holds every whole second before {at}");
        eprintln!("error: {file} cannot be written any more ({reason}); measuring goes on");
        self.incomplete.push(Incomplete {
            file: file.to_string(),
            reason,
        });
    }

    /// Feeds a warm-up second to the automatic warm-up's rule.
    fn judge_warmup(&mut self, iv: &Interval, jit_cores: Option<f64>, server_cores: Option<f64>) {
        let Some(settle) = &mut self.settle else {
            return;
        };
        let secs = iv.length.as_secs_f64();
        let done: u64 = iv.ops.iter().map(|o| o.warmup_ops + o.ok).sum();
        self.merged_warmup.reset();
        for o in &iv.ops {
            self.merged_warmup.add(&o.warmup_service).expect("same bounds");
        }
        let (p50, p99) = p50_p99_ms(&self.merged_warmup);
        self.check = Some(settle.push(steady::Sample {
            ops_per_s: done as f64 / secs,
            service_p50_ms: p50,
            service_p99_ms: p99,
            jit_cores,
            server_cores,
        }));
    }

    /// Keeps a measured second's throughput and response-time percentiles.
    fn keep_second(&mut self, iv: &Interval) {
        self.merged.reset();
        let mut ok = 0;
        for o in &iv.ops {
            self.merged.add(&o.response).expect("same bounds");
            ok += o.ok;
        }
        let (p50_ms, p99_ms) = p50_p99_ms(&self.merged);
        let mut tally = crate::faults::Tally {
            at_s: iv.start.as_secs_f64(),
            length_s: iv.length.as_secs_f64(),
            due: self.merged.len(),
            ok,
            p99_ms,
            ..Default::default()
        };
        for o in &iv.ops {
            for (t, e) in tally.errors.iter_mut().zip(o.errors) {
                *t += e;
            }
        }
        self.tallies.push(tally);
        self.seconds.push(steady::SecondFigures {
            at_s: iv.start.as_secs_f64(),
            ops_per_s: ok as f64 / iv.length.as_secs_f64(),
            p50_ms,
            p99_ms,
        });
    }

    fn progress(&self, iv: &Interval) -> String {
        let secs = iv.length.as_secs_f64();
        let end = iv.start + iv.length;
        if iv.warmup && !iv.has_measured() {
            let warm: u64 = iv.ops.iter().map(|o| o.warmup_ops).sum();
            let of = match self.warmup {
                Warmup::Time(d) => format!("/{:.0}s", d.as_secs_f64()),
                Warmup::Auto { max } => format!(" (auto, max {})", humantime::format_duration(max)),
                _ => String::new(),
            };
            let why = match &self.check {
                Some(c) if c.settled && self.agreement.is_some() => {
                    format!("  settled: {}; measuring once every loader has settled", c.text)
                }
                Some(c) if c.settled => format!("  settled: {}; measuring from the next second", c.text),
                Some(c) => format!("  warming up: {}", c.text),
                None => String::new(),
            };
            return format!(
                "warm-up {:>4.0}s{of}  {:>9} op/s{why}",
                end.as_secs_f64(),
                group(warm as f64 / secs)
            );
        }
        let mut all = OpStats::default();
        iv.ops.iter().for_each(|o| all.add(o));
        let h = &all.response;
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
        let since = self.seconds.first().map(|s| Duration::from_secs_f64(s.at_s));
        let elapsed = match (self.warmup, self.planned) {
            (Warmup::Auto { .. }, Some(p)) => format!(
                "{:>4.0}s/{:.0}s",
                end.saturating_sub(since.unwrap_or(iv.start)).as_secs_f64(),
                p.as_secs_f64()
            ),
            (Warmup::Time(w), Some(p)) => format!(
                "{:>4.0}s/{:.0}s",
                (end.saturating_sub(w)).as_secs_f64(),
                p.as_secs_f64()
            ),
            (_, Some(p)) => format!("{:>4.0}s/{:.0}s", end.as_secs_f64(), p.as_secs_f64()),
            _ => format!("{:>4.0}s", end.as_secs_f64()),
        };
        let mut line = format!(
            "{elapsed}  {:>9} op/s {:>10} row/s  p50 {:>7.2}  p99 {:>7.2}  p99.9 {:>7.2}  max {:>8.2} ms  errors {}",
            group(all.ok as f64 / secs),
            group(all.rows as f64 / secs),
            ms(0.5),
            ms(0.99),
            ms(0.999),
            h.max() as f64 / 1e6,
            all.error_count()
        );
        if all.late > 0 {
            // Operations start late only when every slot is taken (or the client is saturated):
            // slow answers mean the server is the cause, and more slots would only queue on it.
            let (lag, service) = (all.max_lag_ns as f64 / 1e6, all.service.max() as f64 / 1e6);
            let why = if service >= lag {
                format!("the server answered slowly (service time up to {service:.0} ms), every slot was in flight")
            } else {
                "raise --concurrency or lower --rate (or the client is saturated: --threads)".to_string()
            };
            line.push_str(&format!(
                "  BEHIND SCHEDULE: {} ops started >10 ms late (up to {lag:.0} ms): {why}",
                all.late
            ));
        }
        line
    }
}

/// A histogram's median and p99 in ms; None when it holds nothing.
fn p50_p99_ms(h: &Histogram<u64>) -> (Option<f64>, Option<f64>) {
    let ms = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e6);
    (ms(0.5), ms(0.99))
}
/// What the client did in interval `iv`: operations sent that ended in it (warm-up ones too),
/// and those a free worker sent late.
fn client_second(iv: &Interval) -> ClientSecond {
    ClientSecond {
        sent: iv.ops.iter().map(|o| o.service.len() + o.warmup_ops).sum(),
        late: iv.ops.iter().map(|o| o.client_late).sum(),
    }
}
