//! Live metrics: what a run measures, while it runs, for the tools operators already watch.
//! Each closed interval (once a second, on the engine's interval thread) is added to cumulative
//! counters and histograms (state.rs); an endpoint serves them in Prometheus's text exposition
//! (serve.rs, `--metrics-listen`) and a pusher sends them by Prometheus remote write (push.rs,
//! `--metrics-push`), once more when the command ends. Nothing here runs on the runtime that
//! sends operations: the interval thread takes the lock once a second, a scrape or a push only
//! long enough to copy the figures out.

pub mod buckets;
pub mod native;
pub mod push;
pub mod serve;
pub mod state;
pub mod wire;

use anyhow::Result;
use clap::Args;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use state::FaultWindow;
use state::State;

use crate::metrics::Interval;

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Live metrics")]
pub struct MetricsOptions {
    /// Serve live metrics for Prometheus at http://ADDR:PORT/metrics while the command runs
    /// (e.g. 0.0.0.0:9500): operations by type and outcome, response and service time
    /// histograms (buckets that add up across loaders), in flight, late and never sent, the
    /// target rate, the phase, faults, and the GC pauses and CPU of nodes caplab runs. Every
    /// series carries loader (from 0), workload, run (the results directory's name, or
    /// --label run=…) and the other --label labels.
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_listen)]
    pub metrics_listen: Option<SocketAddr>,
    /// Push the same metrics by Prometheus remote write to URL (e.g.
    /// http://prometheus:9090/api/v1/write; Prometheus needs --web.enable-remote-write-receiver),
    /// every --metrics-push-interval and once more at the end.
    #[arg(long, value_name = "URL", value_parser = push::parse_url)]
    pub metrics_push: Option<String>,
    /// How often --metrics-push sends (the end of the command sends once more).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    pub metrics_push_interval: Duration,
    /// With --metrics-push, also push the response and service times as native histograms
    /// (schema 3: buckets 9 % wide, against the classic ones' 21 %), named without the classic
    /// series' suffixes. The receiver must take them (Prometheus: --enable-feature=native-histograms;
    /// without it the whole push is refused).
    #[arg(long, requires = "metrics_push")]
    pub metrics_native_histograms: bool,
    /// When the command is done and something has scraped --metrics-listen, keep serving until
    /// it scrapes once more (at most this long), so that the last seconds reach Prometheus.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = humantime::parse_duration)]
    pub metrics_linger: Duration,
}

impl MetricsOptions {
    /// Refuses an address that cannot be listened on (a port in use) before anything starts.
    pub fn check(&self) -> Result<()> {
        if let Some(addr) = self.metrics_listen {
            serve::bind(addr)?;
        }
        Ok(())
    }
}

fn parse_listen(text: &str) -> std::result::Result<SocketAddr, String> {
    let fix = format!("'{text}' is not ADDR:PORT, e.g. --metrics-listen 0.0.0.0:9500");
    text.to_socket_addrs().map_err(|_| fix.clone())?.next().ok_or(fix)
}

/// Who is measuring: the labels on every series.
pub struct Identity<'a> {
    /// The loader's index (0 for a single loader).
    pub loader: u64,
    pub workload: &'a str,
    /// The results directory's name.
    pub run: &'a str,
    /// The user's labels (`--label`).
    pub labels: &'a [(String, String)],
}

/// What a measuring command serves and pushes, for as long as it lives; dropping it pushes one
/// last time and stops the endpoint.
pub struct Live {
    state: Arc<Mutex<State>>,
    server: Option<serve::Server>,
    pusher: Option<push::Pusher>,
    linger: Duration,
}

impl Live {
    /// Starts what `opts` asks for; None when it asks for nothing.
    pub fn start(opts: &MetricsOptions, who: &Identity) -> Result<Option<Live>> {
        if opts.metrics_listen.is_none() && opts.metrics_push.is_none() {
            return Ok(None);
        }
        let state = Arc::new(Mutex::new(State::new(labels(who))));
        let server = match opts.metrics_listen {
            Some(addr) => Some(serve::Server::start(addr, state.clone())?),
            None => None,
        };
        if let Some(s) = &server {
            crate::console::say(&format!("Live metrics at http://{}/metrics", s.addr));
        }
        let pusher = opts.metrics_push.clone().map(|url| {
            push::Pusher::start(
                url,
                opts.metrics_push_interval,
                opts.metrics_native_histograms,
                state.clone(),
            )
        });
        Ok(Some(Live {
            state,
            server,
            pusher,
            linger: opts.metrics_linger,
        }))
    }

