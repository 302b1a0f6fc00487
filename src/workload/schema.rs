//! What the server's schema really is, before a workload runs on it: a keyspace or table left
//! by an earlier run with other settings (replication, durable writes, compaction, columns) is
//! refused with the difference named, or dropped and created again when asked (`--recreate`),
//! never silently used; rows it left are emptied when asked (`--truncate`); and the schema
//! results record is read back from the server.

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use std::collections::{BTreeMap, BTreeSet};

/// How long a schema change may take: its coordinator waits for every node to agree, which on
/// loaded nodes takes longer than an operation's `--timeout` (a CREATE KEYSPACE on three nodes
/// beside another test file ran past a 2 s timeout).
pub const SCHEMA_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// A schema statement (CREATE, ALTER, DROP) with [`SCHEMA_TIMEOUT`], whatever the session's.
pub fn ddl(cql: impl Into<String>) -> scylla::statement::unprepared::Statement {
    let mut s = scylla::statement::unprepared::Statement::new(cql.into());
    s.set_request_timeout(Some(SCHEMA_TIMEOUT));
    s
}

/// A replication map as CQL writes it (`{'class': 'SimpleStrategy', 'replication_factor': 1}`),
/// normalised: the strategy's short class name, every value as text.
pub fn parse_replication(cql: &str) -> BTreeMap<String, String> {
    let inner = cql.trim().trim_start_matches('{').trim_end_matches('}');
    inner
        .split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once(':')?;
            let unquote = |s: &str| s.trim().trim_matches('\'').trim_matches('"').trim().to_string();
            Some((unquote(k), unquote(v)))
        })
        .map(|(k, v)| normalise(k, v))
        .collect()
}

fn normalise(k: String, v: String) -> (String, String) {
    if k == "class" {
        let short = v.rsplit('.').next().unwrap_or(&v).to_string();
        (k, short)
    } else {
        (k, v)
    }
}

/// A keyspace as the server has it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyspaceState {
    pub replication: BTreeMap<String, String>,
    pub durable_writes: bool,
}

impl KeyspaceState {
    /// What a replication map (CQL) and durable_writes ask for.
    pub fn asked(replication: &str, durable_writes: bool) -> KeyspaceState {
        KeyspaceState {
            replication: parse_replication(replication),
            durable_writes,
        }
    }
}

pub async fn keyspace(session: &Session, ks: &str) -> Result<Option<KeyspaceState>> {
    let r = session
        .query_unpaged(
            "SELECT replication, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (ks,),
        )
        .await?
        .into_rows_result()?;
    let Some(row) = r.maybe_first_row::<(BTreeMap<String, String>, bool)>()? else {
        return Ok(None);
    };
    Ok(Some(KeyspaceState {
        replication: row.0.into_iter().map(|(k, v)| normalise(k, v)).collect(),
        durable_writes: row.1,
    }))
}

/// Makes sure keyspace `ks` exists with `replication` (CQL map) and `durable_writes`: creates
/// it, or finds it so, or (with `recreate`) drops a differing one and creates it; otherwise
/// refuses, naming what differs and the fix.
pub async fn ensure_keyspace(
    session: &Session,
    ks: &str,
    replication: &str,
    durable_writes: bool,
    recreate: bool,
) -> Result<()> {
    let wanted = KeyspaceState::asked(replication, durable_writes);
    if let Some(have) = keyspace(session, ks).await?
        && have != wanted
    {
        if !recreate {
            bail!(
                "keyspace {ks} exists with {} but this run asks for {}: it would run on a configuration other than the \
                 one it records. Pass --recreate to drop keyspace {ks} and create it as asked (its data is lost), or \
                 choose another --keyspace",
                describe_keyspace(&have),
                describe_keyspace(&wanted)
            );
        }
        drop_keyspace(session, ks).await?;
    }
    let create = format!(
        "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {replication} AND durable_writes = {durable_writes}"
    );
    session
        .query_unpaged(ddl(create.as_str()), ())
        .await
        .with_context(|| format!("the server rejected: {create}"))?;
    Ok(())
}

