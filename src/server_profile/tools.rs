//! async-profiler's agent and converter, fetched from Maven Central
//! (`tools.profiler:async-profiler`, whose jar carries the Linux native libraries, and
//! `tools.profiler:jfr-converter`) and cached like Cassandra's jars; the converter run on a
//! recording; and whether this machine lets the agent use perf events.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cluster::Home;
use crate::cluster::maven::{self, Artifact};

pub const ASYNC_PROFILER: &str = "4.6";
pub const JFR_CONVERTER: &str = "4.5";

/// The agent library and the converter jar, ready to use.
#[derive(Debug, Clone)]
pub struct Tools {
    pub agent: PathBuf,
    pub converter: PathBuf,
    pub version: String,
}

/// The folder inside async-profiler's jar holding this machine's library.
fn platform() -> Result<&'static str> {
    if std::env::consts::OS != "linux" {
        bail!(
            "server profiling attaches async-profiler to local nodes on Linux; this is {}",
            std::env::consts::OS
        );
    }
    match std::env::consts::ARCH {
        "x86_64" => Ok("linux-x64"),
        "aarch64" => Ok("linux-arm64"),
        other => bail!(
            "async-profiler ships Linux libraries for x86_64 and aarch64 only; this machine is {other}: \
             drop --server-profile"
        ),
    }
}

impl Tools {
    /// Fetches (first use) and unpacks the tools into the cache.
    pub fn get(home: &Home, say: &mut dyn FnMut(&str)) -> Result<Tools> {
        let platform = platform()?;
        let dir = home.cache.join("async-profiler").join(ASYNC_PROFILER);
        let artifacts = [
            Artifact {
                group: "tools.profiler",
                artifact: "async-profiler",
                version: ASYNC_PROFILER,
            },
            Artifact {
                group: "tools.profiler",
                artifact: "jfr-converter",
                version: JFR_CONVERTER,
            },
        ];
        let what = "async-profiler and its converter";
        let explain = |output: &str, log: &Path| maven::explain_other(what, output, log);
        let lib = maven::fetch(&dir, &artifacts, false, what, &explain, say)?;
        let agent = dir.join(platform).join("libasyncProfiler.so");
        if !agent.exists() {
            let jar = lib.join(format!("async-profiler-{ASYNC_PROFILER}.jar"));
            unpack(&jar, &format!("{platform}/libasyncProfiler.so"), &agent)?;
        }
        Ok(Tools {
            agent,
            converter: lib.join(format!("jfr-converter-{JFR_CONVERTER}.jar")),
            version: ASYNC_PROFILER.into(),
        })
    }

    /// Runs the converter (`jfrconv`'s arguments) with `java`; its output on failure.
    pub fn convert(&self, java: &Path, args: &[String]) -> Result<()> {
        let out = Command::new(java)
            .arg("-Xmx512m")
            .arg("-cp")
            .arg(&self.converter)
            .arg("one.convert.Main")
            .args(args)
            .output()
            .with_context(|| format!("cannot run {} for the profile converter", java.display()))?;
        if !out.status.success() {
            bail!(
                "the profile converter failed ({}): {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }
}

/// Copies `entry` of the zip `jar` to `to` (through a temporary file, so a half-written library
/// is never loaded).
fn unpack(jar: &Path, entry: &str, to: &Path) -> Result<()> {
    let file = std::fs::File::open(jar).with_context(|| format!("cannot open {}", jar.display()))?;
    let mut zip = zip::ZipArchive::new(file).with_context(|| format!("{} is not a jar", jar.display()))?;
    let mut e = zip
        .by_name(entry)
        .with_context(|| format!("{} has no {entry}", jar.display()))?;
    let mut bytes = Vec::new();
    e.read_to_end(&mut bytes)?;
    std::fs::create_dir_all(to.parent().expect("a file in a folder"))?;
    let tmp = to.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, to).with_context(|| format!("cannot write {}", to.display()))
}

/// Whether this process (and so a node it started, as the same user) may open perf events as
/// async-profiler's `cpu` sampler does (a software CPU clock with kernel stacks); if not,
/// the agent falls back to `ctimer`, and the reason says what to change.
pub fn perf_events() -> Result<(), String> {
    // perf_event_attr's first fields (PERF_ATTR_SIZE_VER0 = 64 bytes): type, size, config,
    // sample_period, sample_type, read_format, flags (bit 0: disabled).
    let mut attr = [0u64; 8];
    attr[0] = 1 | (64u64 << 32); // PERF_TYPE_SOFTWARE, size 64
    attr[1] = 0; // PERF_COUNT_SW_CPU_CLOCK
    attr[2] = 1_000_000_000;
    attr[3] = 1 << 5; // PERF_SAMPLE_CALLCHAIN
    attr[5] = 1; // disabled
    // SAFETY: attr is a valid, zero-padded perf_event_attr of the size it declares; the
    // returned descriptor is closed at once.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), 0, -1, -1, 0) };
    if fd >= 0 {
        // SAFETY: fd was just returned by the kernel and is not used elsewhere.
        unsafe { libc::close(fd as i32) };
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    Err(format!(
        "perf events are not permitted here ({err}; kernel.perf_event_paranoid = {paranoid}): CPU samples come \
         from ctimer instead (no kernel frames, 4-10 ms resolution). For perf events run \
         'sysctl kernel.perf_event_paranoid=1' (or run caplab as root); in a container also allow \
         perf_event_open (docker: --cap-add PERFMON and a seccomp profile that permits it)"
    ))
}
