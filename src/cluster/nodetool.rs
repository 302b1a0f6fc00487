//! Running Cassandra's NodeTool over JMX: for a local node from its own classpath, or for
//! any endpoint from the jars of the cluster's version.

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::jvm::JPMS_FLAGS;
use super::node::NodeState;

const QUIET_LOGBACK: &str = r#"<configuration><root level="OFF"/></configuration>"#;

/// Where and how NodeTool reaches a node's JMX.
#[derive(Debug, Clone)]
pub struct JmxTarget {
    pub java: PathBuf,
    /// Directory of Cassandra's jars (NodeTool is in cassandra-all).
    pub classpath: PathBuf,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    /// JMX over TLS (`--jmx-ssl`), None for plain JMX.
    pub tls: Option<JmxTls>,
    /// For NodeTool's history file, its logging configuration and its output.
    pub workdir: PathBuf,
}

impl JmxTarget {
    /// A node caplab runs here: its JMX listens on loopback, without credentials.
    pub fn local(node: &NodeState) -> JmxTarget {
        JmxTarget {
            java: node.spec.jdk.java.clone(),
            classpath: node.classpath.clone(),
            host: "127.0.0.1".into(),
            port: node.jmx_port,
            user: None,
            password: None,
            tls: None,
            workdir: node.dir.clone(),
        }
    }
}

/// How a JMX client reaches an endpoint over TLS, as Cassandra serves it with
/// `com.sun.management.jmxremote.ssl=true`: the RMI registry and the connection both over TLS.
/// Without a trust store the JDK's own (cacerts) decides; a key store is for endpoints that ask
/// for a client certificate (`com.sun.management.jmxremote.ssl.need.client.auth=true`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JmxTls {
    pub truststore: Option<PathBuf>,
    pub truststore_password: Option<String>,
    pub keystore: Option<PathBuf>,
    pub keystore_password: Option<String>,
}

impl JmxTls {
    /// The JSSE system properties that say it, in the order CaplabJmx.java reads their values.
    pub const PROPERTIES: [&'static str; 4] = [
        "javax.net.ssl.trustStore",
        "javax.net.ssl.trustStorePassword",
        "javax.net.ssl.keyStore",
        "javax.net.ssl.keyStorePassword",
    ];

    /// The values of `PROPERTIES`, None where not given; passwords among them.
    pub fn values(&self) -> [Option<String>; 4] {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        [
            path(&self.truststore),
            self.truststore_password.clone(),
            path(&self.keystore),
            self.keystore_password.clone(),
        ]
    }
}

/// Runs `nodetool <args>` against `node`, killing it after `timeout`. Returns stdout.
pub fn run(node: &NodeState, args: &[&str], timeout: Duration) -> Result<String> {
    run_on(&JmxTarget::local(node), args, timeout)
}

/// Runs `nodetool <args>` against any JMX endpoint.
pub fn run_on(t: &JmxTarget, args: &[&str], timeout: Duration) -> Result<String> {
    std::fs::create_dir_all(&t.workdir)?;
    let logback = t.workdir.join("logback-tools.xml");
    if !logback.exists() {
        std::fs::write(&logback, QUIET_LOGBACK)?;
    }
    let out_path = t.workdir.join(format!("nodetool-{}-{}.out", t.host, t.port));
    let out = std::fs::File::create(&out_path)?;
    // Passwords go in files (so they do not show in the process list), alone in a private
    // directory with an unpredictable name, removed when nodetool is done: the JMX password in
    // NodeTool's password file, the TLS settings in an argument file of the java launcher.
    let secret_dir = (t.password.is_some() || t.tls.is_some())
        .then(|| {
            tempfile::Builder::new()
                .prefix("caplab-jmx-")
                .tempdir()
                .context("cannot create a private directory for the JMX password file")
        })
        .transpose()?;
    let mut cmd = Command::new(&t.java);
    cmd.args(JPMS_FLAGS)
        .arg("-Xmx256m")
        // NodeTool keeps a history file under user.home.
        .arg(format!("-Duser.home={}", t.workdir.display()))
        .arg(format!("-Dlogback.configurationFile={}", logback.display()));
    if let (Some(tls), Some(dir)) = (&t.tls, &secret_dir) {
        let file = dir.path().join("tls.args");
        write_private(&file, argfile(tls).as_bytes())?;
        cmd.arg(format!("@{}", file.display()));
    }
    cmd.arg("-cp")
        .arg(format!("{}/*", t.classpath.display()))
        .arg("org.apache.cassandra.tools.NodeTool")
        .args(["-h", &t.host, "-p", &t.port.to_string()]);
    if let Some(u) = &t.user {
        cmd.args(["-u", u]);
    }
    if let (Some(u), Some(p), Some(dir)) = (&t.user, &t.password, &secret_dir) {
        let pwf = dir.path().join("jmx.password");
        write_private(&pwf, format!("{u} {p}\n").as_bytes())?;
        cmd.arg("-pwf").arg(&pwf);
    }
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .context("cannot start nodetool")?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!("nodetool {} did not finish in {}s", args.join(" "), timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(secret_dir);
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    if !status.success() {
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        bail!("nodetool {} failed: {last}{}", args.join(" "), jmx_hint(last, t));
    }
    Ok(text)
}

/// The java launcher's argument file for `tls`: NodeTool's `ssl.enable` and the JSSE
/// properties, each quoted (a backslash or a quote escaped) so that a path may hold spaces.
fn argfile(tls: &JmxTls) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut text = String::from("-Dssl.enable=true\n");
    for (k, v) in JmxTls::PROPERTIES.iter().zip(tls.values()) {
        if let Some(v) = v {
            text.push_str(&quote(&format!("-D{k}={v}")));
            text.push('\n');
        }
    }
    text
}

