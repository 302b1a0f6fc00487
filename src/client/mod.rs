//! The CQL connection to the cluster under test: contact points, datacenter, consistency,
//! connections per host, compression, authentication, timeouts; and how driver errors are
//! counted by kind; statements' traced twins (traced.rs).

pub mod traced;

use anyhow::{Result, bail};
use scylla::client::PoolSize;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::frame::Compression;
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::policies::retry::{RequestInfo, RetryDecision, RetryPolicy, RetrySession};
use scylla::statement::Consistency;
use serde::{Deserialize, Serialize};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::metrics::ErrorKind;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientOptions {
    /// Contact points, `host` or `host:port`.
    pub hosts: Vec<String>,
    /// Prefer coordinators in this datacenter.
    pub dc: Option<String>,
    #[serde(serialize_with = "consistency_name", deserialize_with = "consistency_from_name")]
    pub consistency: Consistency,
    pub connections_per_host: usize,
    pub compression: bool,
    pub user: Option<String>,
    #[serde(skip, default)]
    pub password: Option<String>,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Encrypt connections (client_encryption_options on the server).
    pub tls: bool,
    /// PEM file of the certificate authority (or the server certificate) to trust.
    pub tls_ca: Option<std::path::PathBuf>,
    /// Accept any server certificate (encrypts, but does not authenticate the server).
    pub tls_insecure: bool,
    /// How many times a failed request is retried on another node (0: never: a load tester
    /// reports failures rather than hiding them).
    #[serde(default)]
    pub retries: u32,
    /// Reach these node addresses through these proxies instead (network faults): contact
    /// points are replaced, and the addresses `system.peers` gives are translated.
    #[serde(skip, default)]
    pub via: Vec<(std::net::SocketAddr, std::net::SocketAddr)>,
}

/// Translates a node's address to its proxy's by IP alone: the driver gives the node it first
/// reached with the port it reached it on (the proxy's), the others with their CQL port.
/// Addresses of nodes without a proxy are left as they are.
#[derive(Debug)]
struct ByIp(std::collections::HashMap<std::net::IpAddr, std::net::SocketAddr>);

#[async_trait::async_trait]
impl scylla::policies::address_translator::AddressTranslator for ByIp {
    async fn translate_address(
        &self,
        peer: &scylla::policies::address_translator::UntranslatedPeer,
    ) -> Result<std::net::SocketAddr, scylla::errors::TranslationError> {
        let a = peer.untranslated_address();
        Ok(self.0.get(&a.ip()).copied().unwrap_or(a))
    }
}

/// Retries requests up to a limit, on the next node of the plan, and counts the retries. With
/// a limit of 0 every failure is reported as the server (or the connection) gave it, so an
/// Unavailable from a live coordinator is not turned into a connection error by a retry on a
/// node that is down.
#[derive(Debug)]
pub struct CountedRetries {
    max: u32,
    count: Arc<AtomicU64>,
}

impl CountedRetries {
    pub fn new(max: u32) -> CountedRetries {
        CountedRetries {
            max,
            count: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Retries made so far, over the session's life.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.count.clone()
    }
}

struct CountedSession {
    left: u32,
    max: u32,
    count: Arc<AtomicU64>,
}

impl RetryPolicy for CountedRetries {
    fn new_session(&self) -> Box<dyn RetrySession> {
        Box::new(CountedSession {
            left: self.max,
            max: self.max,
            count: self.count.clone(),
        })
    }
}

impl RetrySession for CountedSession {
    fn decide_should_retry(&mut self, info: RequestInfo) -> RetryDecision {
        if self.left == 0 {
            return RetryDecision::DontRetry;
        }
        // Errors after which the request surely was not applied may be retried whatever it
        // is; others only when it is idempotent.
        let not_applied = matches!(
            info.error,
            RequestAttemptError::DbError(DbError::Unavailable { .. } | DbError::Overloaded, _)
                | RequestAttemptError::UnableToAllocStreamId
        );
        let retriable = matches!(
            info.error,
            RequestAttemptError::DbError(DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. }, _)
                | RequestAttemptError::BrokenConnectionError(_)
        );
        if not_applied || (retriable && info.is_idempotent) {
            self.left -= 1;
            self.count.fetch_add(1, Ordering::Relaxed);
            RetryDecision::RetryNextTarget(None)
        } else {
            RetryDecision::DontRetry
        }
    }

    fn reset(&mut self) {
        self.left = self.max;
    }
}

