//! Network faults without root: a userspace TCP proxy in front of a local node's CQL port,
//! which the driver reaches the node through (its contact point, and an address translator for
//! the addresses `system.peers` gives). Started only for a run with a network fault; a run
//! without one never goes through it.
//!
//! A plain tokio proxy rather than scylla-proxy: the faults asked for are on the byte stream
//! (delay, bandwidth, blackhole, reset), which need no CQL parsing, and the proxy then works
//! the same for TLS and compressed connections. Client-to-node only: node-to-node traffic is
//! not proxied (out of scope for now).
//!
//! Without a fault the proxy copies through one reused buffer per direction. A delayed chunk
//! is held (one allocation per chunk) until its time; order is kept, so jitter never reorders
//! bytes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does to the bytes it carries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Toxic {
    #[default]
    None,
    /// Each chunk from the node to the client waits `latency` ± up to `jitter` (uniformly): a
    /// request's response comes that much later.
    Delay { latency: Duration, jitter: Duration },
    /// At most this many bytes per second, each direction.
    Bandwidth { bytes_per_s: u64 },
    /// Bytes are read and dropped; connections stay open (requests hang until they time out).
    Blackhole,
}

/// A proxy to one node.
pub struct Proxy {
    pub listen: SocketAddr,
    pub target: SocketAddr,
    toxic: watch::Sender<Toxic>,
    /// Each open connection's tasks, to cut them (reset).
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on 127.0.0.1 (a free port) and forwards to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let listen = listener.local_addr()?;
        let (toxic, watch) = watch::channel(Toxic::None);
        let conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let list = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let watch = watch.clone();
                let task = tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(target).await {
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        let (cr, cw) = client.into_split();
                        let (sr, sw) = server.into_split();
                        tokio::join!(pump(cr, sw, watch.clone(), false), pump(sr, cw, watch, true));
                    }
                });
                let mut l = list.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                l.retain(|h| !h.is_finished());
                l.push(task.abort_handle());
            }
        });
        Ok(Proxy {
            listen,
            target,
            toxic: toxic.clone(),
            conns,
            accept,
        })
    }

    pub fn set(&self, t: Toxic) {
        let _ = self.toxic.send(t);
    }

    /// Cuts every open connection (the client sees them reset); new ones are accepted.
    pub fn reset(&self) {
        for h in self
            .conns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
        {
            h.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.reset();
    }
}

/// Copies `from` to `to` as the toxic in force says, until either side closes; `responses`:
/// this is the node-to-client direction (the one a delay holds). Without a toxic (and nothing
/// held back) a chunk is written as soon as it is read, from the one buffer; held chunks wait
/// in order, each until its time.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    toxic: watch::Receiver<Toxic>,
    responses: bool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut held: std::collections::VecDeque<(tokio::time::Instant, Vec<u8>)> = std::collections::VecDeque::new();
    let mut last = tokio::time::Instant::now();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    loop {
        let next = held.front().map(|(at, _)| *at);
        tokio::select! {
            read = from.read(&mut buf) => {
                let n = match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let now = tokio::time::Instant::now();
                let at = match *toxic.borrow() {
                    Toxic::None => now,
                    Toxic::Delay { .. } if !responses => now,
                    Toxic::Blackhole => continue,
                    Toxic::Delay { latency, jitter } => {
                        // xorshift: a jitter draw without a shared generator.
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let j = jitter.as_secs_f64() * ((seed % 2001) as f64 / 1000.0 - 1.0);
                        now + Duration::from_secs_f64((latency.as_secs_f64() + j).max(0.0))
                    }
                    Toxic::Bandwidth { bytes_per_s } => {
                        now.max(last) + Duration::from_secs_f64(n as f64 / bytes_per_s.max(1) as f64)
                    }
                };
                if at <= now && held.is_empty() {
                    if to.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                } else {
                    // Never before an earlier chunk: order is kept.
                    last = at.max(last);
                    held.push_back((last, buf[..n].to_vec()));
                }
            }
            () = tokio::time::sleep_until(next.unwrap_or_else(tokio::time::Instant::now)), if next.is_some() => {
                let (_, bytes) = held.pop_front().expect("a held chunk");
                if to.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 1024];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 || s.write_all(&b[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(c: &mut TcpStream, msg: &[u8]) -> Vec<u8> {
        c.write_all(msg).await.unwrap();
        let mut got = vec![0u8; msg.len()];
        c.read_exact(&mut got).await.unwrap();
        got
    }

    #[tokio::test(start_paused = true)]
    async fn the_proxy_copies_delays_drops_and_resets() {
        let p = Proxy::start(echo_server().await).await.unwrap();
        let mut c = TcpStream::connect(p.listen).await.unwrap();
        let t0 = tokio::time::Instant::now();
        assert_eq!(round_trip(&mut c, b"ping").await, b"ping");
        assert!(t0.elapsed() < Duration::from_millis(5));

        // 50 ms on the way back: a round trip takes 50 ms more.
        p.set(Toxic::Delay {
            latency: Duration::from_millis(50),
            jitter: Duration::ZERO,
        });
        let t0 = tokio::time::Instant::now();
        assert_eq!(round_trip(&mut c, b"slow").await, b"slow");
        let took = t0.elapsed();
        assert!(
            (Duration::from_millis(50)..Duration::from_millis(55)).contains(&took),
            "{took:?}"
        );

        // A blackhole: nothing comes back while it lasts.
        p.set(Toxic::Blackhole);
        c.write_all(b"lost").await.unwrap();
        let mut b = [0u8; 4];
        assert!(
            tokio::time::timeout(Duration::from_secs(2), c.read(&mut b))
                .await
                .is_err()
        );

        // Reset: the connection is cut; a new one works.
        p.set(Toxic::None);
        p.reset();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let cut = c.read(&mut b).await;
        assert!(matches!(cut, Ok(0) | Err(_)), "{cut:?}");
        let mut c = TcpStream::connect(p.listen).await.unwrap();
        assert_eq!(round_trip(&mut c, b"back").await, b"back");
    }
}
