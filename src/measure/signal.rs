//! Stopping a measurement from outside: Ctrl-C asks the engine to stop (operations in flight
//! finish, everything measured is written); a second Ctrl-C exits at once.

use std::sync::Arc;

use crate::console::say;
use crate::engine::Stop;

/// A stop that Ctrl-C asks for (a second one exits at once); call inside the runtime.
pub fn stop_on_ctrl_c() -> Arc<Stop> {
    let stop = Stop::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            say("Stopping (Ctrl-C): finishing operations in flight, then writing results");
            on_signal.request();
            if tokio::signal::ctrl_c().await.is_ok() {
                say("Second Ctrl-C: exiting now; intervals so far are in the results directory");
                std::process::exit(130);
            }
        }
    });
    stop
}
