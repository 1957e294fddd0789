//! The differential tests of `#[fenced_write]`'s checks: texts from a seeded generator,
//! each put through the macro's own check, and every text it accepts run on the real
//! databases, where the fence must hold.
//!
//! - [`lease_table`]: a write of the lease's own table, its SQL with the fence appended,
//!   run with a stale lease: refused, every row unchanged.
//! - [`other_table`]: a write of another table, sent unchanged inside a fenced
//!   transaction: every protected table unchanged.
//!
//! Each has a negative control, the same generator with the checks off, that must find
//! texts that escape. Both read `FENCED_DIFF_SEED` and `FENCED_DIFF_TEXTS`, and print
//! their counts past the test harness's capture.

mod lease_table;
mod other_table;

use fenced_guard::Dialect;

use crate::statement;

/// The macro's name for a dialect.
fn macro_dialect(d: Dialect) -> statement::Dialect {
    match d {
        Dialect::Postgres => statement::Dialect::Postgres,
        Dialect::Sqlite => statement::Dialect::Sqlite,
        Dialect::Mssql => statement::Dialect::Mssql,
    }
}

/// splitmix64: small, seeded, and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// `FENCED_DIFF_SEED`, else a fixed seed.
fn seed() -> u64 {
    std::env::var("FENCED_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_F3AC_ED18)
}

/// `FENCED_DIFF_TEXTS`, else 10,000.
fn wanted() -> usize {
    std::env::var("FENCED_DIFF_TEXTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

fn pg_url() -> String {
    std::env::var("FENCED_PG_URL")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".to_owned())
}

/// `FENCED_MSSQL_URL`; `None` (said) without it, a failure without it when `CI` is set.
fn mssql_url() -> Option<String> {
    let Ok(url) = std::env::var("FENCED_MSSQL_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but FENCED_MSSQL_URL is not: the SQL Server run must happen in CI"
        );
        say("sql server: did not run (FENCED_MSSQL_URL is not set)");
        return None;
    };
    Some(url)
}

/// Writes `line` past the test harness's capture, so that the counts show in every run
/// (CI's included), not only when a test fails.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "differential: {line}");
}
