//! Moving a statement to another keyspace (`caplab run --replay … --keyspace K`): the keyspace
//! qualifying a table after FROM, INTO, UPDATE, TABLE, ON, INDEX or EXISTS, and the one a
//! CREATE KEYSPACE names, is replaced; string literals and everything else are left as written.

/// Words after which `ks.table` names a table.
const BEFORE_TABLE: [&str; 7] = ["FROM", "INTO", "UPDATE", "TABLE", "ON", "INDEX", "EXISTS"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    /// A word or a double-quoted name.
    Name,
    Dot,
    Other,
}

/// The tokens of a statement that matter here, as (kind, byte range); string literals and
/// comments count as `Other`.
fn tokens(cql: &str) -> Vec<(Tok, usize, usize)> {
    let b = cql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let start = i;
        let kind = match b[i] {
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() {
                    if b[i] == q && b.get(i + 1) == Some(&q) {
                        i += 2;
                    } else if b[i] == q {
                        break;
                    } else {
                        i += 1;
                    }
                }
                i += 1;
                if q == b'"' { Tok::Name } else { Tok::Other }
            }
            c if word(c) => {
                while i < b.len() && word(b[i]) {
                    i += 1;
                }
                Tok::Name
            }
            b'.' => {
                i += 1;
                Tok::Dot
            }
            _ => {
                i += 1;
                Tok::Other
            }
        };
        out.push((kind, start, i.min(b.len())));
    }
    out
}

fn unquote(name: &str) -> String {
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => name.to_ascii_lowercase(),
    }
}

/// Where keyspace names stand in a statement: (byte range, the keyspace).
fn keyspace_names(cql: &str) -> Vec<(usize, usize, String)> {
    let t = tokens(cql);
    let text = |k: usize| &cql[t[k].1..t[k].2];
    let mut out = Vec::new();
    for k in 1..t.len() {
        let after = text(k - 1).to_ascii_uppercase();
        let qualified = BEFORE_TABLE.contains(&after.as_str())
            && t[k].0 == Tok::Name
            && t.get(k + 1).is_some_and(|d| d.0 == Tok::Dot)
            && t.get(k + 2).is_some_and(|n| n.0 == Tok::Name);
        let made = after == "KEYSPACE"
            && t[k].0 == Tok::Name
            && !["IF", "WITH"].contains(&text(k).to_ascii_uppercase().as_str());
        let made_if = after == "EXISTS"
            && k >= 4
            && text(k - 4).eq_ignore_ascii_case("KEYSPACE")
            && t.get(k + 1).is_none_or(|d| d.0 != Tok::Dot);
        if qualified || made || made_if {
            out.push((t[k].1, t[k].2, unquote(text(k))));
        }
    }
    out
}

/// The keyspaces a statement names.
pub fn qualifiers(cql: &str) -> Vec<String> {
    keyspace_names(cql).into_iter().map(|(_, _, ks)| ks).collect()
}

/// The statement with keyspace `from` named `to` instead.
pub fn rename(cql: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(cql.len() + 16);
    let mut at = 0;
    for (start, end, ks) in keyspace_names(cql) {
        if ks == from {
            out.push_str(&cql[at..start]);
            out.push('"');
            out.push_str(&to.replace('"', "\"\""));
            out.push('"');
            at = end;
        }
    }
    out.push_str(&cql[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_tables_and_created_keyspaces_move_and_nothing_else_does() {
        let cases = [
            (
                "INSERT INTO app.users (k, v) VALUES (?, 'app.users')",
                "INSERT INTO \"copy\".users (k, v) VALUES (?, 'app.users')",
            ),
            (
                "select v from APP.users where k = ?",
                "select v from \"copy\".users where k = ?",
            ),
            (
                "UPDATE \"app\".t SET v = ? WHERE k = ?",
                "UPDATE \"copy\".t SET v = ? WHERE k = ?",
            ),
            ("SELECT v FROM users WHERE k = ?", "SELECT v FROM users WHERE k = ?"),
            ("SELECT v FROM other.users", "SELECT v FROM other.users"),
            (
                "CREATE KEYSPACE app WITH replication = {'class': 'SimpleStrategy'}",
                "CREATE KEYSPACE \"copy\" WITH replication = {'class': 'SimpleStrategy'}",
            ),
            (
                "CREATE KEYSPACE IF NOT EXISTS app WITH x",
                "CREATE KEYSPACE IF NOT EXISTS \"copy\" WITH x",
            ),
            (
                "CREATE TABLE IF NOT EXISTS app.t (k int PRIMARY KEY)",
                "CREATE TABLE IF NOT EXISTS \"copy\".t (k int PRIMARY KEY)",
            ),
            ("CREATE INDEX i ON app.t (v)", "CREATE INDEX i ON \"copy\".t (v)"),
        ];
        for (cql, want) in cases {
            assert_eq!(rename(cql, "app", "copy"), want, "{cql}");
        }
        assert_eq!(
            qualifiers("DELETE FROM app.t WHERE k = 1; SELECT * FROM b.u"),
            ["app", "b"]
        );
        assert!(qualifiers("SELECT v FROM t WHERE x = 1.5").is_empty());
    }
}
