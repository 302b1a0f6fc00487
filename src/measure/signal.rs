//! Stopping a measurement from outside: Ctrl-C sets a flag the engine watches (operations in
//! flight finish, everything measured is written); a second Ctrl-C exits at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::console::say;

/// Sets the returned flag on Ctrl-C (a second one exits at once); call inside the runtime.
pub fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            say("Stopping (Ctrl-C): finishing operations in flight, then writing results");
            on_signal.store(true, Ordering::Relaxed);
            if tokio::signal::ctrl_c().await.is_ok() {
                say("Second Ctrl-C: exiting now; intervals so far are in the results directory");
                std::process::exit(130);
            }
        }
    });
    stop
}
