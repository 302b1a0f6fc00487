//! Service levels: objectives written as data (`spec`), judged window by window over a run's
//! intervals (`judge`). The search for the highest rate that meets them is `capacity`'s.

pub mod judge;
pub mod spec;

pub use judge::{Judge, SlaVerdict, WindowVerdict};
pub use spec::{Sla, parse_share};
