//! An experiment checked into the steps it runs: every (variant, measurement) cell's node and
//! run or search options, from the file (`file`: variants, measurements, repeats, order and
//! freshness), and a duet's cells. Option keys are the
//! long flags of `caplab node start`, `caplab run` and `caplab capacity` without their dashes
//! (`heap: 4G`, `set: [...]`, `rate: 2000`, `batch_size: 10`), so everything the commands take
//! an experiment takes, checked the same way, before anything runs.

use anyhow::{Context, Result, bail};
use std::time::Duration;

use super::keys::{self, known, merged, parse_node};
use super::question::{self, PRIMARY_CAPACITY, PRIMARY_RUN};
use crate::cluster::options::NodeOptions;
use crate::engine::Warmup;
use crate::measure::options::RunOptions;

pub use super::file::{ExperimentFile, Measurement, Order, RoundDesign, Source, Variant};
pub use super::keys::Options;

/// One (variant, measurement) as it will run: the node's options and the run's or search's.
#[derive(Debug, Clone)]
pub struct Cell {
    pub node: NodeOptions,
    pub what: What,
}

#[derive(Debug, Clone)]
pub enum What {
    Run(Box<RunOptions>),
    Capacity(Box<crate::capacity::CapacityOptions>),
}

impl What {
    /// The options a run and a capacity search share.
    pub fn common_mut(&mut self) -> &mut crate::measure::options::DriveOptions {
        match self {
            What::Run(o) => &mut o.common,
            What::Capacity(o) => &mut o.common,
        }
    }
}

/// An experiment read and checked.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub file: ExperimentFile,
    /// The file as written (kept with the results, so `--resume` runs what was started).
    pub text: String,
    pub origin: String,
    /// `[variant][measurement]`.
    pub cells: Vec<Vec<Cell>>,
    pub baseline: usize,
}

impl Experiment {
    /// Parses and checks an experiment file: every variant's node options and every (variant,
    /// measurement)'s run options, as the commands would parse them.
    pub fn parse(text: &str, origin: &str) -> Result<Experiment> {
        Self::parse_from(text, origin, Source::File)
    }

    /// Parses the text an experiment record kept (`ExperimentRecord::text`).
    pub fn parse_kept(text: &str, origin: &str) -> Result<Experiment> {
        Self::parse_from(text, origin, Source::Record)
    }

