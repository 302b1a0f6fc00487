//! A replay as a step (`caplab run --replay`, `caplab capacity --replay`): the trace chosen and
//! read before anything connects, its schedule (the trace's own timing at `--speed`), prepared
//! on the target (`workload::replay`), and run, its reads kept with `--results`.

use anyhow::{Result, bail};
use scylla::client::session::Session;
use std::sync::Arc;
use std::time::Duration;

use super::about::About;
use super::options::{Rate, RunOptions};
use super::result::{RunResult, WorkloadRecord};
use super::step::Step;
use super::target::Site;
use super::workload_options::WorkloadOptions;
use crate::console::say;
use crate::engine::{Stop, Warmup};
use crate::workload::replay::{Replay, ReplayOptions, Trace};
use crate::workload::schema;

/// A trace to replay: read now, so a broken one is refused before anything connects.
pub fn choose(path: &std::path::Path, args: &WorkloadOptions) -> Result<(Arc<Trace>, ReplayOptions)> {
    let given = [
        ("--ops", args.weights.is_some()),
        ("--seed", args.seed.is_some()),
        ("--partitions", args.partitions.is_some()),
        ("--tables", args.tables != 1),
        ("--replication-factor", args.replication_factor.is_some()),
        ("--compaction", args.compaction.is_some()),
        ("--recreate", args.recreate),
        ("--truncate", args.truncate),
        ("--loader", !args.loader.is_whole()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
        bail!(
            "{flag} shapes a generated workload; a replay sends what its trace holds: drop {flag} \
             (--keyspace moves the replay to another keyspace, --speed changes its pace)"
        );
    }
    let trace = Trace::read(path)?;
    let options = ReplayOptions {
        trace: path.to_path_buf(),
        speed: args.speed.unwrap_or(1.0),
        keyspace: args.keyspace.clone(),
        entries: trace.entries.len() as u64,
        captured_s: trace.entries.last().map_or(0.0, |e| e.at_ms as f64 / 1e3),
        schema_left_out: trace.schema_left_out,
        results: args.results,
    };
    Ok((Arc::new(trace), options))
}

/// A replay's schedule as a run takes it.
pub struct Schedule {
    pub rate: Rate,
    pub warmup: Warmup,
    pub duration: Option<Duration>,
    /// Every operation, however late (`--results`), instead of a window.
    pub ops: Option<u64>,
    /// Operations in flight at most, when the replay decides (`--results`: one).
    pub in_flight: Option<usize>,
}

/// A replay's rate, warm-up and measured window: the trace's own timing at `--speed`; a
/// warm-up is the trace's first seconds (none unless asked), and the window the rest of it, or
/// as much as `--duration` asks. With `--results`, every operation is sent, one at a time.
pub fn schedule(args: &RunOptions, trace: &Trace, replay: &ReplayOptions) -> Result<Schedule> {
    if args.rate.shape.is_some() || args.rate.per_s > 0.0 || args.rate_file.is_some() {
        bail!("--replay follows its trace's own timing: drop --rate and --rate-file (--speed changes its pace)");
    }
    if args.ops.is_some() {
        bail!("--replay sends its trace's operations, each once: drop -n (--duration replays only the first part)");
    }
    let warmup = match args.warmup {
        Warmup::Auto { .. } | Warmup::None => Warmup::None,
        Warmup::Time(d) => Warmup::Time(d),
        Warmup::Ops(_) => bail!("a replay's warm-up is a time, its trace's first seconds: give --warmup 30s or 0"),
    };
    let rate = Rate::of(replay.rate(trace, replay.speed, false)?);
    if replay.results {
        if warmup != Warmup::None || args.duration.is_some() {
            bail!(
                "--results keeps the answer to every operation of the trace: drop --warmup and --duration (a replay \
                 for its results sends all of it, in order)"
            );
        }
        return Ok(Schedule {
            rate,
            warmup,
            duration: None,
            ops: Some(replay.entries),
            in_flight: Some(1),
        });
    }
    let length = rate.shape.as_ref().and_then(|s| s.length()).unwrap_or_default();
    let before = match warmup {
        Warmup::Time(d) => d,
        _ => Duration::ZERO,
    };
    let Some(rest) = length.checked_sub(before).filter(|r| !r.is_zero()) else {
        bail!(
            "--warmup {}: the replay lasts {:.1} s at {}x, so nothing would be measured: give a shorter warm-up",
            humantime::format_duration(before),
            length.as_secs_f64(),
            replay.speed
        );
    };
    let duration = match args.duration {
        Some(d) if d > rest => bail!(
            "--duration {}: the replay holds {:.1} s after its warm-up at {}x; drop --duration to replay all of it",
            humantime::format_duration(d),
            rest.as_secs_f64(),
            replay.speed
        ),
        Some(d) => d,
        None => rest,
    };
    Ok(Schedule {
        rate,
        warmup,
        duration: Some(duration),
        ops: None,
        in_flight: None,
    })
}

/// Moves the trace where it is replayed and prepares its statements.
pub async fn prepare(
    session: &Arc<Session>,
    trace: &Arc<Trace>,
    options: &ReplayOptions,
) -> Result<(Arc<Replay>, About)> {
    let workload = Arc::new(Replay::setup(session.clone(), trace.clone(), options.clone()).await?);
    let mut described = Vec::new();
    for ks in workload.keyspaces() {
        described.extend(schema::describe(session, &ks).await.unwrap_or_default());
    }
    let about = About {
        name: "replay".into(),
        record: WorkloadRecord::Replay {
            replay: workload.options.clone(),
        },
        schema: described,
        schema_requested: Vec::new(),
        statements: crate::engine::Workload::statements(workload.as_ref()),
        tables: workload.op_tables(),
        tables_made: None,
    };
    Ok((workload, about))
}

/// Runs the replay as `step`; with `--results`, its reads are kept beside the results.
pub async fn run(step: &Step, site: &Site, w: &Arc<Replay>, about: &About, stop: Arc<Stop>) -> Result<RunResult> {
    if step.validate.is_some() {
        bail!(
            "a replay sends what its trace holds and reads nothing back: drop --validate (--results keeps its answers)"
        );
    }
    let result = step.run(site, w.clone(), about.clone(), stop).await?;
    if let Some(reads) = &w.reads {
        let n = reads.write(&step.out, &crate::engine::Workload::op_names(&**w))?;
        say(&format!(
            "Answers: {n} with rows, as digests in {} (caplab compare lists those that differ between two replays)",
            step.out.join(crate::workload::replay::reads::READS_FILE).display()
        ));
    }
    Ok(result)
}

/// How two replays' answers compare, when both kept them (`--results`).
pub fn compare_reads(
    a: &std::path::Path,
    b: &std::path::Path,
) -> Result<Option<crate::workload::replay::reads::Differences>> {
    use crate::workload::replay::reads;
    Ok(match (reads::read_file(a)?, reads::read_file(b)?) {
        (Some(x), Some(y)) => Some(reads::Differences::of(&x, &y)),
        _ => None,
    })
}
