//! Stopping a measurement from outside: Ctrl-C (SIGINT), SIGTERM (`timeout`, `kill`, CI
//! cancellation, container stops) and SIGHUP (a closed terminal) all ask the engine to stop:
//! operations in flight finish within the drain, everything measured is written, and the
//! command exits with 128 + the signal's number. A second signal exits at once. The signals
//! are listened to on a thread of their own, so one stop serves every step of an experiment.

use std::sync::Arc;
use tokio::signal::unix::{SignalKind, signal};

use crate::console::say;
use crate::engine::Stop;

/// The exit code of a command stopped by `cause` (a signal's name): 128 + its number.
pub fn exit_code(cause: Option<&str>) -> u8 {
    match cause {
        Some("SIGTERM") => 143,
        Some("SIGHUP") => 129,
        _ => 130,
    }
}

/// A stop that SIGINT, SIGTERM or SIGHUP asks for, from now until the process ends.
pub fn stop_on_signals() -> Arc<Stop> {
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
            rt.block_on(async move {
                let listen = |kind: SignalKind| signal(kind).ok();
                let (mut int, mut term, mut hup) = (
                    listen(SignalKind::interrupt()),
                    listen(SignalKind::terminate()),
                    listen(SignalKind::hangup()),
                );
                let _ = ready_tx.send(());
                async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
                    match s {
                        Some(s) => {
                            s.recv().await;
                        }
                        None => std::future::pending().await,
                    }
                }
                let mut first = true;
                loop {
                    let name = tokio::select! {
                        _ = next(&mut int) => "SIGINT",
                        _ = next(&mut term) => "SIGTERM",
                        _ = next(&mut hup) => "SIGHUP",
                    };
                    if first {
                        say(&format!(
                            "Stopping ({name}): finishing operations in flight, then writing results"
                        ));
                        on_signal.request_because(name);
                        first = false;
                    } else {
                        say(&format!(
                            "Second signal ({name}): exiting now; intervals so far are in the results directory"
                        ));
                        std::process::exit(i32::from(exit_code(on_signal.cause())));
                    }
                }
            });
        })
        .expect("a thread for signals");
    // Signals are caught from here on.
    let _ = ready.recv();
    stop
}
