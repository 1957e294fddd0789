//! Operation ids: a fenced write that records its own outcome, and the answer to "did
//! it apply?" after the acknowledgement was lost.
//!
//! A write made with an operation id (a [`Uuid`] chosen by the caller, for example
//! stored with the job before the first attempt) inserts `(OperationId, Key,
//! Generation, RecordedAt)` into the outcomes table
//! ([`FencedTable::operations_table`](crate::FencedTable::operations_table)) in the same
//! statement as the write (PostgreSQL: `WITH w AS (UPDATE … RETURNING …) INSERT … FROM
//! w`; SQL Server: `UPDATE … OUTPUT … INTO`) or in the same transaction (SQLite:
//! `BEGIN IMMEDIATE`, the write, the insert when the write changed its row, `COMMIT`).
//! Either both happen or neither does. No statement of the guard ever updates or
//! deletes an outcome, so later writes do not erase it.
//!
//! The operation id is the outcomes table's primary key, and the write itself also
//! requires that the id is not recorded yet: a retry of an applied operation cannot
//! apply twice. It is answered [`OperationOutcome::AlreadyApplied`].

use uuid::Uuid;

use crate::error::Error;
use crate::outcome::Outcome;

/// What the database did with a fenced write that carried an operation id.
#[must_use = "a refused write did not happen; the caller must act on it"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationOutcome {
    /// The write changed the row, and its operation id was recorded with it.
    Applied,
    /// The write matched no row and nothing was recorded: the fence refused it (see
    /// the [`Store`](crate::Store) method for the possible causes), or the lease was
    /// revoked locally and nothing was sent.
    Refused,
    /// Nothing was written now, because this operation id was already applied by an
    /// earlier attempt, to `generation`. This is what a retry after a lost
    /// acknowledgement sees when the first attempt had committed. A lease revoked
    /// locally sends nothing and answers [`Refused`](OperationOutcome::Refused) even
    /// then: [`resolve`](crate::Store::resolve) the id to know.
    AlreadyApplied {
        /// The generation the earlier attempt wrote under.
        generation: i64,
    },
}

impl OperationOutcome {
    /// `true` when the operation's effect is in the database: [`Applied`] now, or
    /// [`AlreadyApplied`] earlier.
    ///
    /// [`Applied`]: OperationOutcome::Applied
    /// [`AlreadyApplied`]: OperationOutcome::AlreadyApplied
    pub fn is_in_effect(self) -> bool {
        !matches!(self, OperationOutcome::Refused)
    }

    /// The plain [`Outcome`] of this attempt: `Applied` only when this attempt wrote.
    pub fn this_attempt(self) -> Outcome {
        match self {
            OperationOutcome::Applied => Outcome::Applied,
            OperationOutcome::Refused | OperationOutcome::AlreadyApplied { .. } => Outcome::Refused,
        }
    }
}

/// The answer of [`Store::resolve`](crate::Store::resolve): is an operation id recorded
/// in the outcomes table?
///
/// # When `NotApplied` is final
///
/// `Applied` is always final: outcomes are never erased. `NotApplied` means "not
/// committed as of this read". It stays true for good once no earlier attempt can still
/// commit, which holds when either:
///
/// - the lease the attempts carried can no longer write: it has expired by the
///   database's clock, was released, or a successor acquired the row, or the epoch was
///   advanced (each attempt's own `WHERE` would now match nothing); or
/// - every attempt has finished on the server: the call that carried it returned
///   (success, refusal or error) *and* the connection it used is known closed, or the
///   server's statement timeout has passed since it was sent.
///
/// Until then, an attempt whose reply was lost may still be running on the server.
/// Retrying **with the same operation id** is always safe, whatever the resolution:
/// the write requires the id to be unrecorded, and the id is the outcomes table's
/// primary key, so at most one attempt applies; a second one answers
/// [`OperationOutcome::AlreadyApplied`]. Retrying with a *new* id is safe only once
/// `NotApplied` is final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resolution {
    /// The operation was applied, to this generation of its row.
    Applied {
        /// The generation the write was made under.
        generation: i64,
    },
    /// The operation is not recorded (see above for when that is final).
    NotApplied,
}

impl Resolution {
    /// `true` for [`Resolution::Applied`].
    pub fn is_applied(self) -> bool {
        matches!(self, Resolution::Applied { .. })
    }
}

/// A fresh random operation id.
pub fn new_operation_id() -> Uuid {
    Uuid::new_v4()
}

/// `true` when `error` is a uniqueness violation reported by the database: for a
/// recorded write, two attempts of one operation id raced and the other one committed.
pub(crate) fn is_unique_violation(error: &Error) -> bool {
    match error.cause() {
        #[cfg(feature = "postgres")]
        Error::Postgres(e) => e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION),
        #[cfg(feature = "sqlite")]
        Error::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => {
            e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                || e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
        }
        #[cfg(feature = "mssql")]
        Error::Mssql(tiberius::error::Error::Server(e)) => {
            matches!(crate::error::mssql_number(e), 2627 | 2601)
        }
        #[cfg(any(feature = "sqlx-postgres", feature = "sqlx-sqlite"))]
        Error::Sqlx(sqlx::Error::Database(e)) => e.is_unique_violation(),
        _ => false,
    }
}
