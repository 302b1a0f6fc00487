//! `tune`'s search and confirmation on synthetic spaces (`stats::tune_sim`), for seeds of one's
//! choosing: what bench/results/tune.md's simulation table reports.
//!
//!     cargo run --release -p caplab-stats --example tune_sim -- [SPACES] [SEED]
//!
//! SPACES spaces per row (default 2,000), seeds from SEED (default 7201, the tuning seed; the
//! unit tests assert on 7301 and on).

use caplab_stats::stats::tune_sim::{Rates, SETUP, rates};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let spaces: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(7201);
    println!(
        "| space | recommended | the planted one | planted among the finalists | nothing better | interval held the truth | search's best overstated | single runs: recommended, overstated | probes: search + confirmation |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let row = |name: &str, r: Rates| {
        println!(
            "| {name} | {:.1} % | {:.1} % | {:.1} % | {:.1} % | {:.1} % | ×{:.3} | {:.1} %, ×{:.3} | {:.0} + {:.0} |",
            r.recommended * 100.0,
            r.planted * 100.0,
            r.planted_final * 100.0,
            r.nothing_better * 100.0,
            r.covered * 100.0,
            r.search_overstated,
            r.single_recommended * 100.0,
            r.single_overstated,
            r.probes.0,
            r.probes.1
        )
    };
    row(
        "one ×1.3 among 20–30 (others 0.6–1.02)",
        rates(seed, spaces, Some(1.3), (0.6, 1.02), SETUP),
    );
    row(
        "one ×1.15 among 20–30",
        rates(seed + 1, spaces, Some(1.15), (0.6, 1.02), SETUP),
    );
    row(
        "nothing beyond ±2 %",
        rates(seed + 2, spaces, None, (0.98, 1.02), SETUP),
    );
    row(
        "all 0.6–1.0 (the baseline best)",
        rates(seed + 3, spaces, None, (0.6, 1.0), SETUP),
    );
}
