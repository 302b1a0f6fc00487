//! Stopping a measurement from outside: Ctrl-C (SIGINT), SIGTERM (`timeout`, `kill`, CI
//! cancellation, Kubernetes and systemd stops) and SIGHUP (a closed terminal) all ask the
//! engine to stop: operations in flight get at most the drain (`--drain`) to finish, everything
//! measured is written, and the command exits with 128 + the signal's number. The signals are
//! listened to on a thread of their own, so one stop serves every step of an experiment.
//!
//! Orchestrators signal more than once: GNU `timeout` sends SIGTERM to caplab and then to its
//! process group, so caplab sees two at once. Signals within `REPEAT` of the first are the same
//! stop. One later than that, or a stop that overruns its bound (the drain and `WRITE_GRACE`),
//! exits at once. Whatever ends the process, the step's result.json says `interrupted`: it is
//! marked so when the first signal arrives (a SIGKILL after it, which no process can catch,
//! leaves it so), and the full result written at the end replaces it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};

use crate::console::say;
use crate::engine::Stop;

/// Signals this soon after the first are the same stop (an orchestrator's echo, not a person
/// asking twice).
pub const REPEAT: Duration = Duration::from_secs(2);
/// Time to write results after the drain, before a stop that has not ended is forced.
pub const WRITE_GRACE: Duration = Duration::from_secs(10);

/// The exit code of a command stopped by `cause` (a signal's name): 128 + its number.
pub fn exit_code(cause: Option<&str>) -> u8 {
    match cause {
        Some("SIGTERM") => 143,
        Some("SIGHUP") => 129,
        _ => 130,
    }
}

/// Marks `file` as the running step's result until the guard is dropped (or `finish`ed).
pub fn running_result(stop: &Arc<Stop>, file: PathBuf) -> RunningResult {
    *stop.result_file() = Some(file);
    RunningResult(stop.clone())
}

/// While alive, a stop marks the step's result.json `interrupted`.
pub struct RunningResult(Arc<Stop>);

impl RunningResult {
    /// The step writes its own result from here on: a stop no longer touches the file (so the
    /// two never write it at once).
    pub fn finish(self) {}
}

impl Drop for RunningResult {
    fn drop(&mut self) {
        *self.0.result_file() = None;
    }
}

/// Rewrites the running step's result.json with status `interrupted` (by `cause`), if a step is
/// running and its file still says `running`. Holds the lock while it writes, so the step's
/// own final write waits for it.
fn mark_interrupted(stop: &Stop, cause: &str) {
    let running = stop.result_file();
    let Some(file) = running.as_ref() else { return };
    let Ok(text) = std::fs::read(file) else { return };
    let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return;
    };
    if doc["status"] != "running" {
        return;
    }
    doc["status"] = "interrupted".into();
    doc["interrupted_by"] = cause.into();
    if let Err(e) = crate::files::write_json(file, &doc) {
        say(&format!("cannot mark {} interrupted: {e:#}", file.display()));
    }
}

/// A stop that SIGINT, SIGTERM or SIGHUP asks for, from now until the process ends. `drain`
/// is how long operations in flight may take to finish after it.
pub fn stop_on_signals(drain: Duration) -> Arc<Stop> {
    let doing = format!(
        "finishing operations in flight (at most {}), then writing results",
        humantime::format_duration(drain)
    );
    stop_on_signals_for(drain + WRITE_GRACE, doing)
}

/// A stop as `stop_on_signals` makes it, for a command whose work after a signal is not a drain
/// of operations in flight: `doing` says what it does then (printed when the signal comes), and
/// `bound` is how long that may take before the process exits anyway.
pub fn stop_on_signals_for(bound: Duration, doing: String) -> Arc<Stop> {
    let stop = Stop::new();
    let on_signal = stop.clone();
    let (ready_tx, ready) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("caplab-signals".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for signals");
            rt.block_on(listen(on_signal, bound, doing, ready_tx));
        })
        .expect("a thread for signals");
    // Signals are caught from here on.
    let _ = ready.recv();
    stop
}

async fn listen(stop: Arc<Stop>, bound: Duration, doing: String, ready: std::sync::mpsc::Sender<()>) {
    let listen = |kind: SignalKind| signal(kind).ok();
    let (mut int, mut term, mut hup) = (
        listen(SignalKind::interrupt()),
        listen(SignalKind::terminate()),
        listen(SignalKind::hangup()),
    );
    let _ = ready.send(());
    async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    let mut first: Option<tokio::time::Instant> = None;
    loop {
        let deadline = first.map(|at| at + bound);
        let overrun = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let name = tokio::select! {
            _ = next(&mut int) => "SIGINT",
            _ = next(&mut term) => "SIGTERM",
            _ = next(&mut hup) => "SIGHUP",
            () = overrun => {
                say(&format!(
                    "The stop took longer than {}: exiting now; what was written so far is kept",
                    humantime::format_duration(bound)
                ));
                force_exit(&stop);
            }
        };
        match first {
            None => {
                say(&format!("Stopping ({name}): {doing}"));
                first = Some(tokio::time::Instant::now());
                stop.request_because(name);
                mark_interrupted(&stop, name);
            }
            Some(at) if at.elapsed() < REPEAT => {}
            Some(_) => {
                say(&format!(
                    "Second signal ({name}): exiting now; intervals so far are in the results directory"
                ));
                force_exit(&stop);
            }
        }
    }
}

fn force_exit(stop: &Stop) -> ! {
    // A node left paused by a fault would stay frozen after caplab is gone.
    crate::faults::inject::resume_paused();
    let cause = stop.cause().unwrap_or("SIGINT");
    mark_interrupted(stop, cause);
    std::process::exit(i32::from(exit_code(Some(cause))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_marks_only_a_running_result_and_keeps_the_rest() {
        let dir = std::env::temp_dir().join(format!("caplab-signal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("result.json");
        std::fs::write(&file, r#"{"status":"running","workload":"e1"}"#).unwrap();
        let stop = Stop::new();
        // No step registered: nothing is touched.
        mark_interrupted(&stop, "SIGTERM");
        assert!(std::fs::read_to_string(&file).unwrap().contains("running"));

        let guard = running_result(&stop, file.clone());
        mark_interrupted(&stop, "SIGTERM");
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            (&doc["status"], &doc["interrupted_by"], &doc["workload"]),
            (&"interrupted".into(), &"SIGTERM".into(), &"e1".into())
        );
        // A finished step's own result is not rewritten.
        std::fs::write(&file, r#"{"status":"completed"}"#).unwrap();
        mark_interrupted(&stop, "SIGINT");
        assert!(std::fs::read_to_string(&file).unwrap().contains("completed"));
        guard.finish();
        std::fs::write(&file, r#"{"status":"running"}"#).unwrap();
        mark_interrupted(&stop, "SIGINT");
        assert!(std::fs::read_to_string(&file).unwrap().contains("running"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
