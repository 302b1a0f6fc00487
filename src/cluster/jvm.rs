//! The JVM command line of a Cassandra node: heap, garbage collector flag sets, the unified
//! GC log, the module-system openings Cassandra needs on JDK 11+, and system properties.

use anyhow::{Result, bail};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Garbage collectors with a flag set each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Gc {
    /// G1 as Cassandra ships it (pause goal 300 ms, IHOP 70 %).
    G1,
    /// ZGC (non-generational on JDK 17 and 21).
    Zgc,
    /// Generational ZGC (JDK 21+).
    ZgcGenerational,
    /// Shenandoah.
    Shenandoah,
    /// The throughput (Parallel) collector.
    Parallel,
}

impl Gc {
    pub fn name(self) -> &'static str {
        match self {
            Gc::G1 => "g1",
            Gc::Zgc => "zgc",
            Gc::ZgcGenerational => "zgc-generational",
            Gc::Shenandoah => "shenandoah",
            Gc::Parallel => "parallel",
        }
    }

    /// The collector's flags; the sets follow the published GC comparison of Cassandra 4.0
    /// (G1 pause goal and IHOP; ZGC and Shenandoah with transparent huge pages).
    pub fn flags(self, jdk_major: u32) -> Result<Vec<&'static str>> {
        Ok(match self {
            Gc::G1 => vec![
                "-XX:+UseG1GC",
                "-XX:+ParallelRefProcEnabled",
                "-XX:MaxGCPauseMillis=300",
                "-XX:InitiatingHeapOccupancyPercent=70",
                "-XX:G1RSetUpdatingPauseTimePercent=5",
            ],
            Gc::Zgc => vec!["-XX:+UseZGC", "-XX:+UseTransparentHugePages"],
            Gc::ZgcGenerational => {
                if jdk_major < 21 {
                    bail!(
                        "generational ZGC needs JDK 21 or newer (this node's JDK is {jdk_major}): pass --java 21 or use --gc zgc"
                    );
                }
                vec!["-XX:+UseZGC", "-XX:+ZGenerational", "-XX:+UseTransparentHugePages"]
            }
            Gc::Shenandoah => vec!["-XX:+UseShenandoahGC", "-XX:+UseTransparentHugePages"],
            Gc::Parallel => vec!["-XX:+UseParallelGC"],
        })
    }
}

impl std::fmt::Display for Gc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How the node's JVM compiles Cassandra's code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Jit {
    /// As Cassandra ships: C1 first, then C2 for what runs hot.
    #[default]
    Tiered,
    /// C1 only (`-XX:TieredStopAtLevel=1`): code compiles quickly and cheaply and runs slower.
    C1,
}

impl Jit {
    pub fn name(self) -> &'static str {
        match self {
            Jit::Tiered => "tiered",
            Jit::C1 => "c1",
        }
    }

    pub fn is_tiered(&self) -> bool {
        *self == Jit::Tiered
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Jit::Tiered => &[],
            Jit::C1 => &["-XX:TieredStopAtLevel=1"],
        }
    }
}

impl std::fmt::Display for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A heap size as the JVM writes it (`8G`, `512M`), parsed to bytes.
pub fn parse_heap(text: &str) -> Result<u64> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "g" | "gb" | "gib" => 1 << 30,
        "m" | "mb" | "mib" => 1 << 20,
        _ => 0,
    };
    match num.parse::<u64>() {
        Ok(n) if mult > 0 && n * mult >= 256 << 20 => Ok(n * mult),
        _ => bail!("--heap '{text}' is not a heap size: write it like 8G or 512M (at least 256M)"),
    }
}

/// The default heap: min(RAM/4, 8 GiB) shared by the nodes on this machine, at least 512 MiB.
pub fn default_heap(total_ram: u64, nodes: u32) -> u64 {
    let per_node = (total_ram / 4).min(8 << 30) / u64::from(nodes.max(1));
    // Round down to whole MiB so -Xmx reads cleanly.
    (per_node >> 20 << 20).max(512 << 20)
}

/// `6144M` for 6 GiB: what -Xmx takes.
pub fn heap_flag_value(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 30) {
        format!("{}G", bytes >> 30)
    } else {
        format!("{}M", bytes >> 20)
    }
}

/// Module-system openings Cassandra needs on JDK 11+ (server and nodetool alike).
pub const JPMS_FLAGS: &[&str] = &[
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports=java.sql/java.sql=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.math=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
];

