//! Which operations the cluster acknowledged, for reading them back afterwards (`--validate`):
//! two bits per operation index, one set when it is sent, one when it succeeded. Sent and not
//! acknowledged (an error, a timeout, or in flight when the run ended) is *unknown*: it may or
//! may not have been applied. Never sent is not a write at all. A conditional write answered as
//! not applied is kept as acknowledged and not sent, the one pair no other fate uses.
//!
//! Memory is bounded by the run's length, not its rows: 2 bits per operation (2.5 MB for ten
//! million operations), in chunks of 2^20 operations allocated as the run reaches them, never
//! per operation. Setting a bit is one atomic OR on a word workers rarely share at once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Outcome, Workload};

/// Operations per chunk (2^20): 128 KiB per bitmap.
const CHUNK_BITS: u32 = 20;
const CHUNK_WORDS: usize = 1 << (CHUNK_BITS - 6);
/// Chunks at most: 2^12 × 2^20 = 2^32 operations (12 hours at 100,000 op/s); operations beyond
/// are not tracked (read back as never sent).
const CHUNKS: usize = 1 << 12;

/// A growing bitmap of operation indices.
struct Bits {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl Bits {
    fn new() -> Bits {
        Bits {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }

    fn set(&self, i: u64) {
        let c = (i >> CHUNK_BITS) as usize;
        let Some(slot) = self.chunks.get(c) else { return };
        let words = slot.get_or_init(|| (0..CHUNK_WORDS).map(|_| AtomicU64::new(0)).collect());
        let bit = i & ((1 << CHUNK_BITS) - 1);
        words[(bit >> 6) as usize].fetch_or(1 << (bit & 63), Ordering::Relaxed);
    }

    fn clear(&self, i: u64) {
        let c = (i >> CHUNK_BITS) as usize;
        let Some(words) = self.chunks.get(c).and_then(OnceLock::get) else {
            return;
        };
        let bit = i & ((1 << CHUNK_BITS) - 1);
        words[(bit >> 6) as usize].fetch_and(!(1 << (bit & 63)), Ordering::Relaxed);
    }

    fn get(&self, i: u64) -> bool {
        let c = (i >> CHUNK_BITS) as usize;
        match self.chunks.get(c).and_then(OnceLock::get) {
            Some(words) => {
                let bit = i & ((1 << CHUNK_BITS) - 1);
                words[(bit >> 6) as usize].load(Ordering::Relaxed) & (1 << (bit & 63)) != 0
            }
            None => false,
        }
    }

    /// One past the highest chunk allocated, in operations.
    fn extent(&self) -> u64 {
        let used = self.chunks.iter().rposition(|c| c.get().is_some()).map_or(0, |c| c + 1);
        (used as u64) << CHUNK_BITS
    }

    fn words(&self, chunk: usize) -> Option<Vec<u64>> {
        self.chunks
            .get(chunk)?
            .get()
            .map(|w| w.iter().map(|a| a.load(Ordering::Relaxed)).collect())
    }
}

/// What became of operation `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Acknowledged,
    /// A conditional write the cluster answered and did not apply (its condition was false).
    NotApplied,
    /// Sent, never acknowledged: may or may not have been applied.
    Unknown,
    NotSent,
}

/// The acknowledged operations of a run.
pub struct Acks {
    sent: Bits,
    acked: Bits,
}

impl Default for Acks {
    fn default() -> Acks {
        Acks::new()
    }
}

impl Acks {
    pub fn new() -> Acks {
        Acks {
            sent: Bits::new(),
            acked: Bits::new(),
        }
    }

    pub fn sent(&self, i: u64) {
        self.sent.set(i);
    }

    pub fn acknowledged(&self, i: u64) {
        self.acked.set(i);
    }

    /// A conditional write answered as not applied: kept as acknowledged and not sent, a pair
    /// no other fate uses (so the two bits per operation still say everything).
    pub fn not_applied(&self, i: u64) {
        self.acked.set(i);
        self.sent.clear(i);
    }

    pub fn fate(&self, i: u64) -> Fate {
        match (self.sent.get(i), self.acked.get(i)) {
            (true, true) => Fate::Acknowledged,
            (false, true) => Fate::NotApplied,
            (true, false) => Fate::Unknown,
            (false, false) => Fate::NotSent,
        }
    }

    /// Every index any operation may have (beyond it, nothing was sent).
    pub fn extent(&self) -> u64 {
        self.sent.extent()
    }

