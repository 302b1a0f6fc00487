//! Statements sent with the server's tracing on (`--trace-slow`). Each statement a workload
//! sends gets a traced twin when it is prepared: a copy with the tracing flag set, made without
//! a round trip to the server. Sending a sampled operation traced then costs no more than
//! choosing the twin; the server writes the trace to system_traces and answers with its id.

use scylla::statement::batch::Batch;
use scylla::statement::prepared::PreparedStatement;

/// A statement whose tracing flag can be set.
pub trait Traceable: Clone {
    fn trace(&mut self);
}

impl Traceable for PreparedStatement {
    fn trace(&mut self) {
        self.set_tracing(true);
    }
}

impl Traceable for Batch {
    fn trace(&mut self) {
        self.set_tracing(true);
    }
}

/// A copy of `statement` (as it is set now: consistency, idempotence) with tracing on.
pub fn traced<T: Traceable>(statement: &T) -> T {
    let mut t = statement.clone();
    t.trace();
    t
}

/// A statement and its traced twin.
#[derive(Debug, Clone)]
pub struct Twin<T> {
    plain: T,
    traced: T,
}

impl<T: Traceable> Twin<T> {
    /// `plain` and its traced copy.
    pub fn new(plain: T) -> Twin<T> {
        Twin {
            traced: traced(&plain),
            plain,
        }
    }

    /// The statement to send: the traced twin when `traced`.
    #[inline]
    pub fn get(&self, traced: bool) -> &T {
        if traced { &self.traced } else { &self.plain }
    }

    pub fn plain(&self) -> &T {
        &self.plain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::statement::batch::BatchType;

    #[test]
    fn only_the_twin_is_traced() {
        let mut b = Batch::new(BatchType::Unlogged);
        b.set_is_idempotent(true);
        let twin = Twin::new(b);
        assert!(!twin.get(false).get_tracing() && twin.get(true).get_tracing());
        assert!(twin.get(true).get_is_idempotent(), "the twin keeps what was set before");
    }
}