/// Every level a client may ask for, with the name results record it by.
const CONSISTENCIES: [Consistency; 11] = [
    Consistency::Any,
    Consistency::One,
    Consistency::Two,
    Consistency::Three,
    Consistency::Quorum,
    Consistency::All,
    Consistency::LocalQuorum,
    Consistency::EachQuorum,
    Consistency::LocalOne,
    Consistency::Serial,
    Consistency::LocalSerial,
];

fn consistency_name<S: serde::Serializer>(c: &Consistency, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{c:?}"))
}

fn consistency_from_name<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Consistency, D::Error> {
    let name = String::deserialize(d)?;
    CONSISTENCIES
        .into_iter()
        .find(|c| format!("{c:?}") == name)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown consistency '{name}'")))
}

/// `one`, `local_quorum`, … → Consistency.
pub fn parse_consistency(s: &str) -> Result<Consistency> {
    Ok(match s.to_ascii_lowercase().replace('-', "_").as_str() {
        "any" => Consistency::Any,
        "one" => Consistency::One,
        "two" => Consistency::Two,
        "three" => Consistency::Three,
        "quorum" => Consistency::Quorum,
        "all" => Consistency::All,
        "local_quorum" => Consistency::LocalQuorum,
        "each_quorum" => Consistency::EachQuorum,
        "local_one" => Consistency::LocalOne,
        _ => bail!(
            "'{s}' is not a consistency level: use one of any, one, two, three, quorum, all, local_quorum, each_quorum, local_one"
        ),
    })
}

/// Connects, failing within the connect timeout with a message that names the fix; returns
/// the session and the count of retries it makes.
pub async fn connect(o: &ClientOptions) -> Result<(Session, Arc<AtomicU64>)> {
    let retries = CountedRetries::new(o.retries);
    let counter = retries.counter();
    let mut policy = DefaultPolicy::builder().token_aware(true);
    if let Some(dc) = &o.dc {
        policy = policy.prefer_datacenter(dc.clone()).permit_dc_failover(false);
    }
    let profile = ExecutionProfile::builder()
        .consistency(o.consistency)
        .request_timeout(Some(o.request_timeout))
        .retry_policy(Arc::new(retries))
        .load_balancing_policy(policy.build())
        .build();
    let hosts: Vec<String> = o
        .hosts
        .iter()
        .map(|h| {
            if h.contains(':') {
                h.clone()
            } else {
                format!("{h}:9042")
            }
        })
        .collect();
    // Through the proxies, when there are any: a contact point that is a proxied node becomes
    // its proxy, and every node the cluster names is translated to its proxy.
    let hosts: Vec<String> = hosts
        .into_iter()
        .map(|h| match h.parse::<std::net::SocketAddr>() {
            Ok(a) => o
                .via
                .iter()
                .find(|(node, _)| *node == a)
                .map_or(h, |(_, p)| p.to_string()),
            Err(_) => h,
        })
        .collect();
    let mut b = SessionBuilder::new()
        .known_nodes(&hosts)
        .connection_timeout(o.connect_timeout)
        .pool_size(PoolSize::PerHost(
            NonZeroUsize::new(o.connections_per_host.max(1)).unwrap(),
        ))
        .default_execution_profile_handle(profile.into_handle());
    if !o.via.is_empty() {
        b = b.address_translator(Arc::new(ByIp(
            o.via.iter().map(|(node, proxy)| (node.ip(), *proxy)).collect(),
        )));
    }
    if o.compression {
        b = b.compression(Some(Compression::Lz4));
    }
    if let Some(u) = &o.user {
        b = b.user(u, o.password.clone().unwrap_or_default());
    }
    if o.tls {
        b = b.tls_context(Some(tls_context(o)?));
    }
    match tokio::time::timeout(o.connect_timeout + Duration::from_secs(2), b.build()).await {
        Ok(Ok(s)) => Ok((s, counter)),
        Ok(Err(e)) if e.to_string().contains("certificate verify failed") => bail!(
            "cannot connect to {}: the server's TLS certificate is not trusted ({e}). Pass --tls-ca with the PEM \
             certificate of its authority, or --tls-insecure to encrypt without checking it",
            hosts.join(", ")
        ),
        Ok(Err(e)) => bail!(
            "cannot connect to {}: {e}. Is Cassandra running there? Start a local node with 'caplab node start', \
             or pass --hosts with the cluster's contact points",
            hosts.join(", ")
        ),
        Err(_) => bail!(
            "no answer from {} within {}s: check the address and that the native transport port is open",
            hosts.join(", "),
            (o.connect_timeout + Duration::from_secs(2)).as_secs()
        ),
    }
}

