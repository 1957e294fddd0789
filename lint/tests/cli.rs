//! The `fenced-lint` binary, run as a CI step runs it.
