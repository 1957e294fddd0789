//! The suite on PostgreSQL: one schema with a random name per test, dropped at the end.
//! The server must be reachable; the tests fail (never skip) otherwise.

use crate::support::postgres::TestSchema;

/// One connection per backend: each simulated worker is one connection of its own.
async fn setup() -> Option<TestSchema> {
    Some(TestSchema::create("fenced_", 1).await)
}

crate::conformance!(setup);