pub async fn drop_keyspace(session: &Session, ks: &str) -> Result<()> {
    session
        .query_unpaged(ddl(format!("DROP KEYSPACE IF EXISTS {ks}")), ())
        .await
        .with_context(|| format!("cannot drop keyspace {ks}"))?;
    let _ = session.await_schema_agreement().await;
    Ok(())
}

/// Empties each of `tables` in keyspace `ks` (TRUNCATE), so a run starts from no rows: what a
/// validated run reads back was then written by it. TRUNCATE needs every replica up; the server
/// waits up to its `truncate_request_timeout` (60 s by default), so the request may take 2 min.
pub async fn truncate(session: &Session, ks: &str, tables: &[String]) -> Result<()> {
    let tables: BTreeSet<&String> = tables.iter().filter(|t| !t.is_empty()).collect();
    for t in tables {
        let mut stmt = scylla::statement::unprepared::Statement::new(format!("TRUNCATE \"{ks}\".\"{t}\""));
        stmt.set_request_timeout(Some(std::time::Duration::from_secs(120)));
        session.query_unpaged(stmt, ()).await.with_context(|| {
            format!("cannot empty {ks}.{t} (--truncate): TRUNCATE needs every node that holds it up; start them, or drop --truncate")
        })?;
    }
    Ok(())
}

fn describe_keyspace(k: &KeyspaceState) -> String {
    let map: Vec<String> = k.replication.iter().map(|(a, b)| format!("'{a}': '{b}'")).collect();
    format!(
        "replication {{{}}}, durable_writes {}",
        map.join(", "),
        k.durable_writes
    )
}

/// A table as the server has it: its columns (name → type) and compaction options.
#[derive(Debug, Clone, PartialEq)]
pub struct TableState {
    pub columns: BTreeMap<String, String>,
    pub compaction: BTreeMap<String, String>,
}

/// Every table of keyspace `ks` as the server has it, in two queries however many there are
/// (a workload spread over a thousand tables checks them all at once).
pub async fn tables(session: &Session, ks: &str) -> Result<BTreeMap<String, TableState>> {
    let r = session
        .query_unpaged(
            "SELECT table_name, compaction FROM system_schema.tables WHERE keyspace_name = ?",
            (ks,),
        )
        .await?
        .into_rows_result()?;
    let mut all: BTreeMap<String, TableState> = BTreeMap::new();
    for row in r.rows::<(String, BTreeMap<String, String>)>()? {
        let (name, compaction) = row?;
        let columns = BTreeMap::new();
        all.insert(name, TableState { columns, compaction });
    }
    let r = session
        .query_unpaged(
            "SELECT table_name, column_name, type FROM system_schema.columns WHERE keyspace_name = ?",
            (ks,),
        )
        .await?
        .into_rows_result()?;
    for row in r.rows::<(String, String, String)>()? {
        let (name, column, kind) = row?;
        if let Some(t) = all.get_mut(&name) {
            t.columns.insert(column, kind);
        }
    }
    Ok(all)
}

/// How many tables the cluster holds, in every keyspace (each has a memtable of its own).
pub async fn table_count(session: &Session) -> Result<u64> {
    let r = session
        .query_unpaged("SELECT keyspace_name FROM system_schema.tables", ())
        .await?
        .into_rows_result()?;
    Ok(r.rows_num() as u64)
}

/// Whether compaction is on in a table's compaction options (on unless `enabled` says false).
pub fn compaction_enabled(compaction: &BTreeMap<String, String>) -> bool {
    compaction
        .get("enabled")
        .is_none_or(|v| !v.eq_ignore_ascii_case("false"))
}

