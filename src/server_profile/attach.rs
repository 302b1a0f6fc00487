//! HotSpot's dynamic attach on Linux, spoken directly (what `jattach` and async-profiler's
//! `asprof` do): no helper JVM is started, so starting and stopping a profile at the edges of
//! the measured window takes milliseconds. Only `load` (an agent library with its options) is
//! needed here.

use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The socket a JVM listens on once its attach listener runs.
fn socket_path(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/.java_pid{pid}"))
}

fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// Starts the JVM's attach listener if it does not run yet: HotSpot starts it on SIGQUIT
/// when it finds `.attach_pid<pid>` in its working directory (or /tmp).
fn start_listener(pid: u32) -> Result<()> {
    let socket = socket_path(pid);
    if is_socket(&socket) {
        return Ok(());
    }
    let trigger = [
        PathBuf::from(format!("/proc/{pid}/cwd/.attach_pid{pid}")),
        PathBuf::from(format!("/tmp/.attach_pid{pid}")),
    ]
    .into_iter()
    .find(|p| std::fs::File::create(p).is_ok())
    .with_context(|| {
        format!("cannot create the attach trigger file for JVM {pid} (in its working directory or /tmp)")
    })?;
    let sent = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGQUIT,
    );
    let began = Instant::now();
    let mut ok = sent.is_ok();
    while ok && !is_socket(&socket) {
        if began.elapsed() > Duration::from_secs(6) {
            ok = false;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&trigger);
    if !ok {
        bail!(
            "JVM {pid} did not open its attach socket {} within 6 s: it may run with -XX:+DisableAttachMechanism \
             or as another user (attach needs the same user as the JVM)",
            socket.display()
        );
    }
    Ok(())
}

/// Loads the agent `library` (an absolute path) into JVM `pid` with `options`; returns the
/// agent's own return code (`Agent_OnAttach`), which is 0 when it did what it was asked.
pub fn load_agent(pid: u32, library: &Path, options: &str) -> Result<i32> {
    start_listener(pid)?;
    let mut s = UnixStream::connect(socket_path(pid))
        .with_context(|| format!("cannot connect to JVM {pid}'s attach socket"))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    // Protocol version 1, the command, and exactly three arguments, each NUL-terminated.
    let mut request = Vec::new();
    for part in ["1", "load", &library.to_string_lossy(), "true", options] {
        request.extend_from_slice(part.as_bytes());
        request.push(0);
    }
    s.write_all(&request)
        .with_context(|| format!("cannot send the load command to JVM {pid}"))?;
    let mut response = String::new();
    s.read_to_string(&mut response)
        .with_context(|| format!("no answer from JVM {pid} to the load command"))?;
    parse_response(&response).with_context(|| format!("JVM {pid} refused to load {}", library.display()))
}

/// The answer is the command's result code on the first line, then (JDK 9+)
/// `return code: N` with the agent's own result; anything else is the JVM's error text.
fn parse_response(text: &str) -> Result<i32> {
    let mut lines = text.lines();
    let code: i32 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .with_context(|| format!("unexpected answer '{}'", text.trim()))?;
    let rest: Vec<&str> = lines.collect();
    if code != 0 {
        bail!("result {code}: {}", rest.join(" ").trim());
    }
    match rest.first() {
        Some(l) if l.starts_with("return code: ") => l["return code: ".len()..]
            .trim()
            .parse()
            .with_context(|| format!("unexpected answer '{}'", text.trim())),
        Some(l) if l.trim().parse::<i32>().is_ok() => Ok(l.trim().parse()?),
        Some(_) => bail!("{}", rest.join(" ").trim()),
        None => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_of_each_jdk_generation_are_read() {
        assert_eq!(parse_response("0\nreturn code: 0\n").unwrap(), 0);
        assert_eq!(parse_response("0\nreturn code: 200\n").unwrap(), 200);
        assert_eq!(parse_response("0\n100\n").unwrap(), 100);
        let e = parse_response("0\nFailed to load agent library: no such file\n").unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
        assert!(parse_response("101\nbad\n").unwrap_err().to_string().contains("101"));
        assert!(parse_response("").is_err());
    }
}
