//! A real Prometheus (Debian's `prometheus` package, which scripts/setup.sh --test installs)
//! started by a test on a loopback address of its lab: it scrapes the targets it is given every
//! second and accepts remote write (native histograms too), and the test asks it PromQL over its HTTP API. Stopped when
//! dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Prometheus {
    child: Child,
    /// host:port of its HTTP API.
    pub addr: String,
}

impl Prometheus {
    /// Starts one listening on `host`:19090 (not Prometheus's usual 9090, which a Prometheus the
    /// package's service started may hold on every address) that scrapes `targets` (job `caplab`), with its
    /// data and log under `dir`; waits until it is ready.
    pub fn start(dir: &Path, host: &str, targets: &[&str]) -> Prometheus {
        let binary = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("no prometheus binary: install Debian's prometheus package (scripts/setup.sh --test does)");
        std::fs::create_dir_all(dir).unwrap();
        let config = dir.join("prometheus.yml");
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: caplab\n    \
                 static_configs:\n      - targets: [{}]\n",
                list.join(", ")
            ),
        )
        .unwrap();
        let addr = format!("{host}:19090");
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .arg("--enable-feature=native-histograms")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, addr };
        super::wait_until("Prometheus ready", Duration::from_secs(60), || {
            p.get("/-/ready").is_some_and(|(code, _)| code == 200)
        });
        p
    }

    /// (status, body) of GET `path`, None when nothing answers.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        http_get(&self.addr, path)
    }

    /// The JSON answer of an API call that must succeed (`promql` for the message).
    fn api(&self, path: &str, promql: &str) -> serde_json::Value {
        let (code, body) = self.get(path).expect("Prometheus answers");
        assert_eq!(code, 200, "{promql}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// The result of an instant PromQL query: its vector's samples as (labels, value).
    pub fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        self.api(&format!("/api/v1/query?query={}", encode(promql)), promql)["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["metric"].clone(), r["value"][1].as_str().unwrap().parse().unwrap()))
            .collect()
    }

    /// The series of a range query over the last `minutes`, one point a second: (labels, points).
    pub fn range(&self, promql: &str, minutes: u64) -> Vec<(serde_json::Value, usize)> {
        let end = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let path = format!(
            "/api/v1/query_range?query={}&start={}&end={end}&step=1",
            encode(promql),
            end - 60 * minutes
        );
        self.api(&path, promql)["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["metric"].clone(), r["values"].as_array().map_or(0, Vec::len)))
            .collect()
    }

    /// The one value of an instant query that must return exactly one sample.
    #[track_caller]
    pub fn value(&self, promql: &str) -> f64 {
        let r = self.query(promql);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        r[0].1
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET over HTTP/1.0 (the body is whatever comes before the server closes).
pub fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// Percent-encodes a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
