//! The nightly gate on the noise measured on this project's machines (`stats::measured`), for
//! seeds of one's choosing: what bench/results/nights.md's "On the measured noise" reports.
//!
//!     cargo run --release -p caplab-stats --example measured_gate -- [SERIES] [SEED]
//!
//! SERIES series per figure (default 800; power rows take 600), seeds from SEED (default 9201,
//! the tuning seed; the unit tests assert on 9301 and on).

use caplab_stats::stats::measured::{CHECK, UNCORRECTED, WITH_P999, false_by_figure, false_looks, found_by_fifth};
use caplab_stats::stats::noise::MACHINES;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let series: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(800);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(9201);
    println!(
        "| machine | runs measured | false looks (family {}) | with p99.9 | uncorrected | ×2 tail by the 5th run | −10 % throughput by the 5th run |",
        CHECK.family
    );
    println!("|---|---|---|---|---|---|---|");
    for (i, m) in MACHINES.iter().enumerate() {
        let s = seed + 10 * i as u64;
        let (rate, _) = false_looks(m, s, series, CHECK);
        let (with, _) = false_looks(m, s + 4, series, WITH_P999);
        let (alone, _) = false_looks(m, s + 1, series, UNCORRECTED);
        let power = series * 3 / 4;
        let tail = found_by_fifth(m, s + 2, power, (2.0, 1.0), true);
        let tput = found_by_fifth(m, s + 3, power, (1.0, 0.9), false);
        println!(
            "| {} | {} | {:.2} % | {:.2} % | {:.2} % | {:.1} % | {:.1} % |",
            m.name,
            m.rows.len(),
            rate * 100.0,
            with * 100.0,
            alone * 100.0,
            tail * 100.0,
            tput * 100.0
        );
    }
    println!();
    println!(
        "False looks by figure, p99.9 checked (throughput, p50, p99, p99.9, service p99, CPU per operation, GC pause):"
    );
    for (i, m) in MACHINES.iter().enumerate() {
        let by = false_by_figure(m, seed + 10 * i as u64 + 4, series, WITH_P999);
        let text: Vec<String> = by.iter().map(|r| format!("{:.2} %", r * 100.0)).collect();
        println!("{}: {}", m.name, text.join(", "));
    }
}