/// Everything the node's JVM is started with, before the main class.
pub struct ServerJvm<'a> {
    pub heap: u64,
    pub gc: Gc,
    pub jit: Jit,
    pub jdk_major: u32,
    pub jvm_opts: &'a [String],
    pub conf_dir: &'a Path,
    pub data_dir: &'a Path,
    pub log_dir: &'a Path,
    pub jmx_port: u16,
    pub classpath: &'a Path,
}

impl ServerJvm<'_> {
    pub fn gc_log(&self) -> std::path::PathBuf {
        self.log_dir.join("gc.log")
    }

    pub fn args(&self) -> Result<Vec<String>> {
        let heap = heap_flag_value(self.heap);
        let mut a: Vec<String> = vec![format!("-Xms{heap}"), format!("-Xmx{heap}")];
        a.extend(self.gc.flags(self.jdk_major)?.into_iter().map(String::from));
        a.extend(self.jit.flags().iter().map(|f| f.to_string()));
        a.push(format!(
            "-Xlog:gc*,safepoint:file={}:time,uptime,level,tags:filecount=10,filesize=20M",
            self.gc_log().display()
        ));
        a.extend(
            [
                "-Xss256k",
                "-XX:+UseTLAB",
                "-XX:+ResizeTLAB",
                "-XX:+PerfDisableSharedMem",
                "-XX:StringTableSize=1000003",
                "-XX:+ExitOnOutOfMemoryError",
                "-Djava.net.preferIPv4Stack=true",
                "-Djdk.attach.allowAttachSelf=true",
                "-Dcassandra-foreground=yes",
                // Local nodes need not wait for a real network's gossip to settle, nor give it 2 s
                // to carry a node's shutdown to its peers (on loopback they have it at once: every
                // stop took 2 s longer, a node's and an experiment step's alike).
                "-Dcassandra.ring_delay_ms=1000",
                "-Dcassandra.skip_wait_for_gossip_to_settle=0",
                "-Dcassandra.shutdown_announce_in_ms=200",
                // The memtable's per-row overhead estimated from 1,000 rows instead of 100,000
                // (Cassandra's own tests take 100): 180 bytes against 181, and a start on a
                // third less CPU (bench/results/provisioning.md, "The memtable's overhead
                // estimate at a node's start").
                "-Dcassandra.memtable_row_overhead_computation_step=1000",
            ]
            .map(String::from),
        );
        a.extend(JPMS_FLAGS.iter().map(|s| s.to_string()));
        if self.jdk_major >= 18 {
            // As Cassandra's own jvm21-server.options: JDK 18+ refuses System.setSecurityManager
            // (which Cassandra's startup calls) unless allowed.
            a.push("-Djava.security.manager=allow".to_string());
        }
        a.push(format!(
            "-Dcassandra.config=file://{}",
            self.conf_dir.join("cassandra.yaml").display()
        ));
        a.push(format!(
            "-Dlogback.configurationFile={}",
            self.conf_dir.join("logback.xml").display()
        ));
        a.push(format!("-Dcassandra.storagedir={}", self.data_dir.display()));
        a.push(format!("-Dcassandra.logdir={}", self.log_dir.display()));
        a.push(format!("-Dcassandra.jmx.local.port={}", self.jmx_port));
        // User options last, so they win over the defaults above.
        a.extend(self.jvm_opts.iter().cloned());
        a.push("-cp".into());
        a.push(format!("{}/*", self.classpath.display()));
        a.push("org.apache.cassandra.service.CassandraDaemon".into());
        Ok(a)
    }
}

/// logback configuration: system.log at INFO, debug.log at DEBUG for Cassandra's own
/// classes, nothing on the console but errors.
pub const LOGBACK_XML: &str = r#"<configuration scan="false">
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <filter class="ch.qos.logback.classic.filter.ThresholdFilter"><level>INFO</level></filter>
    <file>${cassandra.logdir}/system.log</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.SizeAndTimeBasedRollingPolicy">
      <fileNamePattern>${cassandra.logdir}/system.log.%d{yyyy-MM-dd}.%i.zip</fileNamePattern>
      <maxFileSize>50MB</maxFileSize><maxHistory>7</maxHistory><totalSizeCap>1GB</totalSizeCap>
    </rollingPolicy>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <filter class="ch.qos.logback.classic.filter.ThresholdFilter"><level>ERROR</level></filter>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="INFO">
    <appender-ref ref="SYSTEMLOG"/>
    <appender-ref ref="STDOUT"/>
  </root>
