//! sqlx: a caller's pools, connections and transactions, PostgreSQL and SQLite.
//!
//! Statements go through sqlx's own prepared statement cache. Values are bound with the
//! type of each [`Value`]; a null is bound with no type on PostgreSQL, so the server
//! infers it from the column, as for the guard's own pool. SQLite receives a UUID as
//! its hyphenated lowercase text, as the guard stores it.
//!
//! Each database's executors are in a file of their own (`postgres.rs`, `sqlite.rs`);
//! what they share, the [`Executor`] they implement with one macro, is here.

use sqlx::{AssertSqlSafe, Column as _, Row as _, TypeInfo as _};
use tokio::sync::Mutex;

use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::{Executor, InTransaction, IntoExecutor};
use crate::value::Value;

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        Error::Sqlx(error)
    }
}

/// The type name sqlx gives a column, for a column neither database's executors decode.
fn undecoded(name: &str, type_name: &str) -> Error {
    Error::UnexpectedResult(format!(
        "column {name} has type {type_name}, which is not decoded; cast it in the query"
    ))
}

/// Implements [`Executor`] for one sqlx executor type, given how to reach a
/// `sqlx::Executor` from `&self`.
macro_rules! sqlx_executor {
    ($ty:ty, $db:ty, $dialect:expr, $bind:expr, $decode:expr, |$this:ident| $executor:expr $(, $extra:item)*) => {
        impl Executor for $ty {
            $($extra)*

            fn dialect(&self) -> Dialect {
                $dialect
            }

            async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
                let query = params
                    .iter()
                    .fold(sqlx::query::<$db>(AssertSqlSafe(sql.to_owned())), $bind);
                let $this = self;
                Ok(query.execute($executor).await?.rows_affected())
            }

            async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
                let query = params
                    .iter()
                    .fold(sqlx::query::<$db>(AssertSqlSafe(sql.to_owned())), $bind);
                let $this = self;
                // Every row is read, so that a later row's error is the statement's.
                let rows = query.fetch_all($executor).await?;
                rows.first().map($decode).transpose()
            }

            async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
                let query = params
                    .iter()
                    .fold(sqlx::query::<$db>(AssertSqlSafe(sql.to_owned())), $bind);
                let $this = self;
                query.fetch_all($executor).await?.iter().map($decode).collect()
            }

            async fn execute_batch(&self, sql: &str) -> Result<()> {
                let $this = self;
                sqlx::raw_sql(AssertSqlSafe(sql.to_owned()))
                    .execute($executor)
                    .await?;
                Ok(())
            }
        }
    };
}

#[cfg(feature = "sqlx-postgres")]
mod postgres;
#[cfg(feature = "sqlx-postgres")]
pub use postgres::{SqlxPgConnection, SqlxPgPool};

#[cfg(feature = "sqlx-sqlite")]
mod sqlite;
#[cfg(feature = "sqlx-sqlite")]
pub use sqlite::{SqlxSqliteConnection, SqlxSqlitePool};
