//! The binary's own modules: argument parsing and the file walk.

pub(crate) mod args;
pub(crate) mod walk;
