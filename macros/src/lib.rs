//! `#[fenced_write]`.
