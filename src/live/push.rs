//! Prometheus remote write (`--metrics-push URL`), for loaders too short-lived to be scraped:
//! the live metrics as one sample per series, snappy-compressed protobuf (remote write 1.0),
//! posted every `--metrics-push-interval` from a thread of its own and once more when the
//! command ends, so that the last seconds are not lost. A push that fails is reported and the
//! run goes on; the next push carries the cumulative figures again. With
//! `--metrics-native-histograms` the response and service times go as native histograms too
//! (native.rs).

use anyhow::{Context, Result, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use prometheus::proto::{LabelPair, MetricFamily, MetricType};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::state::State;
use super::wire::{Label, Sample, TimeSeries, WriteRequest};

/// The families as remote-write series at `ts_ms`: a histogram becomes its `_bucket` (one per
/// `le`, +Inf last), `_sum` and `_count` series, as a scrape of the same exposition would.
pub fn series(families: &[MetricFamily], ts_ms: i64) -> Vec<TimeSeries> {
    let mut out = Vec::new();
    let mut push = |name: String, labels: &[LabelPair], le: Option<String>, value: f64| {
        let mut l: Vec<Label> = labels
            .iter()
            .map(|p| Label {
                name: p.name().to_string(),
                value: p.value().to_string(),
            })
            .chain(le.map(|v| Label {
                name: "le".into(),
                value: v,
            }))
            .chain(std::iter::once(Label {
                name: "__name__".into(),
                value: name,
            }))
            .collect();
        l.sort_by(|a, b| a.name.cmp(&b.name));
        out.push(TimeSeries {
            labels: l,
            samples: vec![Sample {
                value,
                timestamp: ts_ms,
            }],
            histograms: Vec::new(),
        });
    };
    for f in families {
        for m in f.get_metric() {
            let labels = m.get_label();
            match f.get_field_type() {
                MetricType::COUNTER => push(f.name().into(), labels, None, m.get_counter().get_value()),
                MetricType::HISTOGRAM => {
                    let h = m.get_histogram();
                    for b in h.get_bucket() {
                        let le = Some(b.upper_bound().to_string());
                        push(format!("{}_bucket", f.name()), labels, le, b.cumulative_count() as f64);
                    }
                    let count = h.get_sample_count() as f64;
                    push(format!("{}_bucket", f.name()), labels, Some("+Inf".into()), count);
                    push(format!("{}_sum", f.name()), labels, None, h.get_sample_sum());
                    push(format!("{}_count", f.name()), labels, None, count);
                }
                _ => push(f.name().into(), labels, None, m.get_gauge().get_value()),
            }
        }
    }
    out
}

/// Checks a `--metrics-push` URL: http, with a host.
pub fn parse_url(text: &str) -> std::result::Result<String, String> {
    let uri: Uri = text
        .parse()
        .map_err(|e| format!("'{text}' is not a URL ({e}), e.g. --metrics-push http://prometheus:9090/api/v1/write"))?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(text.to_string()),
        Some("https") => Err(format!(
            "'{text}': --metrics-push speaks http only; push to Prometheus's http endpoint inside the cluster, \
             or let Prometheus scrape --metrics-listen"
        )),
        _ => Err(format!(
            "'{text}' is not an http URL, e.g. --metrics-push http://prometheus:9090/api/v1/write"
        )),
    }
}

