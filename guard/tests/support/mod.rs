//! Fixtures shared by the guard's test binaries (`conformance`, `faults`, `keeper`):
//! PostgreSQL at `FENCED_PG_URL` with a schema of its own per test, a SQLite file in a
//! temporary directory, and raw reads and writes of a fenced row that go around the
//! protocol.
//!
//! Each test binary compiles this module on its own and uses only part of it, so the
//! binaries include it with dead code allowed.

#[cfg(feature = "postgres")]
pub mod postgres;
pub mod row;
#[cfg(feature = "sqlite")]
pub mod sqlite;
