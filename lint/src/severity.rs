//! How much a finding matters. Each rule has one ([`Rule::severity`](crate::Rule::severity)),
//! and every finding of the rule is reported at it.

use std::fmt;

/// How much a finding matters: an error fails the build (exit code 1), a warning does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Reported, but the run still exits 0.
    Warning,
    /// Fails the run (exit code 1).
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}
