//! Service levels: objectives written as data (`spec`), judged window by window over a run's
//! intervals (`judge`), and the search for the highest rate that meets them (`search`, driven
//! step by step, repeats included, by a `plan`).

pub mod judge;
pub mod plan;
pub mod search;
pub mod spec;

pub use judge::{Judge, SlaVerdict, WindowVerdict};
pub use plan::{Plan, RateResult, RateStep};
pub use search::{Search, parse_rates};
pub use spec::{Sla, parse_share};
