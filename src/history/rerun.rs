//! Rerunning a run of the history: the arguments its result.json records, without what was
//! that run's own (output, quietness, history, labels), into a directory of the confirmation's,
//! recorded with the confirmation's label.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::record::{FIGURES, Record, of_dir};
use crate::measure::RunResult;

/// Where reruns are recorded and which home they use.
pub struct Rerunner<'a> {
    /// caplab's own program.
    pub exe: &'a Path,
    /// The history, as `--history` takes it.
    pub history: &'a str,
    /// Caplab's home (`--home`).
    pub home: &'a Path,
    /// The label the reruns carry (`confirm=…`).
    pub label: &'a str,
}

impl Rerunner<'_> {
    /// One rerun of `args` into `dir`: its record, once it completed.
    pub fn run(&self, args: &[String], dir: &Path) -> Result<Record> {
        let status = Command::new(self.exe)
            .args(args)
            .args(["-q", "--history", self.history, "--label", self.label, "--home"])
            .arg(self.home)
            .arg("--out")
            .arg(dir)
            .status()
            .with_context(|| format!("cannot start {}", self.exe.display()))?;
        // A run that missed its service level exits 1 with its results whole: those count.
        match of_dir(dir, &BTreeMap::new()) {
            Ok(rec) if rec.status == "completed" => Ok(rec),
            _ => bail!(
                "the rerun into {} did not complete ({status}): its output says why; the reruns before it are in the history",
                dir.display()
            ),
        }
    }
}

/// The log of figure `col` of a rerun's record `rec` (made in `dir`).
pub fn log_of(rec: &Record, col: usize, dir: &Path) -> Result<f64> {
    super::detect::value(rec, col).map(f64::ln).with_context(|| {
        format!(
            "the rerun in {} has no {} (or not a positive one)",
            dir.display(),
            FIGURES[col]
        )
    })
}

/// The command a result was made by, from its result.json.
pub fn command_of(dir: &Path) -> Result<Vec<String>> {
    let r = RunResult::load(dir).with_context(|| {
        format!(
            "{}: a confirmation reruns a run's own command from its result.json, which is gone",
            dir.display()
        )
    })?;
    Ok(r.command)
}

/// The arguments to rerun `command` with: the program, its output directory, quietness,
/// history and labels left out (the rerun gets its own).
pub fn rerun_args(command: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut it = command.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" | "-o" | "--history" | "--label" | "--home" => {
                it.next();
            }
            "-q" | "--quiet" | "--no-history" => {}
            _ if ["--out=", "--history=", "--label=", "--home="]
                .iter()
                .any(|p| a.starts_with(p)) => {}
            _ => out.push(a.clone()),
        }
    }
    match out.first().map(String::as_str) {
        Some("run") => Ok(out),
        Some(other) => bail!(
            "a confirmation reruns `caplab run`s; this series was made by `caplab {other}` (rerun it by hand, or confirm a run series)"
        ),
        None => bail!("the run's result.json records no command to rerun"),
    }
}

/// Arguments in one list and not the other (each marked `+` after, `-` before).
pub fn differs(before: &[String], after: &[String]) -> Vec<String> {
    let added = after.iter().filter(|a| !before.contains(a)).map(|a| format!("+{a}"));
    let gone = before.iter().filter(|a| !after.contains(a)).map(|a| format!("-{a}"));
    added.chain(gone).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn a_rerun_keeps_the_configuration_and_drops_what_was_this_runs_own() {
        let cmd = args(
            "/x/caplab run --hosts 127.0.0.1:9042 -q --out /r/a --rate 1000 --history h.db --label commit=abc --label=x=y --duration 2s",
        );
        assert_eq!(
            rerun_args(&cmd).unwrap(),
            args("run --hosts 127.0.0.1:9042 --rate 1000 --duration 2s")
        );
        let err = rerun_args(&args("/x/caplab capacity --sla p99<10ms")).unwrap_err();
        assert!(err.to_string().contains("made by `caplab capacity`"), "{err}");
        let before = args("run --rate 1000");
        let after = args("run --rate 1000 --fault delay");
        assert_eq!(differs(&before, &after), vec!["+--fault", "+delay"]);
    }
}
