//! fenced.
pub use fenced_guard::*;
pub use fenced_macros::*;