fn tls_context(o: &ClientOptions) -> Result<openssl::ssl::SslContext> {
    use openssl::ssl::{SslContextBuilder, SslMethod, SslVerifyMode};
    let mut ctx = SslContextBuilder::new(SslMethod::tls())?;
    if let Some(ca) = &o.tls_ca {
        ctx.set_ca_file(ca).map_err(|e| {
            anyhow::anyhow!(
                "cannot read the certificate authority {}: {e}. Give a PEM file (keytool -exportcert -rfc writes one)",
                ca.display()
            )
        })?;
    } else {
        ctx.set_default_verify_paths()?;
    }
    ctx.set_verify(if o.tls_insecure {
        SslVerifyMode::NONE
    } else {
        SslVerifyMode::PEER
    });
    Ok(ctx.build())
}

/// How long `prepare_when_reachable` waits for a working connection.
pub const REACHABLE_WITHIN: Duration = Duration::from_secs(60);

/// Prepares `cql`, trying again every half second for up to `REACHABLE_WITHIN` while no node has
/// a working connection: just after a node restarted (a fault undone, an upgrade), the driver's
/// pool reconnects on its own schedule, seconds after the node answers a new connection (a
/// read-back prepared 20 s after a one-node downgrade found the pool still broken). Any other
/// failure is returned at once.
pub async fn prepare_when_reachable(
    session: &Session,
    cql: &str,
) -> Result<scylla::statement::prepared::PreparedStatement, scylla::errors::PrepareError> {
    let began = std::time::Instant::now();
    loop {
        match session.prepare(cql).await {
            Err(scylla::errors::PrepareError::ConnectionPoolError(_)) if began.elapsed() < REACHABLE_WITHIN => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            done => return done,
        }
    }
}

/// What kind of failure an execution error is, for counting.
pub fn classify(e: &ExecutionError) -> ErrorKind {
    match e {
        ExecutionError::RequestTimeout(_) => ErrorKind::ClientTimeout,
        ExecutionError::ConnectionPoolError(_) | ExecutionError::EmptyPlan => ErrorKind::Connection,
        ExecutionError::LastAttemptError(a) => match a {
            RequestAttemptError::DbError(db, _) => match db {
                DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. } => ErrorKind::ServerTimeout,
                DbError::Unavailable { .. } => ErrorKind::Unavailable,
                DbError::Overloaded | DbError::RateLimitReached { .. } => ErrorKind::Overloaded,
                _ => ErrorKind::Other,
            },
            RequestAttemptError::BrokenConnectionError(_) | RequestAttemptError::UnableToAllocStreamId => {
                ErrorKind::Connection
            }
            _ => ErrorKind::Other,
        },
        _ => ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistency_names() {
        assert_eq!(parse_consistency("LOCAL_QUORUM").unwrap(), Consistency::LocalQuorum);
        assert_eq!(parse_consistency("local-one").unwrap(), Consistency::LocalOne);
        assert!(
            parse_consistency("most")
                .unwrap_err()
                .to_string()
                .contains("local_quorum")
        );
    }

    #[test]
    fn options_read_back_as_recorded_without_the_password() {
        let o = ClientOptions {
            hosts: vec!["10.0.0.1".into()],
            dc: None,
            consistency: Consistency::LocalQuorum,
            connections_per_host: 2,
            compression: false,
            user: Some("u".into()),
            password: Some("secret".into()),
            request_timeout: Duration::from_secs(12),
            connect_timeout: Duration::from_secs(3),
            tls: false,
            tls_ca: None,
            tls_insecure: false,
            retries: 0,
            via: Vec::new(),
        };
        let json = serde_json::to_string(&o).unwrap();
        assert!(json.contains("\"LocalQuorum\"") && !json.contains("secret"), "{json}");
        let back: ClientOptions = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (back.consistency, back.password, back.request_timeout),
            (Consistency::LocalQuorum, None, o.request_timeout)
        );
    }

    #[test]
    fn timeouts_are_told_apart() {
        assert_eq!(
            classify(&ExecutionError::RequestTimeout(Duration::from_secs(1))),
            ErrorKind::ClientTimeout
        );
        let wt = DbError::WriteTimeout {
            consistency: Consistency::One,
            received: 0,
            required: 1,
            write_type: scylla::errors::WriteType::Simple,
        };
        assert_eq!(
            classify(&ExecutionError::LastAttemptError(RequestAttemptError::DbError(
                wt,
                String::new()
            ))),
            ErrorKind::ServerTimeout
        );
        let ov = RequestAttemptError::DbError(DbError::Overloaded, String::new());
        assert_eq!(classify(&ExecutionError::LastAttemptError(ov)), ErrorKind::Overloaded);
        assert_eq!(classify(&ExecutionError::EmptyPlan), ErrorKind::Connection);
    }
}
