//! Reading the CQL a cassandra-stress profile carries: the table's columns and primary key
//! from its CREATE TABLE, names and maps from CREATE KEYSPACE, identifiers as the server
//! stores them, and statements made safe to rerun.

use anyhow::{Context, Result, bail};

/// A table as its CREATE TABLE statement declares it.
#[derive(Debug)]
pub struct Table {
    pub name: String,
    /// (name, type as written), in declaration order.
    pub columns: Vec<(String, String)>,
    pub partition: Vec<String>,
    pub clustering: Vec<String>,
}

impl Table {
    /// What cassandra-stress's insert does: `UPDATE t SET v = ?, l = l + ? WHERE k = ? AND c = ?`
    /// (appending to lists, sets and counters), or an INSERT for a table of keys only.
    pub fn insert_cql(&self) -> String {
        let keys: Vec<&String> = self.partition.iter().chain(&self.clustering).collect();
        let values: Vec<&(String, String)> = self.columns.iter().filter(|(c, _)| !keys.contains(&c)).collect();
        let table = quote(&self.name);
        if values.is_empty() {
            let names: Vec<String> = keys.iter().map(|k| quote(k)).collect();
            let marks = vec!["?"; names.len()].join(", ");
            return format!("INSERT INTO {table} ({}) VALUES ({marks})", names.join(", "));
        }
        let sets: Vec<String> = values
            .iter()
            .map(|(c, t)| {
                let t = t.to_ascii_lowercase().replace(' ', "");
                let c = quote(c);
                if t == "counter" || t.starts_with("list<") || t.starts_with("set<") {
                    format!("{c} = {c} + ?")
                } else {
                    format!("{c} = ?")
                }
            })
            .collect();
        let conds: Vec<String> = keys.iter().map(|k| format!("{} = ?", quote(k))).collect();
        format!("UPDATE {table} SET {} WHERE {}", sets.join(", "), conds.join(" AND "))
    }
}

pub fn parse_table(ddl: &str) -> Result<Table> {
    let name = name_after(ddl, &["create", "table"]).context("table_definition is not a CREATE TABLE statement")?;
    let open = ddl.find('(').context("table_definition has no column list")?;
    let body = &ddl[open + 1..open + matching(&ddl[open..]).context("table_definition: unbalanced parentheses")?];
    let mut columns = Vec::new();
    let mut partition = Vec::new();
    let mut clustering = Vec::new();
    for item in split_top(body, ',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let lower = item.to_ascii_lowercase();
        if lower.starts_with("primary key") || lower.starts_with("primary\tkey") {
            let open = item.find('(').context("PRIMARY KEY without a column list")?;
            let list =
                &item[open + 1..open + matching(&item[open..]).context("PRIMARY KEY: unbalanced parentheses")?];
            let parts = split_top(list, ',');
            let first = parts.first().map(|s| s.trim()).unwrap_or_default();
            match first.strip_prefix('(').and_then(|f| f.strip_suffix(')')) {
                Some(inner) => partition.extend(inner.split(',').map(|c| ident(c.trim()))),
                None => partition.push(ident(first)),
            }
            clustering.extend(parts.iter().skip(1).map(|c| ident(c.trim())));
            continue;
        }
        let (col, typ) = split_ident(item);
        let mut typ = typ.trim().to_string();
        let tl = typ.to_ascii_lowercase();
        if let Some(stripped) = tl.strip_suffix("primary key") {
            partition.push(ident(&col));
            typ = typ[..stripped.len()].trim().to_string();
        } else if let Some(stripped) = tl.strip_suffix("static") {
            typ = typ[..stripped.len()].trim().to_string();
        }
        columns.push((ident(&col), typ));
    }
    if partition.is_empty() {
        bail!("table_definition declares no PRIMARY KEY");
    }
    for k in partition.iter().chain(&clustering) {
        if !columns.iter().any(|(c, _)| c == k) {
            bail!("table_definition's PRIMARY KEY names '{k}', which is not among its columns");
        }
    }
    Ok(Table {
        name,
        columns,
        partition,
        clustering,
    })
}

/// The offset of the parenthesis closing the one `s` starts with.
pub fn matching(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits on `sep` outside (), <> and quotes.
pub fn split_top(s: &str, sep: char) -> Vec<&str> {
    let (mut depth, mut quoted, mut start, mut out) = (0i32, false, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '"' | '\'' => quoted = !quoted,
            '(' | '<' if !quoted => depth += 1,
            ')' | '>' if !quoted => depth -= 1,
            c if c == sep && depth == 0 && !quoted => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The leading identifier (quoted or not) of `s`, and the rest.
pub fn split_ident(s: &str) -> (String, &str) {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix('"')
        && let Some(end) = rest.find('"')
    {
        return (format!("\"{}\"", &rest[..end]), &rest[end + 1..]);
    }
    let end = s.find(|c: char| c.is_whitespace()).unwrap_or(s.len());
    (s[..end].to_string(), &s[end..])
}

/// A CQL identifier as the server stores it: quoted names exactly, others in lower case.
pub fn ident(s: &str) -> String {
    let s = s.trim();
    match s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) => inner.to_string(),
        None => s.to_ascii_lowercase(),
    }
}

/// A name as CQL must write it.
pub fn quote(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        name.to_string()
    } else {
        format!("\"{name}\"")
    }
}

