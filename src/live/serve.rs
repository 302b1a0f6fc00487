//! The endpoint (`--metrics-listen ADDR:PORT`): `GET /metrics` answers with the live metrics in
//! Prometheus's text exposition (version 0.0.4, which `promtool check metrics` reads), from a
//! thread and runtime of its own, so a scrape never runs on the runtime that sends operations.

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus::Encoder;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::state::State;

pub struct Server {
    pub addr: SocketAddr,
    /// Scrapes answered so far.
    pub scrapes: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds at once (so a port in use is an error before anything runs) and serves.
    pub fn start(addr: SocketAddr, state: Arc<Mutex<State>>) -> Result<Server> {
        let listener = bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let scrapes = Arc::new(AtomicU64::new(0));
        let counted = scrapes.clone();
        let thread = std::thread::Builder::new()
            .name("caplab-metrics".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the metrics endpoint");
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
                    loop {
                        tokio::select! {
                            accepted = listener.accept() => {
                                let Ok((stream, _)) = accepted else { continue };
                                let (state, counted) = (state.clone(), counted.clone());
                                tokio::spawn(async move {
                                    let service = hyper::service::service_fn(move |r| answer(r, state.clone(), counted.clone()));
                                    let _ = hyper::server::conn::http1::Builder::new()
                                        .serve_connection(TokioIo::new(stream), service)
                                        .await;
                                });
                            }
                            _ = &mut stopped => break,
                        }
                    }
                });
            })
            .context("cannot start the metrics endpoint's thread")?;
        Ok(Server {
            addr,
            scrapes,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// Listens on `addr`, or says how to choose another.
pub fn bind(addr: SocketAddr) -> Result<std::net::TcpListener> {
    std::net::TcpListener::bind(addr).with_context(|| {
        format!("cannot serve live metrics on {addr}: give --metrics-listen a free port (or 0.0.0.0:0 for any)")
    })
}

impl Server {
    /// Waits until a scrape after this call has been answered, so that Prometheus holds the last
    /// figures, at most `linger`; only when something has scraped already (nobody may be).
    /// Returns whether one came.
    pub fn last_scrape(&self, linger: Duration) -> bool {
        let seen = self.scrapes.load(Ordering::Relaxed);
        if seen == 0 || linger.is_zero() {
            return false;
        }
        let until = Instant::now() + linger;
        while Instant::now() < until {
            if self.scrapes.load(Ordering::Relaxed) > seen {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn answer(
    request: Request<hyper::body::Incoming>,
    state: Arc<Mutex<State>>,
    scrapes: Arc<AtomicU64>,
) -> std::result::Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let reply = |status: StatusCode, kind: &str, body: Vec<u8>| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        if let Ok(v) = kind.parse() {
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
        }
        Ok(r)
    };
    if request.method() != Method::GET || request.uri().path() != "/metrics" {
        let text = b"caplab serves its live metrics at GET /metrics\n".to_vec();
        return reply(StatusCode::NOT_FOUND, "text/plain; charset=utf-8", text);
    }
    // The lock is held to copy the figures out, not to encode them.
    let families = state.lock().unwrap_or_else(|p| p.into_inner()).families();
    let encoder = prometheus::TextEncoder::new();
    let mut body = Vec::new();
    match encoder.encode(&families, &mut body) {
        Ok(()) => {
            scrapes.fetch_add(1, Ordering::Relaxed);
            reply(StatusCode::OK, encoder.format_type(), body)
        }
        Err(e) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain; charset=utf-8",
            e.to_string().into_bytes(),
        ),
    }
}
