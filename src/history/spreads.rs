//! The spread between machines that pooled experiments have measured, kept beside the runs
//! (table `spreads`, schema 5): for each experiment, measurement, variant and metric pooled
//! over two machines or more, the moment estimate of τ (the between-machine SD of the
//! log-ratio) from the machines alone, with its degrees of freedom (machines − 1). Pooling
//! reads them back to scale its prior on τ for the same metric (`stats::machines::TauPrior::
//! from_estimates`), leaving out the experiment being pooled so its own sittings are not
//! counted twice. The same pool recorded again replaces its row (its key names the machines).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::store::Store;

/// One pooled estimate of the between-machine spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The experiment, measurement, variant and metric with the machines' boot ids, sorted: the
    /// same pool recorded again is one row.
    pub key: String,
    pub experiment: String,
    pub measurement: String,
    pub variant: String,
    pub metric: String,
    pub tau: f64,
    pub df: f64,
    pub machines: i64,
    pub recorded_at: String,
}

const COLUMNS: &str = "key, experiment, measurement, variant, metric, tau, df, machines, recorded_at";

/// Adds `s`, or replaces the row of the same key.
pub fn record(store: &mut Store, s: &Spread) -> Result<()> {
    let sql = format!(
        "INSERT INTO spreads ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (key) DO UPDATE SET tau = EXCLUDED.tau, df = EXCLUDED.df, machines = EXCLUDED.machines, \
         recorded_at = EXCLUDED.recorded_at"
    );
    match store {
        Store::Sqlite(c) => {
            c.execute(
                &sql.replace('$', "?"),
                rusqlite::params![
                    s.key,
                    s.experiment,
                    s.measurement,
                    s.variant,
                    s.metric,
                    s.tau,
                    s.df,
                    s.machines,
                    s.recorded_at
                ],
            )?;
        }
        Store::Postgres(c) => {
            c.execute(
                sql.as_str(),
                &[
                    &s.key,
                    &s.experiment,
                    &s.measurement,
                    &s.variant,
                    &s.metric,
                    &s.tau,
                    &s.df,
                    &s.machines,
                    &s.recorded_at,
                ],
            )?;
        }
    }
    Ok(())
}

/// Every estimate of `metric`'s spread, but those of experiment `except`.
pub fn of_metric(store: &mut Store, metric: &str, except: &str) -> Result<Vec<Spread>> {
    let sql = format!("SELECT {COLUMNS} FROM spreads WHERE metric = $1 AND experiment <> $2 ORDER BY recorded_at, key");
    let mut out = Vec::new();
    match store {
        Store::Sqlite(c) => {
            let mut stmt = c.prepare(&sql.replace('$', "?"))?;
            let rows = stmt.query_map([metric, except], |r| {
                Ok(Spread {
                    key: r.get(0)?,
                    experiment: r.get(1)?,
                    measurement: r.get(2)?,
                    variant: r.get(3)?,
                    metric: r.get(4)?,
                    tau: r.get(5)?,
                    df: r.get(6)?,
                    machines: r.get(7)?,
                    recorded_at: r.get(8)?,
                })
            })?;
            for r in rows {
                out.push(r.context("a history spread row is not caplab's")?);
            }
        }
        Store::Postgres(c) => {
            for r in c.query(sql.as_str(), &[&metric, &except])? {
                out.push(Spread {
                    key: r.get(0),
                    experiment: r.get(1),
                    measurement: r.get(2),
                    variant: r.get(3),
                    metric: r.get(4),
                    tau: r.get(5),
                    df: r.get(6),
                    machines: r.get(7),
                    recorded_at: r.get(8),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::store::Location;

    fn spread(experiment: &str, metric: &str, tau: f64) -> Spread {
        Spread {
            key: format!("{experiment}/batch/b/{metric}/boot1,boot2"),
            experiment: experiment.into(),
            measurement: "batch".into(),
            variant: "b".into(),
            metric: metric.into(),
            tau,
            df: 1.0,
            machines: 2,
            recorded_at: crate::history::events::Event::now(),
        }
    }

    #[test]
    fn spreads_are_kept_once_per_pool_and_read_by_metric_but_their_own_experiment() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&Location::Sqlite(dir.path().join("h.db"))).unwrap();
        record(&mut store, &spread("e1", "throughput", 0.03)).unwrap();
        record(&mut store, &spread("e1", "throughput", 0.04)).unwrap();
        record(&mut store, &spread("e2", "throughput", 0.10)).unwrap();
        record(&mut store, &spread("e2", "p99", 0.20)).unwrap();
        let all = of_metric(&mut store, "throughput", "").unwrap();
        assert_eq!(all.len(), 2, "the same pool twice is one row: {all:?}");
        assert_eq!(all.iter().find(|s| s.experiment == "e1").unwrap().tau, 0.04);
        let others = of_metric(&mut store, "throughput", "e2").unwrap();
        assert_eq!(others.iter().map(|s| s.experiment.as_str()).collect::<Vec<_>>(), ["e1"]);
    }
}
