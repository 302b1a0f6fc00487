//! What the doubled-p99 test of tests/history_gate.rs can find at a spread: seven runs before the
//! change (six clean and a paused one, which the tail figures set aside), then runs at the change's
//! ratio, the check's thresholds for one figure (p ≤ 5 %), the share of 2,000 series in which the
//! change is a sure regression by the 3rd and by the 5th run after it (`stats::power::found_by`).
//! What bench/results/test-margins.md's "history-gate-spread" reports.
//!
//!     cargo run --release -p caplab-stats --example gate_test_power

use caplab_stats::stats::changes::Settings;
use caplab_stats::stats::power::found_by;

fn main() {
    let tails = Settings::default().for_tails();
    println!("| spread (SD of logs) | ×2 by 3rd | ×2 by 5th | ×2.5 by 5th | ×3 by 5th | ×4 by 5th |");
    println!("|---|---|---|---|---|---|");
    for sd in [0.05, 0.10, 0.15, 0.20, 0.25, 0.34, 0.48] {
        let f = |r: f64, by: usize| 100.0 * found_by(7, sd, r, by, &tails, 2000);
        println!(
            "| {sd:.2} | {:.1} % | {:.1} % | {:.1} % | {:.1} % | {:.1} % |",
            f(2.0, 3),
            f(2.0, 5),
            f(2.5, 5),
            f(3.0, 5),
            f(4.0, 5)
        );
    }
}
