//! The docs run: every ```console block of README.md and docs/*.md — the examples that need no
//! node: `--help` excerpts, `--check` of the shipped experiment files, `compare` of the records in
//! bench/sittings, refusals — is run by trycmd (the clap maintainers' snapshot tool) against the
//! binary, from the project's root, and its output compared (`...` lines and `[..]` elide), so an
//! example cannot drift from the program. And no doc says "not built yet" of what `--help` lists.
//! Needs no node: `scripts/test.sh --fast` runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The docs that hold examples, as trycmd cases: each copied under the target directory with a
/// `NAME.in` beside it that is the project's root (trycmd runs a case's commands there), so the
/// examples' paths are the ones a reader types.
fn cases() -> PathBuf {
    let dir = root().join("target/tmp/docs-cases");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut docs = vec![root().join("README.md")];
    docs.extend(
        std::fs::read_dir(root().join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        if !text.contains("```console") {
            continue;
        }
        let name = doc.file_stem().unwrap().to_str().unwrap();
        std::fs::write(dir.join(format!("{name}.md")), as_case(&text)).unwrap();
        std::os::unix::fs::symlink(root(), dir.join(format!("{name}.in"))).unwrap();
    }
    dir
}

/// A doc as trycmd reads it: only its ```console blocks are examples (a fence with no language,
/// which trycmd would run too, is marked text), and each ends with the newline its last line
/// printed (trycmd reads a block's lines joined, without the last one's).
fn as_case(doc: &str) -> String {
    let mut out = String::new();
    let mut open: Option<bool> = None;
    for line in doc.lines() {
        let fence = line.trim_start().starts_with("```");
        match (open, fence) {
            (None, true) => {
                let console = line.trim_start() == "```console";
                open = Some(console);
                out.push_str(if line.trim_start() == "```" { "```text" } else { line });
            }
            (Some(console), true) => {
                if console {
                    out.push('\n');
                }
                open = None;
                out.push_str(line);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_docs_examples_run_as_written() {
    let dir = cases();
    let home = root().join("target/tmp/docs-home");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    trycmd::TestCases::new()
        .register_bin("caplab", Path::new(env!("CARGO_BIN_EXE_caplab")))
        .env("CAPLAB_HOME", home.to_str().unwrap())
        .env("CAPLAB_HISTORY", home.join("history.db").to_str().unwrap())
        .case(dir.join("*.md"));
}

/// Every `--help` of every command, as one text.
fn all_help() -> String {
    let caplab = env!("CARGO_BIN_EXE_caplab");
    let help = |args: &[&str]| {
        let o = Command::new(caplab).args(args).arg("--help").output().unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let top = help(&[]);
    let mut out = top.clone();
    let commands = subcommands(&top);
    for c in &commands {
        let text = help(&[c]);
        // Subcommands of a subcommand (`history check`, `node start`).
        let subs = subcommands(&text);
        out.push_str(&text);
        for s in subs {
            out.push_str(&help(&[c, &s]));
        }
    }
    out.to_lowercase()
}

/// The commands a `--help` text lists under "Commands:", `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    help.split("Commands:")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect()
}

/// The words that carry a sentence's meaning (four letters or more, not the commonest).
fn words(text: &str) -> Vec<String> {
    const COMMON: [&str; 12] = [
        "with", "that", "this", "from", "what", "when", "each", "they", "them", "their", "then", "than",
    ];
    text.split(|c: char| !c.is_alphanumeric() && c != '-')
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 4 && !COMMON.contains(&w.as_str()))
        .collect()
}

/// A doc that says something is not built yet must not be about a flag `--help` lists: each
/// such sentence's flags must be unknown to every command, and three quarters of its words must
/// not be in one flag's help (docs/replay.md said "Not built yet (issue 74): every operation as Parquet"
/// long after `--ops-parquet` wrote every operation as a Parquet row).
#[test]
fn no_doc_says_not_built_yet_of_what_help_lists() {
    let help = all_help();
    let entries: Vec<&str> = help.split("\n  ").filter(|e| e.trim_start().starts_with('-')).collect();
    assert!(entries.len() > 50, "the flags of every command: {}", entries.len());
    let mut docs = vec![root().join("README.md")];
    docs.extend(
        std::fs::read_dir(root().join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    for doc in docs.iter().filter(|p| p.extension().is_some_and(|e| e == "md")) {
        let text = std::fs::read_to_string(doc).unwrap();
        for (i, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            // A doc quoting the words (as this test's own description does) says nothing unbuilt.
            let Some(at) = lower.find("not built yet").filter(|&at| !lower[..at].ends_with('"')) else {
                continue;
            };
            let said = &line[at..];
            let place = format!("{}:{}: {line}", doc.display(), i + 1);
            for flag in said
                .split_whitespace()
                .filter(|w| w.trim_matches('`').starts_with("--"))
            {
                let flag = flag.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
                assert!(!help.contains(&format!("{flag} ")), "{place}: --help lists {flag}");
            }
            let w = words(said.split_once(':').map_or(said, |(_, rest)| rest));
            if w.len() < 2 {
                continue;
            }
            for e in &entries {
                let shared = w.iter().filter(|x| e.contains(x.as_str())).count();
                assert!(
                    4 * shared < 3 * w.len(),
                    "{place}: most of it is what --help says of{}",
                    e.lines().next().unwrap_or_default()
                );
            }
        }
    }
}
