//! The analysis behind `fenced-lint`.

pub mod diagnostic;
pub mod rules;
#[cfg(feature = "cli")]
pub mod report;