/// What to change when a JMX client (NodeTool or caplab's own reader) could not connect
/// because of TLS or credentials: empty when the message says nothing caplab recognises.
pub fn jmx_hint(message: &str, t: &JmxTarget) -> String {
    let has = |s: &str| message.contains(s);
    let fix = if has("non-JRMP server") || (t.tls.is_none() && has("Connection reset")) {
        "the endpoint answers over TLS: add --jmx-ssl, with --jmx-truststore if its certificate is not signed by a CA the JDK trusts"
    } else if t.tls.is_some() && (has("SSL peer shut down") || has("Unsupported or unrecognized SSL")) {
        "the endpoint does not answer over TLS: leave out --jmx-ssl"
    } else if has("certification path") || has("PKIX") {
        "the endpoint's certificate is not trusted: give --jmx-truststore holding it or its CA"
    } else if has("trust store") || has("keystore password") || has("key store") || has("password was incorrect") {
        "a store could not be opened: check --jmx-truststore/--jmx-keystore and their passwords"
    } else if t.tls.as_ref().is_some_and(|s| s.keystore.is_none())
        && (has("Broken pipe") || has("bad_certificate") || has("certificate_required"))
    {
        "the endpoint may ask for a client certificate: give --jmx-keystore"
    } else if has("Invalid username or password") || has("Authentication failed") || has("Credentials required") {
        "the endpoint refused the credentials: check --jmx-user and --jmx-password (or CAPLAB_JMX_PASSWORD)"
    } else {
        return String::new();
    };
    format!(" ({fix})")
}

/// Writes a new file only its owner can read (refusing to follow a link or reuse a file).
fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut f, bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(tls: Option<JmxTls>) -> JmxTarget {
        JmxTarget {
            java: "java".into(),
            classpath: "lib".into(),
            host: "10.0.0.1".into(),
            port: 7199,
            user: Some("monitor".into()),
            password: Some("pw".into()),
            tls,
            workdir: "w".into(),
        }
    }

    #[test]
    fn tls_settings_reach_nodetool_quoted_in_an_argument_file() {
        let tls = JmxTls {
            truststore: Some("/my stores/trust.p12".into()),
            truststore_password: Some(r#"a"b\c"#.into()),
            keystore: None,
            keystore_password: None,
        };
        assert_eq!(
            argfile(&tls),
            "-Dssl.enable=true\n\"-Djavax.net.ssl.trustStore=/my stores/trust.p12\"\n\
             \"-Djavax.net.ssl.trustStorePassword=a\\\"b\\\\c\"\n"
        );
        assert_eq!(argfile(&JmxTls::default()), "-Dssl.enable=true\n");
    }

    #[test]
    fn a_refused_connection_names_its_fix() {
        let plain = target(None);
        let tls = target(Some(JmxTls::default()));
        let hint = |m: &str, t: &JmxTarget| jmx_hint(m, t);
        assert!(hint("ConnectIOException: 'non-JRMP server at remote endpoint'", &plain).contains("add --jmx-ssl"));
        assert!(hint("EOFException: 'SSL peer shut down incorrectly'", &tls).contains("leave out --jmx-ssl"));
        assert!(hint("unable to find valid certification path", &tls).contains("--jmx-truststore"));
        assert!(hint("SocketException: 'Broken pipe'", &tls).contains("--jmx-keystore"));
        assert!(hint("FailedLoginException: 'Invalid username or password'", &plain).contains("--jmx-password"));
        assert!(hint("KeyManagementException: 'problem accessing trust store'", &tls).contains("passwords"));
        assert_eq!(hint("ConnectException: 'Connection refused'", &plain), "");
        // A broken pipe is no certificate question with a key store given, nor without TLS.
        let with_key = target(Some(JmxTls {
            keystore: Some("k.p12".into()),
            ..JmxTls::default()
        }));
        assert_eq!(hint("SocketException: 'Broken pipe'", &with_key), "");
        assert_eq!(hint("SocketException: 'Broken pipe'", &plain), "");
    }
}