    /// What a step feeds.
    pub fn feed(&self) -> Feed {
        Feed(self.state.clone())
    }

    /// Pushes the last figures, waits for one more scrape (`--metrics-linger`), and stops.
    pub fn finish(mut self) {
        if let Some(p) = &mut self.pusher {
            p.finish();
        }
        if let Some(s) = &self.server
            && !self.linger.is_zero()
            && s.scrapes.load(std::sync::atomic::Ordering::Relaxed) > 0
        {
            let linger = humantime::format_duration(self.linger);
            crate::console::say(&format!(
                "Serving the last figures until the next scrape (at most {linger})"
            ));
            s.last_scrape(self.linger);
        }
    }
}

/// A step's side of the live metrics.
#[derive(Clone)]
pub struct Feed(Arc<Mutex<State>>);

impl Feed {
    fn with(&self, f: impl FnOnce(&mut State)) {
        // A panic elsewhere while holding the lock leaves figures worth serving still.
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s);
    }

    /// A step begins: its operation types, its rate (None: flat out), its faults.
    pub fn begin(&self, names: &[String], target_rate: Option<f64>, faults: Vec<FaultWindow>) {
        self.with(|s| s.begin(names, target_rate, faults));
    }

    /// A closed interval (see `State::add`).
    pub fn interval(
        &self,
        names: &[String],
        iv: &Interval,
        window_start: Option<Duration>,
        server: Option<(f64, f64)>,
        asked: Option<f64>,
    ) {
        self.with(|s| {
            // Along a shape the target moves: each interval's is the one shown.
            if asked.is_some() {
                s.target_rate = asked;
            }
            s.add(names, iv, window_start, server)
        });
    }

    /// A second's compaction figures (see `State::compaction`).
    pub fn compaction(&self, pending: f64, compacted_mb: f64, sstables_per_read: Option<f64>) {
        self.with(|s| s.compaction(pending, compacted_mb, sstables_per_read));
    }

    pub fn end(&self) {
        self.with(State::end);
    }
}

/// Label names as Prometheus allows them ([a-zA-Z_][a-zA-Z0-9_]*): other characters become
/// `_`; a user's label that would clash with caplab's own, or start with `__`, is prefixed
/// `label_`, except `run`, which names the run instead of the results directory (loaders of
/// one run write to directories of their own: --label run=$RUN names them all).
fn labels(who: &Identity) -> Vec<(String, String)> {
    const OWN: [&str; 6] = ["loader", "workload", "op", "outcome", "phase", "le"];
    let mut out = vec![
        ("loader".to_string(), who.loader.to_string()),
        ("workload".to_string(), who.workload.to_string()),
        ("run".to_string(), who.run.to_string()),
    ];
    for (k, v) in who.labels {
        let mut name: String = k
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if name.starts_with(|c: char| c.is_ascii_digit()) || name.starts_with("__") || OWN.contains(&name.as_str()) {
            name = format!("label_{name}");
        }
        out.retain(|(n, _)| *n != name);
        out.push((name, v.clone()));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_labels_become_valid_names_and_only_run_replaces_caplabs_own() {
        let user = vec![
            ("build.kind".to_string(), "nightly".to_string()),
            ("run".to_string(), "mine".to_string()),
            ("1st".to_string(), "x".to_string()),
            ("workload".to_string(), "not caplab's".to_string()),
        ];
        let who = Identity {
            loader: 2,
            workload: "e1",
            run: "20261126-e1",
            labels: &user,
        };
        let l = labels(&who);
        let names: Vec<&str> = l.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["build_kind", "label_1st", "label_workload", "loader", "run", "workload"]
        );
        assert!(
            l.contains(&("run".into(), "mine".into())),
            "the user's run names the run"
        );
        assert!(l.contains(&("workload".into(), "e1".into())));
        assert!(l.contains(&("loader".into(), "2".into())));
    }

    #[test]
    fn listen_addresses_resolve_or_name_the_fix() {
        assert_eq!(parse_listen("127.0.0.1:9500").unwrap().port(), 9500);
        assert!(parse_listen("localhost:9500").is_ok());
        assert!(
            parse_listen("9500")
                .unwrap_err()
                .contains("e.g. --metrics-listen 0.0.0.0:9500")
        );
    }
}