</configuration>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_sizes() {
        assert_eq!(parse_heap("8G").unwrap(), 8 << 30);
        assert_eq!(parse_heap("512m").unwrap(), 512 << 20);
        assert_eq!(parse_heap("2048MiB").unwrap(), 2 << 30);
        for bad in ["", "8", "8T", "G", "100M", "-1G"] {
            assert!(parse_heap(bad).is_err(), "{bad}");
        }
        assert_eq!(heap_flag_value(6 << 30), "6G");
        assert_eq!(heap_flag_value(1536 << 20), "1536M");
    }

    #[test]
    fn default_heap_is_a_quarter_of_ram_capped_and_shared() {
        assert_eq!(default_heap(24 << 30, 1), 6 << 30);
        assert_eq!(default_heap(64 << 30, 1), 8 << 30);
        assert_eq!(default_heap(24 << 30, 3), 2 << 30);
        assert_eq!(default_heap(1 << 30, 4), 512 << 20);
    }

    fn jvm(gc: Gc, major: u32, opts: &[String]) -> Result<Vec<String>> {
        jvm_with(gc, Jit::Tiered, major, opts)
    }

    fn jvm_with(gc: Gc, jit: Jit, major: u32, opts: &[String]) -> Result<Vec<String>> {
        let p = Path::new("/n");
        ServerJvm {
            heap: 2 << 30,
            gc,
            jit,
            jdk_major: major,
            jvm_opts: opts,
            conf_dir: p,
            data_dir: p,
            log_dir: Path::new("/n/logs"),
            jmx_port: 7299,
            classpath: Path::new("/lib"),
        }
        .args()
    }

    #[test]
    fn each_collector_gets_its_flags_and_a_gc_log() {
        for (gc, flag) in [
            (Gc::G1, "-XX:+UseG1GC"),
            (Gc::Zgc, "-XX:+UseZGC"),
            (Gc::Shenandoah, "-XX:+UseShenandoahGC"),
            (Gc::Parallel, "-XX:+UseParallelGC"),
        ] {
            let a = jvm(gc, 17, &[]).unwrap();
            assert!(a.contains(&flag.to_string()), "{gc}: {a:?}");
            assert!(
                a.iter()
                    .any(|f| f.starts_with("-Xlog:gc*") && f.contains("file=/n/logs/gc.log"))
            );
            assert_eq!(
                a.iter()
                    .filter(|f| f.starts_with("-XX:+Use") && f.ends_with("GC"))
                    .count(),
                1,
                "{gc}: one collector only"
            );
        }
        assert!(
            jvm(Gc::ZgcGenerational, 17, &[])
                .unwrap_err()
                .to_string()
                .contains("JDK 21")
        );
        assert!(
            jvm(Gc::ZgcGenerational, 21, &[])
                .unwrap()
                .contains(&"-XX:+ZGenerational".to_string())
        );
    }

    #[test]
    fn command_line_has_heap_jpms_properties_and_user_options_last() {
        let a = jvm(Gc::G1, 17, &["-XX:MaxGCPauseMillis=50".into()]).unwrap();
        assert_eq!(&a[..2], &["-Xms2G", "-Xmx2G"]);
        for needed in [
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/java.io=ALL-UNNAMED",
            "-Dcassandra.jmx.local.port=7299",
            "-Dcassandra.config=file:///n/cassandra.yaml",
        ] {
            assert!(a.contains(&needed.to_string()), "{needed}");
        }
        let user = a.iter().position(|f| f == "-XX:MaxGCPauseMillis=50").unwrap();
        let default = a.iter().position(|f| f == "-XX:MaxGCPauseMillis=300").unwrap();
        assert!(user > default, "user options must come after defaults to win");
        assert_eq!(a.last().unwrap(), "org.apache.cassandra.service.CassandraDaemon");
    }

    #[test]
    fn c1_alone_stops_tiered_compilation_at_c1_and_a_users_option_still_wins() {
        let stop = |a: &[String]| {
            a.iter()
                .filter(|f| f.starts_with("-XX:TieredStopAtLevel"))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert!(
            stop(&jvm(Gc::G1, 17, &[]).unwrap()).is_empty(),
            "tiered is the JVM's own"
        );
        assert_eq!(
            stop(&jvm_with(Gc::G1, Jit::C1, 17, &[]).unwrap()),
            ["-XX:TieredStopAtLevel=1"]
        );
        let a = jvm_with(Gc::G1, Jit::C1, 17, &["-XX:TieredStopAtLevel=4".into()]).unwrap();
        assert_eq!(
            stop(&a),
            ["-XX:TieredStopAtLevel=1", "-XX:TieredStopAtLevel=4"],
            "the user's last"
        );
    }
}
