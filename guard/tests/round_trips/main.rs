//! Round trips a client waits for, counted on the wire by a proxy that reads the
//! database's protocol ([`proxy::Proxy::round_trips`]): one per statement on the
//! caller's connections, and a fenced transaction of the guard's pool that waits for no
//! more than the same statements in a plain transaction. Each count has its negative
//! control: a path known to wait more, counted as more.
//!
//! The proxy holds every reply back for [`REPLY_DELAY`], so that what a client
//! pipelines reaches it before any answer does: a count then says how often the client
//! waited, whatever the machine's load.

#![allow(missing_docs, unreachable_pub)]

// Each test binary compiles the shared fixtures on its own and uses only part of them.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "../faults/proxy.rs"]
mod proxy;

#[cfg(feature = "mssql")]
mod mssql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(all(feature = "postgres", feature = "sqlx-postgres"))]
mod sqlx;

use std::time::Duration;

/// How long the proxy holds each reply: far longer than a client takes to send what
/// it pipelines, far shorter than a test.
pub const REPLY_DELAY: Duration = Duration::from_millis(25);