/// What differs between a table's columns and the ones wanted (name → type).
pub fn column_differences(have: &BTreeMap<String, String>, wanted: &BTreeMap<String, String>) -> Vec<String> {
    let names: BTreeSet<&String> = have.keys().chain(wanted.keys()).collect();
    names
        .into_iter()
        .filter_map(|n| match (have.get(n), wanted.get(n)) {
            (Some(a), Some(b)) if a != b => Some(format!("{n} is {a}, not {b}")),
            (Some(_), None) => Some(format!("{n} is not asked for")),
            (None, Some(_)) => Some(format!("{n} is missing")),
            _ => None,
        })
        .collect()
}

/// The keyspace's schema as the server describes it (`DESCRIBE KEYSPACE`, Cassandra 4.0 and
/// later), one statement per entry; None where the server cannot describe it.
pub async fn describe(session: &Session, ks: &str) -> Option<Vec<String>> {
    let r = session
        .query_unpaged(format!("DESCRIBE KEYSPACE {ks}"), ())
        .await
        .ok()?
        .into_rows_result()
        .ok()?;
    let rows = r.rows::<(String, String, String, String)>().ok()?;
    let statements: Vec<String> = rows.filter_map(|row| row.ok().map(|r| r.3)).collect();
    (!statements.is_empty()).then_some(statements)
}

/// Column names and kinds of a table, from the server's schema tables.
pub async fn table_columns(session: &Session, ks: &str, table: &str) -> Result<Vec<(String, String)>> {
    let r = session
        .query_unpaged(
            "SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
            (ks, table),
        )
        .await?
        .into_rows_result()?;
    Ok(r.rows::<(String, String)>()?.collect::<Result<Vec<_>, _>>()?)
}

/// The keyspace's tables, or None when the keyspace does not exist yet.
pub async fn existing_tables(session: &Session, ks: &str) -> Result<Option<BTreeSet<String>>> {
    let r = session
        .query_unpaged(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (ks,),
        )
        .await?
        .into_rows_result()?;
    if r.rows_num() == 0 {
        return Ok(None);
    }
    let r = session
        .query_unpaged(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?",
            (ks,),
        )
        .await?
        .into_rows_result()?;
    Ok(Some(
        r.rows::<(String,)>()?.filter_map(|t| t.ok().map(|t| t.0)).collect(),
    ))
}

/// Drops what a rejected profile created: the keyspace if it is new, else its new tables.
pub async fn cleanup(session: &Session, ks: &str, before: Option<&BTreeSet<String>>) {
    match before {
        None => {
            let _ = drop_keyspace(session, ks).await;
        }
        Some(old) => {
            if let Ok(Some(now)) = existing_tables(session, ks).await {
                for t in now.difference(old) {
                    let _ = session
                        .query_unpaged(ddl(format!("DROP TABLE IF EXISTS {ks}.{t}")), ())
                        .await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_maps_compare_as_the_server_stores_them() {
        let asked = parse_replication("{'class': 'SimpleStrategy', 'replication_factor': 3}");
        let stored: BTreeMap<String, String> = [
            (
                "class".to_string(),
                "org.apache.cassandra.locator.SimpleStrategy".to_string(),
            ),
            ("replication_factor".to_string(), "3".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| normalise(k, v))
        .collect();
        assert_eq!(asked, stored);
        assert_ne!(
            asked,
            parse_replication("{'class':'SimpleStrategy','replication_factor':'1'}")
        );
        assert_eq!(
            parse_replication("{'class': 'NetworkTopologyStrategy', 'dc1': 3}")["dc1"],
            "3"
        );
    }

    #[test]
    fn tables_say_what_differs() {
        let m = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
        };
        let d = column_differences(
            &m(&[("pk", "text"), ("v1", "int")]),
            &m(&[("pk", "text"), ("v1", "text"), ("v2", "text")]),
        );
        assert_eq!(d, ["v1 is int, not text", "v2 is missing"]);
        assert!(compaction_enabled(&m(&[("class", "x")])));
        assert!(!compaction_enabled(&m(&[("enabled", "false")])));
    }
}