    /// The bitmaps as bytes (for `caplab validate DIR` later): per chunk, its index, then the
    /// sent and the acknowledged words, little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for c in 0..(self.extent() >> CHUNK_BITS) as usize {
            let (Some(s), a) = (self.sent.words(c), self.acked.words(c)) else {
                continue;
            };
            out.extend_from_slice(&(c as u64).to_le_bytes());
            for w in s.iter().chain(a.as_deref().unwrap_or(&vec![0; CHUNK_WORDS])) {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    /// Reads `to_bytes`'s output; None when it is not that.
    pub fn from_bytes(bytes: &[u8]) -> Option<Acks> {
        let record = 8 + 2 * CHUNK_WORDS * 8;
        if !bytes.len().is_multiple_of(record) {
            return None;
        }
        let acks = Acks::new();
        for r in bytes.chunks_exact(record) {
            let c = u64::from_le_bytes(r[..8].try_into().ok()?) as usize;
            let word = |k: usize| u64::from_le_bytes(r[8 + k * 8..16 + k * 8].try_into().expect("8 bytes"));
            let load = |bits: &Bits, from: usize| {
                let words: Box<[AtomicU64]> = (0..CHUNK_WORDS).map(|k| AtomicU64::new(word(from + k))).collect();
                bits.chunks.get(c).map(|slot| slot.set(words))
            };
            load(&acks.sent, 0)?.ok()?;
            load(&acks.acked, CHUNK_WORDS)?.ok()?;
        }
        Some(acks)
    }
}

/// A workload whose operations' fates are kept in `acks`, by the index the inner workload is
/// given (wrap it inside a loader's slice, so indices are the whole run's).
pub struct Tracked<W> {
    pub inner: std::sync::Arc<W>,
    pub acks: std::sync::Arc<Acks>,
}

impl<W: Workload> Tracked<W> {
    /// Notes the fate of operation `i` as its outcome tells it.
    fn settled(&self, i: u64, outcome: &Outcome) {
        if outcome.result.is_ok() {
            // An operation reported as another type than its own is a conditional write's
            // `<name>_not_applied`.
            if outcome.op == self.inner.op_of(i) {
                self.acks.acknowledged(i);
            } else {
                self.acks.not_applied(i);
            }
        }
    }
}

impl<W: Workload> Workload for Tracked<W> {
    type Worker = W::Worker;

    fn op_names(&self) -> Vec<String> {
        self.inner.op_names()
    }

    fn worker(&self, id: usize) -> W::Worker {
        self.inner.worker(id)
    }

    fn op_of(&self, i: u64) -> usize {
        self.inner.op_of(i)
    }

    async fn execute(&self, worker: &mut W::Worker, i: u64) -> Outcome {
        self.acks.sent(i);
        let outcome = self.inner.execute(worker, i).await;
        self.settled(i, &outcome);
        outcome
    }

    fn traces(&self) -> bool {
        self.inner.traces()
    }

    async fn execute_traced(&self, worker: &mut W::Worker, i: u64) -> (Outcome, Option<uuid::Uuid>) {
        self.acks.sent(i);
        let (outcome, trace) = self.inner.execute_traced(worker, i).await;
        self.settled(i, &outcome);
        (outcome, trace)
    }

    fn statements(&self) -> Vec<String> {
        self.inner.statements()
    }

    fn facts(&self, i: u64) -> super::OpFacts {
        self.inner.facts(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fates_are_kept_and_survive_a_round_trip() {
        let a = Acks::new();
        for i in [0u64, 5, 7, 63, 64, (1 << 20) + 3, 3 << 20] {
            a.sent(i);
        }
        for i in [0u64, 63, (1 << 20) + 3] {
            a.acknowledged(i);
        }
        a.not_applied(7);
        let check = |a: &Acks| {
            assert_eq!(a.fate(0), Fate::Acknowledged);
            assert_eq!(a.fate(5), Fate::Unknown);
            assert_eq!(a.fate(6), Fate::NotSent);
            assert_eq!(a.fate(7), Fate::NotApplied);
            assert_eq!(a.fate(63), Fate::Acknowledged);
            assert_eq!(a.fate(64), Fate::Unknown);
            assert_eq!(a.fate((1 << 20) + 3), Fate::Acknowledged);
            assert_eq!(a.fate(3 << 20), Fate::Unknown);
            assert_eq!(a.fate(2 << 20), Fate::NotSent, "a chunk never reached");
            assert_eq!(a.extent(), 4 << 20);
        };
        check(&a);
        let back = Acks::from_bytes(&a.to_bytes()).expect("its own bytes");
        check(&back);
        assert!(Acks::from_bytes(&[1, 2, 3]).is_none());
    }
}