    fn parse_from(text: &str, origin: &str, source: Source) -> Result<Experiment> {
        let file = ExperimentFile::read(text, origin, source)?;
        let fail = |what: String, e: anyhow::Error| anyhow::anyhow!("{origin}: {what}: {e:#}");
        if file.variants.is_empty() {
            bail!("{origin}: variants is empty: name at least one, e.g. variants: [{{name: a}}]");
        }
        if file.measure.is_empty() {
            bail!("{origin}: measure is empty: name at least one, e.g. measure: [{{name: insert, duration: 30s}}]");
        }
        file.repeats.check().map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        if !(1..=20).contains(&file.windows) {
            bail!(
                "{origin}: windows: {} must be between 1 and 20 (measured windows per node)",
                file.windows
            );
        }
        let runs = file.measure.iter().any(|m| !m.capacity);
        let searches = file.measure.iter().any(|m| m.capacity);
        keys::check_shared("run", &file.run, runs, searches).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        for v in &file.variants {
            keys::check_shared(&format!("variant '{}' run", v.name), &v.run, runs, searches)
                .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        }
        let mut names = std::collections::BTreeSet::new();
        for v in &file.variants {
            check_name(&v.name).map_err(|e| anyhow::anyhow!("{origin}: variant '{}': {e}", v.name))?;
            if !names.insert(v.name.as_str()) {
                bail!("{origin}: two variants are named '{}'", v.name);
            }
        }
        let mut measures = std::collections::BTreeSet::new();
        for m in &file.measure {
            check_name(&m.name).map_err(|e| anyhow::anyhow!("{origin}: measurement '{}': {e}", m.name))?;
            if !measures.insert(m.name.as_str()) {
                bail!("{origin}: two measurements are named '{}'", m.name);
            }
        }
        let metric_keys = super::compare::metric_keys();
        let asked = [
            ("metrics", file.metrics.clone().unwrap_or_default()),
            ("primary", file.primary.clone().unwrap_or_default()),
            (
                "primary (of a measurement)",
                file.measure
                    .iter()
                    .flat_map(|m| m.primary.clone().unwrap_or_default())
                    .collect(),
            ),
            ("effect", file.effect.keys().cloned().collect()),
        ];
        for (key, names) in asked {
            if let Some(bad) = names.iter().find(|k| !metric_keys.contains(&k.as_str())) {
                bail!(
                    "{origin}: {key}: '{bad}' is not a metric (metrics: {})",
                    metric_keys.join(", ")
                );
            }
        }
        let baseline = match &file.baseline {
            None => 0,
            Some(b) => file.variants.iter().position(|v| &v.name == b).with_context(|| {
                format!(
                    "{origin}: baseline '{b}' is not a variant (variants: {})",
                    file.variants
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
        };
        let mut cells = Vec::new();
        let exp_name = name_of(&file, origin);
        for v in &file.variants {
            let node_opts = merged(&[&file.node, &v.node]);
            let node = parse_node(&node_opts).map_err(|e| fail(format!("variant '{}' node", v.name), e))?;
            let mut row = Vec::new();
            for m in &file.measure {
                // Shared options a command does not take (a duration for a capacity search)
                // are for the other measurements; the measurement's own keys must all apply.
                let takes = |o: &Options| known(m.capacity, o);
                let opts = merged(&[&takes(&file.run), &m.options, &takes(&v.run)]);
                let mut what = parse_what(m.capacity, &opts)
                    .map_err(|e| fail(format!("measurement '{}' of variant '{}'", m.name, v.name), e))?;
                // Each step's results say which experiment and variant they are (the history
                // keeps them as labels); labels the file gives are kept before them.
                what.common_mut().labels.extend([
                    ("experiment".to_string(), exp_name.clone()),
                    ("variant".to_string(), v.name.clone()),
                ]);
                row.push(Cell {
                    node: node.clone(),
                    what,
                });
            }
            cells.push(row);
        }
        if file.design == RoundDesign::Duet {
            duet_cells(&file, &mut cells).map_err(|e| anyhow::anyhow!("{origin}: {e:#}"))?;
        }
        Ok(Experiment {
            file,
            text: text.to_string(),
            origin: origin.to_string(),
            cells,
            baseline,
        })
    }

    /// Checks every variant's node against this machine (its JDKs and memory), so that a JDK
    /// it lacks is named before the first node starts. (`parse` checks only the file, so a file
    /// is valid or not wherever it is read.)
    pub fn check_here(&self) -> Result<()> {
        for (v, row) in self.file.variants.iter().zip(&self.cells) {
            row[0]
                .node
                .spec()
                .map_err(|e| anyhow::anyhow!("{}: variant '{}' node: {e:#}", self.origin, v.name))?;
        }
        Ok(())
    }

    /// `3 variant(s) x 2 measurement(s) x 3 repeat(s) = 18 steps`, or with auto repeats
    /// `... x 3 to 12 repeat(s) (until answered) = 18 to 72 steps`.
    pub fn shape(&self) -> String {
        let per = self.cells.len() * self.file.measure.len();
        let r = self.file.repeats;
        let steps = if r.is_auto() {
            format!("{} to {}", per * r.min() as usize, per * r.max() as usize)
        } else {
            (per * r.min() as usize).to_string()
        };
        format!(
            "{} variant(s) x {} measurement(s) x {} repeat(s) = {steps} steps{}",
            self.cells.len(),
            self.file.measure.len(),
            r.describe(),
            self.file
                .budget
                .map(|b| format!(", budget {}", humantime::format_duration(b)))
                .unwrap_or_default()
        )
    }

    /// The metrics that are measurement `m`'s question.
    pub fn primary(&self, m: usize) -> Vec<String> {
        match self.file.measure[m].primary.as_ref().or(self.file.primary.as_ref()) {
            Some(p) => p.clone(),
            None if self.file.measure[m].capacity => PRIMARY_CAPACITY.iter().map(|s| s.to_string()).collect(),
            None => PRIMARY_RUN.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The smallest difference that matters for `metric`.
    pub fn effect(&self, metric: &str) -> f64 {
        self.file
            .effect
            .get(metric)
            .copied()
            .unwrap_or_else(|| question::default_effect(metric))
    }

    pub fn name(&self) -> String {
        name_of(&self.file, &self.origin)
    }
}

/// The experiment's name: the file's `name`, or the file name's stem.
fn name_of(file: &ExperimentFile, origin: &str) -> String {
    file.name.clone().unwrap_or_else(|| {
        std::path::Path::new(origin)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "experiment".into())
    })
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        bail!("names may use letters, digits, '-', '_' and '.' (they name results directories)");
    }
    Ok(())
}

/// A duet's warm-up when the measurement's is automatic: both windows must start in the same
/// second, so the warm-up is fixed (write `warmup: 200s` for another): longer than fresh nodes
/// took to settle alone on E1 batches, and what bench/duet.sh's A/A ran with (bench/RESULTS.md).
pub const DUET_WARMUP: Duration = Duration::from_secs(150);

/// Makes `cells` a duet's (`design: duet`): two variants, runs only, each measurement's rate
/// and operations in flight halved (the two together offer what one step alone would), a
/// fixed warm-up, and each variant's nodes on addresses and a JMX port of their own
/// (127.0.61.1 and 7261, 127.0.62.1 and 7361) unless the variants already differ there.
fn duet_cells(file: &ExperimentFile, cells: &mut [Vec<Cell>]) -> Result<()> {
    if cells.len() != 2 {
        bail!(
            "design: duet runs two variants at once, and this file has {}: keep two, or use design: blocks",
            cells.len()
        );
    }
    let same_address = cells[0][0].node.address == cells[1][0].node.address;
    let same_jmx = cells[0][0].node.jmx_port == cells[1][0].node.jmx_port;
    for (v, row) in cells.iter_mut().enumerate() {
        for (m, cell) in row.iter_mut().enumerate() {
            let name = &file.measure[m].name;
            if same_address {
                cell.node.address = std::net::Ipv4Addr::new(127, 0, 61 + v as u8, 1);
            }
            if same_jmx {
                cell.node.jmx_port = 7261 + 100 * v as u16;
            }
            let What::Run(o) = &mut cell.what else {
                bail!(
                    "measurement '{name}': a capacity search cannot share the machine: design: duet compares runs \
                     (use design: blocks for searches)"
                );
            };
            if o.ops.is_some() {
                bail!("measurement '{name}': count: a duet's two windows must end together: give a duration instead");
            }
            o.warmup = match o.warmup {
                Warmup::Auto { .. } => Warmup::Time(DUET_WARMUP),
                Warmup::Ops(_) => bail!(
                    "measurement '{name}': warmup: a duet's two windows start in the same second: give a time (e.g. 150s), not a number of operations"
                ),
                w => w,
            };
            o.warmup_max = None;
            o.common.load.concurrency = o.common.load.concurrency.div_ceil(2);
            o.rate = o.rate.scaled(0.5);
        }
    }
    Ok(())
}

fn parse_what(capacity: bool, opts: &Options) -> Result<What> {
    Ok(if capacity {
        What::Capacity(Box::new(keys::parse_capacity(opts)?))
    } else {
        What::Run(Box::new(keys::parse_run(opts)?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const E1: &str = r#"
name: versions
repeats: 2
node: {heap: 1G}
run: {warmup: 5s, duration: 10s}
variants:
  - {name: "5.0.9", node: {version: 5.0.9}}
  - name: fast
    node: {version: 5.0.9, set: [memtable_flush_writers=8, "concurrent_writes=64"]}
    run: {concurrency: 512}
measure:
  - {name: insert, workload: insert}
  - {name: batch, workload: batch, batch_size: 10, rate: 2000}
  - {name: cap, capacity: true, sla: "p99<10ms/5s", rates: "1k,2k", measure: 10s}
"#;

    #[test]
    fn the_shipped_experiments_are_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let e = Experiment::parse(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e:#}"));
            names.push(e.name().to_string());
        }
        names.sort();
        assert_eq!(
            names,
            [
                "accord",
                "compaction",
                "e1-batches",
                "e1-jdk",
                "e1-versions",
                "e2-gc",
                "e3-capacity",
                "e4-flush",
                "tables",
                "vector-versions"
            ]
        );
    }

    #[test]
    fn options_are_the_commands_flags() {
        let e = Experiment::parse(E1, "e1.yaml").unwrap();
        assert_eq!(e.name(), "versions");
        assert_eq!((e.cells.len(), e.cells[0].len(), e.baseline), (2, 3, 0));
        let fast = &e.cells[1];
        assert_eq!(
            fast[0].node.overrides,
            ["memtable_flush_writers=8", "concurrent_writes=64"]
        );
        assert_eq!(fast[0].node.heap.as_deref(), Some("1G"));
        let What::Run(batch) = &fast[1].what else { panic!() };
        assert_eq!((batch.rate.per_s, batch.common.workload.batch_size), (2000.0, 10));
        assert_eq!(batch.common.load.concurrency, 512, "the variant's run options win");
        assert_eq!(batch.duration, Some(std::time::Duration::from_secs(10)));
        let What::Capacity(cap) = &e.cells[0][2].what else {
            panic!()
        };
        assert_eq!(cap.rates.as_deref(), Some("1k,2k"));
        assert!(matches!(e.file.order, Order::Random) && e.file.fresh);
        assert_eq!(e.file.floor, 0.02);
    }

    #[test]
    fn a_duet_halves_each_sides_load_fixes_its_warm_up_and_gives_each_variant_its_own_addresses() {
        let text = "design: duet\nnode: {version: 5.0.9}\nrun: {duration: 30s, concurrency: 255, rate: 5000}\n\
                    variants: [{name: a}, {name: b}]\n\
                    measure: [{name: w, workload: insert}, {name: f, workload: insert, rate: 0, warmup: 20s}]\n";
        let e = Experiment::parse(text, "d.yaml").unwrap();
        let run = |v: usize, m: usize| match &e.cells[v][m].what {
            What::Run(o) => (**o).clone(),
            What::Capacity(_) => unreachable!(),
        };
        for v in 0..2 {
            assert_eq!(run(v, 0).common.load.concurrency, 128);
            assert_eq!(run(v, 0).rate.per_s, 2500.0);
            assert_eq!(run(v, 0).warmup, Warmup::Time(DUET_WARMUP), "auto becomes fixed");
            assert_eq!(run(v, 1).rate.per_s, 0.0, "flat out stays flat out");
            assert_eq!(run(v, 1).warmup, Warmup::Time(Duration::from_secs(20)));
            for m in 0..2 {
                let node = &e.cells[v][m].node;
                assert_eq!(node.address, std::net::Ipv4Addr::new(127, 0, 61 + v as u8, 1));
                assert_eq!(node.jmx_port, 7261 + 100 * v as u16);
            }
        }
        let blocks = Experiment::parse(&text.replace("design: duet", "design: blocks"), "b.yaml").unwrap();
        assert_eq!(blocks.cells[1][0].node.address, std::net::Ipv4Addr::new(127, 0, 0, 1));
        let err = |text: String| format!("{:#}", Experiment::parse(&text, "d.yaml").unwrap_err());
        let e = err(text.replace("{name: b}]", "{name: b}, {name: c}]"));
        assert!(
            e.contains("d.yaml: design: duet runs two variants at once, and this file has 3"),
            "{e}"
        );
        let e = err(text.replace(
            "{name: w, workload: insert}",
            "{name: w, capacity: true, sla: 'p99<9ms/5s'}",
        ));
        assert!(
            e.contains("measurement 'w': a capacity search cannot share the machine"),
            "{e}"
        );
        let e = err(text.replace("warmup: 20s", "warmup: 20000"));
        assert!(
            e.contains("measurement 'f': warmup: a duet's two windows start in the same second"),
            "{e}"
        );
        let e = err(text.replace("duration: 30s", "count: 1000"));
        assert!(e.contains("count: a duet's two windows must end together"), "{e}");
    }

    #[test]
    fn mistakes_are_named_before_anything_runs() {
        let err = |text: &str| format!("{:#}", Experiment::parse(text, "x.yaml").unwrap_err());
        let e = err(&E1.replace("heap: 1G", "heap: lots"));
        assert!(
            e.contains("x.yaml: variant '5.0.9' node") && e.contains("not a heap size"),
            "{e}"
        );
        let e = err(&E1.replace("batch_size: 10", "batch_sise: 10"));
        assert!(
            e.contains("measurement 'batch' of variant '5.0.9'")
                && e.contains("unknown key 'batch_sise': did you mean 'batch_size'?"),
            "{e}"
        );
        // A typo in a shared block is no option of any measurement: refused, not left out.
        let e = err(&E1.replace("run: {warmup: 5s, duration: 10s}", "run: {warmup: 5s, duraton: 10s}"));
        assert!(
            e.contains("x.yaml: run: unknown key 'duraton': did you mean 'duration'?"),
            "{e}"
        );
        let e = err(&E1.replace("run: {concurrency: 512}", "run: {concurency: 512}"));
        assert!(
            e.contains("variant 'fast' run: unknown key 'concurency': did you mean 'concurrency'?"),
            "{e}"
        );
        let only_runs = E1.replace(
            "  - {name: cap, capacity: true, sla: \"p99<10ms/5s\", rates: \"1k,2k\", measure: 10s}\n",
            "",
        );
        let e = err(&only_runs.replace("run: {warmup: 5s,", "run: {rates: 1k, warmup: 5s,"));
        assert!(
            e.contains("run: 'rates' is an option of caplab capacity, and no measurement here is a capacity search"),
            "{e}"
        );
        let e = err(&E1.replace("node: {heap: 1G}", "node: {heap: 1G, hepa: 2G}"));
        assert!(e.contains("unknown key 'hepa': did you mean 'heap'?"), "{e}");
        // A retired key: refused in a file given now, read in a record an earlier caplab kept.
        let old = E1.replace("repeats: 2", "repeats: 2\ninclude_unsteady: true");
        let e = err(&old);
        assert!(
            e.contains("x.yaml: include_unsteady: every window after a settled warm-up is compared now"),
            "{e}"
        );
        assert!(Experiment::parse_kept(&old, "x.yaml").is_ok());
        let e = err(&E1.replace("repeats: 2", "repeats: 2\ninclude_unsteady: false"));
        assert!(e.contains("x.yaml: include_unsteady: "), "{e}");
        let e = err(&E1.replace("repeats: 2", "repeats: 2\nmetrics: [p99, gc_cuont]"));
        assert!(
            e.contains("'gc_cuont' is not a metric") && e.contains("gc_count"),
            "{e}"
        );
        let e = err(&E1.replace("repeats: 2", "repeats: 2\nrepeat: 3"));
        assert!(
            e.starts_with("x.yaml:") && e.contains("unknown key 'repeat': did you mean 'repeats'?"),
            "{e}"
        );
        let e = err(&E1.replace("name: versions", "name: versions\nbaseline: slow"));
        assert!(
            e.contains("baseline 'slow' is not a variant (variants: 5.0.9, fast)"),
            "{e}"
        );
        let e = err(&E1.replace(
            "{name: insert, workload: insert}",
            "{name: insert, workload: insert, hosts: x}",
        ));
        assert!(e.contains("'hosts' is set by the experiment"), "{e}");
        let e = err(&E1.replace(
            "{name: insert, workload: insert}",
            "{name: insert, workload: insert, version: 5.0.4}",
        ));
        assert!(e.contains("put version, jars and set under node:"), "{e}");
        let e = err(&E1.replace(", sla: \"p99<10ms/5s\"", ""));
        assert!(e.contains("needs a service level"), "{e}");
        let e = err(&E1.replace(
            "run: {warmup: 5s, duration: 10s}",
            "run: {warmup: 5s, warmup_max: 1m, duration: 10s}",
        ));
        assert!(
            e.contains("measurement 'insert' of variant '5.0.9'")
                && e.contains("--warmup-max bounds an automatic warm-up"),
            "{e}"
        );
        let e = err(&E1.replace("rates: \"1k,2k\"", "rates: \"1k,fast\""));
        assert!(
            e.contains("x.yaml: measurement 'cap' of variant '5.0.9'")
                && e.contains("--rates")
                && e.contains("'1k,fast' is not a list of rates"),
            "{e}"
        );
        // A JDK or collector a version cannot have, whatever JDKs this machine holds.
        let e = err(&E1.replace("{version: 5.0.9}", "{version: 5.0.9, java: 21}"));
        assert!(
            e.contains("variant '5.0.9' node") && e.contains("does not run on JDK 21"),
            "{e}"
        );
        let e = err(&E1.replace("{version: 5.0.9}", "{version: 5.0.9, java: 17, gc: zgc-generational}"));
        assert!(e.contains("generational ZGC needs JDK 21"), "{e}");
    }

    #[test]
    fn a_file_is_valid_or_not_wherever_it_is_read() {
        // The machine's JDKs are checked when the experiment starts (`check_here`), not when
        // the file is read: a JDK that is not here is no mistake in the file.
        let text = E1.replace("{version: 5.0.9}", "{version: 5.0.9, java: /no/such/jdk}");
        let e = Experiment::parse(&text, "x.yaml").unwrap();
        let here = format!("{:#}", e.check_here().unwrap_err());
        assert!(here.starts_with("x.yaml: variant '5.0.9' node: "), "{here}");
    }
}
