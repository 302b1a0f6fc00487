//! DuckDB (PyPI's duckdb, installed by scripts/setup.sh --test) reading what caplab wrote, as a
//! user analysing a run elsewhere would.

use serde_json::Value;
use std::process::Command;

const QUERY: &str = "import duckdb, json, sys
r = duckdb.sql(sys.argv[1])
print(json.dumps([dict(zip(r.columns, row)) for row in r.fetchall()], default=str))";

/// The rows `sql` returns, each as its columns by name.
pub fn query(sql: &str) -> Vec<Value> {
    let o = Command::new("python3")
        .args(["-c", QUERY, sql])
        .output()
        .expect("python3");
    assert!(
        o.status.success(),
        "DuckDB: {sql}\n{}\n(scripts/setup.sh --test installs duckdb)",
        String::from_utf8_lossy(&o.stderr)
    );
    match serde_json::from_slice(&o.stdout).unwrap() {
        Value::Array(rows) => rows,
        other => panic!("{other}"),
    }
}