/// The name following the keywords `words` (and an optional IF NOT EXISTS), without its
/// keyspace, as the server stores it.
pub fn name_after(stmt: &str, words: &[&str]) -> Option<String> {
    let mut tokens = stmt.split_whitespace();
    for w in words {
        if !tokens.next()?.eq_ignore_ascii_case(w) {
            return None;
        }
    }
    let mut next = tokens.next()?;
    if next.eq_ignore_ascii_case("if") {
        tokens.next()?; // not
        tokens.next()?; // exists
        next = tokens.next()?;
    }
    let qualified = next.split(['(', ';']).next()?;
    // `ks.table` or `"Ks"."Table"`: the object's own name is the last part.
    Some(ident(qualified.rsplit('.').next()?))
}

/// The tables a list of schema statements creates, named as the server stores them.
pub fn created_tables(schema: &[String]) -> Vec<String> {
    schema
        .iter()
        .filter_map(|s| name_after(s, &["create", "table"]))
        .collect()
}

/// The `{...}` that follows `key =` in a statement.
pub fn braces_after<'a>(stmt: &'a str, key: &str) -> Option<&'a str> {
    let at = stmt.to_ascii_lowercase().find(key)?;
    let open = at + stmt[at..].find('{')?;
    let close = open + stmt[open..].find('}')?;
    Some(&stmt[open..=close])
}

/// The word that follows `key =` in a statement.
pub fn word_after<'a>(stmt: &'a str, key: &str) -> Option<&'a str> {
    let at = stmt.to_ascii_lowercase().find(key)? + key.len();
    let rest = stmt[at..].trim_start().strip_prefix('=')?.trim_start();
    rest.split(|c: char| !c.is_ascii_alphanumeric()).next()
}

/// A CREATE statement made safe to rerun (IF NOT EXISTS), without its final semicolon.
pub fn if_not_exists(stmt: &str) -> String {
    let s = stmt.trim().trim_end_matches(';').trim();
    let words: Vec<(usize, &str)> = s
        .split_whitespace()
        .take(6)
        .map(|w| (w.as_ptr() as usize - s.as_ptr() as usize, w))
        .collect();
    let is = |i: usize, kw: &str| words.get(i).is_some_and(|(_, w)| w.eq_ignore_ascii_case(kw));
    // After CREATE [MATERIALIZED] TABLE|TYPE|INDEX|VIEW.
    let n = if is(1, "materialized") { 3 } else { 2 };
    if !is(0, "create") || is(n, "if") || words.len() <= n {
        return s.to_string();
    }
    let at = words[n].0;
    format!("{}IF NOT EXISTS {}", &s[..at], &s[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_a_schema_creates_are_named_as_the_server_stores_them() {
        let schema = [
            "CREATE TABLE IF NOT EXISTS kv (k text PRIMARY KEY, v blob)",
            "create table ks.\"Events\"(id int PRIMARY KEY)",
            "CREATE TYPE IF NOT EXISTS point (x int)",
            "CREATE TABLE\n  Readings (s int, t timestamp, PRIMARY KEY (s, t))",
        ]
        .map(String::from);
        assert_eq!(created_tables(&schema), ["kv", "Events", "readings"]);
    }

    #[test]
    fn statements_become_safe_to_rerun() {
        assert_eq!(
            if_not_exists("CREATE TYPE item (a int);"),
            "CREATE TYPE IF NOT EXISTS item (a int)"
        );
        assert_eq!(
            if_not_exists("create materialized view mv as select"),
            "create materialized view IF NOT EXISTS mv as select"
        );
    }

    #[test]
    fn tables_read_their_keys() {
        let t =
            parse_table("CREATE TABLE ks.\"Hits\" (page text, day int, \"Views\" counter, PRIMARY KEY ((page), day))")
                .unwrap();
        assert_eq!(t.name, "Hits");
        assert_eq!(
            (t.partition.clone(), t.clustering.clone()),
            (vec!["page".to_string()], vec!["day".to_string()])
        );
        assert_eq!(
            t.insert_cql(),
            "UPDATE \"Hits\" SET \"Views\" = \"Views\" + ? WHERE page = ? AND day = ?"
        );
        assert!(
            parse_table("CREATE TABLE t (a int)")
                .unwrap_err()
                .to_string()
                .contains("no PRIMARY KEY")
        );
    }
}
