//! Code shared by the integration tests and benchmarks that include it.

pub(crate) mod count;