/// The thread that pushes.
pub struct Pusher {
    /// Dropping it (or sending) asks for the final push.
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pusher {
    /// Pushes to `url` every `every`, native histograms too with `native`.
    pub fn start(url: String, every: Duration, native: bool, state: Arc<Mutex<State>>) -> Pusher {
        let (done, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("caplab-push".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for pushing metrics");
                let (mut failed, mut last_error, mut pushes) = (0u64, String::new(), 0u64);
                loop {
                    let last = !matches!(rx.recv_timeout(every), Err(mpsc::RecvTimeoutError::Timeout));
                    let body = encode(&state, native);
                    pushes += 1;
                    if let Err(e) = rt.block_on(post(&url, body)) {
                        failed += 1;
                        let e = format!("{e:#}");
                        if e != last_error {
                            eprintln!("warning: --metrics-push to {url} failed: {e}; measuring goes on");
                            last_error = e;
                        }
                    }
                    if last {
                        if failed > 0 {
                            eprintln!("warning: {failed} of {pushes} pushes to {url} failed, the last one too");
                        }
                        break;
                    }
                }
            })
            .expect("cannot start the metrics pusher");
        Pusher {
            done: Some(done),
            thread: Some(thread),
        }
    }

    /// Pushes once more, the command's last figures, and waits for it (at most the request's
    /// timeout).
    pub fn finish(&mut self) {
        self.done.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The response and service times as native histograms, named as the classic ones without
/// their suffixes (`caplab_response_time_seconds{op, outcome}`, `caplab_service_time_seconds{op}`);
/// an error histogram once there are errors, as in the exposition.
pub fn native_series(state: &State, ts_ms: i64) -> Vec<TimeSeries> {
    let mut out = Vec::new();
    for s in &state.ops {
        let op = s.name.as_str();
        let kinds = [
            ("caplab_response_time_seconds", Some("ok")),
            ("caplab_response_time_seconds", Some("error")),
            ("caplab_service_time_seconds", None),
        ];
        for ((name, outcome), native) in kinds.into_iter().zip(&s.native) {
            if outcome == Some("error") && native.0.count == 0 {
                continue;
            }
            let mut extra = vec![("__name__", name), ("op", op)];
            extra.extend(outcome.map(|o| ("outcome", o)));
            let labels = state
                .labels_with(&extra)
                .into_iter()
                .map(|(k, v)| Label {
                    name: k.to_string(),
                    value: v.to_string(),
                })
                .collect();
            out.push(TimeSeries {
                labels,
                samples: Vec::new(),
                histograms: vec![native.to_proto(ts_ms)],
            });
        }
    }
    out
}

fn encode(state: &Mutex<State>, native: bool) -> Vec<u8> {
    let ts = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    let (mut timeseries, native) = {
        let s = state.lock().unwrap_or_else(|p| p.into_inner());
        let natives = if native { native_series(&s, ts) } else { Vec::new() };
        (series(&s.families(), ts), natives)
    };
    timeseries.extend(native);
    let request = WriteRequest { timeseries };
    snap::raw::Encoder::new()
        .compress_vec(&prost::Message::encode_to_vec(&request))
        .expect("snappy compresses any input")
}

/// Posts one write request; an answer other than 2xx is an error with the receiver's words.
async fn post(url: &str, body: Vec<u8>) -> Result<()> {
    let uri: Uri = url.parse()?;
    let host = uri.host().context("no host")?.to_string();
    let port = uri.port_u16().unwrap_or(80);
    let timeout = Duration::from_secs(10);
    let stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host.as_str(), port)))
        .await
        .map_err(|_| anyhow::anyhow!("no connection within {timeout:?}"))?
        .with_context(|| format!("cannot connect to {host}:{port}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = Request::post(path)
        .header(
            hyper::header::HOST,
            uri.authority().map_or(host.clone(), |a| a.to_string()),
        )
        .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
        .header(hyper::header::CONTENT_ENCODING, "snappy")
        .header(hyper::header::USER_AGENT, concat!("caplab/", env!("CARGO_PKG_VERSION")))
        .header("X-Prometheus-Remote-Write-Version", "0.1.0")
        .body(Full::new(Bytes::from(body)))?;
    let answer = tokio::time::timeout(timeout, sender.send_request(request))
        .await
        .map_err(|_| anyhow::anyhow!("no answer within {timeout:?}"))??;
    let status = answer.status();
    if !status.is_success() {
        let text = answer
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        bail!("{status}: {}", String::from_utf8_lossy(&text).trim());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_http_with_a_host() {
        assert!(parse_url("http://prometheus:9090/api/v1/write").is_ok());
        assert!(
            parse_url("https://p:9090/api/v1/write")
                .unwrap_err()
                .contains("http only")
        );
        assert!(
            parse_url("prometheus:9090")
                .unwrap_err()
                .contains("e.g. --metrics-push")
        );
    }

    #[test]
    fn a_histogram_becomes_bucket_sum_and_count_series_with_sorted_labels() {
        let names = vec!["read".to_string()];
        let mut s = State::new(vec![("run".into(), "r".into()), ("loader".into(), "0".into())]);
        s.begin(&names, None, Vec::new());
        let families = s.families();
        let series = series(&families, 7);
        let buckets: Vec<_> = series
            .iter()
            .filter(|t| t.labels.iter().any(|l| l.value == "caplab_service_time_seconds_bucket"))
            .collect();
        assert_eq!(buckets.len(), super::super::buckets::bounds().len() + 1);
        let last = buckets.last().unwrap();
        let names: Vec<&str> = last.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "le", "loader", "op", "run"]);
        assert_eq!(last.labels[1].value, "+Inf");
        assert!(series.iter().all(|t| t.samples
            == [Sample {
                value: 0.0,
                timestamp: 7
            }]
            || t.samples[0].value == 1.0));
    }
}
