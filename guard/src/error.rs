//! The crate's error type.
//!
//! An [`Error`] is an operational failure: bad input, bad configuration, or a driver,
//! network or SQL error. A write refused by the fence is *not* an error; it is
//! [`Outcome::Refused`](crate::Outcome::Refused).

use crate::table::types::KeyType;

/// Everything that can go wrong in the guard, apart from a refusal by the fence.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An identifier does not follow the grammar: ASCII letters, digits and `_`, not
    /// starting with a digit, at most 128 characters, with at most one `schema.` part.
    #[error("invalid identifier {identifier:?}: {reason}")]
    InvalidIdentifier {
        /// The identifier as given.
        identifier: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A column the caller asked to write is one of the protocol's own columns.
    #[error(
        "column {column:?} belongs to the fencing protocol and cannot be assigned by the caller"
    )]
    ProtectedColumn {
        /// The column as given.
        column: String,
    },
    /// A configuration value or an argument is not acceptable.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A key of one type was used with a table whose key column has another type.
    #[error("key type mismatch: the table's key is {expected}, the key given is {found}")]
    KeyType {
        /// The table's key type.
        expected: KeyType,
        /// The type of the key that was given.
        found: KeyType,
    },
    /// A lease's time to live is zero or longer than [`MAX_TTL`](crate::MAX_TTL).
    #[error("a lease's ttl must be between 1 ms and {} ms, got {ttl:?}", crate::MAX_TTL.as_millis())]
    InvalidTtl {
        /// The ttl asked for.
        ttl: std::time::Duration,
    },
    /// Waiting for a lease was cancelled through its `CancellationToken`.
    #[error("waiting for the lease was cancelled")]
    Cancelled,
    /// The database answered with something the protocol does not expect, such as a
    /// column type this crate does not decode.
    #[error("unexpected result from the database: {0}")]
    UnexpectedResult(String),
    /// A blocking database task could not complete.
    #[error("database task failed")]
    Task(#[source] tokio::task::JoinError),
    /// An error reported by PostgreSQL or by the `tokio-postgres` driver. Displays what
    /// the server said and its SQLSTATE (`error returned from database: relation "x"
    /// does not exist (SQLSTATE 42P01)`), or the driver's error and its causes; the
    /// driver's error is the variant's field, also reached by
    /// [`as_postgres`](Error::as_postgres).
    #[cfg(feature = "postgres")]
    #[error("{}", display::Postgres(.0))]
    Postgres(tokio_postgres::Error),
    /// An error reported by SQLite or by the `rusqlite` driver. Displays SQLite's
    /// message and its extended result code (`error returned from database: UNIQUE
    /// constraint failed: t.k (sqlite code 2067)`), or the driver's error and its causes.
    #[cfg(feature = "sqlite")]
    #[error("{}", display::Sqlite(.0))]
    Sqlite(rusqlite::Error),
    /// An error reported by SQL Server or by the `tiberius` driver. Displays the
    /// server's message and its error number (`error returned from database: Invalid
    /// object name 'x'. (sql server error 208)`), or the driver's error.
    #[cfg(feature = "mssql")]
    #[error("{}", display::Mssql(.0))]
    Mssql(tiberius::error::Error),
    /// A statement failed before the database executed any of it: its connection could
    /// not be opened or was found closed before the statement was sent, the statement
    /// failed to prepare, or a value could not be encoded for its parameter (a value of
    /// the wrong type for its column). Nothing was written, and sending the statement
    /// again is safe. Displays its cause, then "nothing was executed";
    /// `as_postgres` and [`database_code`](Error::database_code) see through it.
    #[error("{0}; nothing was executed")]
    NotExecuted(Box<Error>),
    /// The fenced table has no row for this key: it was never
    /// [provisioned](crate::Store::provision), or the key is mistyped.
    #[error("table {table} has no row for key {key}; provision it first")]
    NotProvisioned {
        /// The fenced table.
        table: String,
        /// The key given.
        key: crate::Key,
    },
    /// An operation id already applied to another key was given with a write to this
    /// one. An operation id belongs to one key; nothing was written.
    #[error(
        "operation {op} was already applied to another key; an operation id belongs to one key"
    )]
    OperationReused {
        /// The operation id.
        op: uuid::Uuid,
    },
    /// No pooled connection became free, or none could be opened, within the pool's
    /// checkout timeout (`Postgres::checkout_timeout`, `SqliteOptions::checkout_timeout`).
    /// Nothing was sent.
    #[error("no pooled connection within {timeout:?}; nothing was executed")]
    PoolTimedOut {
        /// The checkout timeout that passed.
        timeout: std::time::Duration,
    },
    /// An error reported by the database through sqlx, or by sqlx itself. Displays
    /// sqlx's own message; the error is the variant's field.
    #[cfg(any(feature = "sqlx-postgres", feature = "sqlx-sqlite"))]
    #[error("{0}")]
    Sqlx(sqlx::Error),
    /// A [fenced transaction](crate::transaction) on the guard's pool outlived the
    /// timeout it was begun with: it was rolled back, and nothing of it was written.
    #[error("the fenced transaction outlived its timeout of {timeout:?} and was rolled back")]
    TransactionTimedOut {
        /// The timeout it was begun with.
        timeout: std::time::Duration,
    },
    /// [`Store::fence`](crate::Store::fence) was given a connection with no transaction
    /// open, or a statement of a [`Fenced`](crate::Fenced) found that its transaction
    /// had ended. Outside a transaction the lock on the lease's row ends with each
    /// statement and fences nothing, so nothing was executed.
    #[error("{0}; nothing was executed")]
    NotInTransaction(&'static str),
    /// A statement given to a [`Fenced`](crate::Fenced) was refused before it was
    /// sent: it would end the fenced transaction, or write a table that only the guard's
    /// own statements write. Nothing was executed.
    #[error("statement refused inside a fenced transaction: {reason}; nothing was executed")]
    StatementRefused {
        /// Which construct, and what to write instead.
        reason: String,
    },
    /// A network error while connecting to SQL Server.
    #[cfg(feature = "mssql")]
    #[error("sql server connection failed")]
    MssqlConnect(#[source] std::io::Error),
    /// A publication sent with an operation id by
    /// [`Work::publication_retries`](crate::Work::publication_retries) failed on every
    /// attempt, each time without a clear answer ([`Error::may_have_committed`]): it may
    /// or may not have committed. [`Store::resolve`](crate::Store::resolve) `op` to
    /// know.
    #[error("publication {op} failed {attempts} times and may or may not have committed")]
    PublicationUnsettled {
        /// The operation id every attempt carried.
        op: uuid::Uuid,
        /// How many attempts were sent.
        attempts: u32,
        /// The last attempt's error.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// Whether a write that ended with this error may nonetheless have committed: its
    /// answer was lost or could not be read (a network or driver error, a connection
    /// closed or ended by the server, an answer the protocol did not expect, a failed
    /// blocking task). Then an operation id tells what happened
    /// ([`Store::resolve`](crate::Store::resolve)).
    ///
    /// `false` when the database answered the statement with an error, which rolls an
    /// autocommitted statement back (SQLite runs in the process, so every error of its
    /// own is such an answer), and for errors raised before the statement was executed
    /// ([`Error::NotExecuted`]; bad input or configuration, a cancelled wait, a failed
    /// connection to SQL Server).
    pub fn may_have_committed(&self) -> bool {
        match self {
            Error::InvalidIdentifier { .. }
            | Error::ProtectedColumn { .. }
            | Error::Config(_)
            | Error::KeyType { .. }
            | Error::InvalidTtl { .. }
            | Error::Cancelled
            | Error::NotExecuted(_)
            | Error::PoolTimedOut { .. }
            | Error::TransactionTimedOut { .. }
            | Error::NotInTransaction(_)
            | Error::StatementRefused { .. }
            | Error::OperationReused { .. }
            | Error::NotProvisioned { .. } => false,
            Error::UnexpectedResult(_) | Error::Task(_) | Error::PublicationUnsettled { .. } => {
                true
            }
            // An error of severity ERROR ends only its statement; FATAL or PANIC ends
            // the session, and could follow a commit whose answer was not yet read.
            #[cfg(feature = "postgres")]
            Error::Postgres(error) => error.as_db_error().is_none_or(|db| {
                !matches!(
                    db.parsed_severity(),
                    Some(tokio_postgres::error::Severity::Error)
                )
            }),
            #[cfg(feature = "sqlite")]
            Error::Sqlite(_) => false,
            #[cfg(feature = "mssql")]
            Error::Mssql(error) => !matches!(error, tiberius::error::Error::Server(_)),
            #[cfg(feature = "mssql")]
            Error::MssqlConnect(_) => false,
            // The database answered: the statement's own error, which ends only it.
            #[cfg(any(feature = "sqlx-postgres", feature = "sqlx-sqlite"))]
            Error::Sqlx(error) => !matches!(error, sqlx::Error::Database(_)),
        }
    }
}

impl Error {
    /// Marks a driver error raised before the statement was executed.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn not_executed(error: impl Into<Error>) -> Error {
        match error.into() {
            already @ (Error::NotExecuted(_) | Error::PoolTimedOut { .. }) => already,
            error => Error::NotExecuted(Box::new(error)),
        }
    }

    /// This error, or the one an [`Error::NotExecuted`] carries.
    pub(crate) fn cause(&self) -> &Error {
        match self {
            Error::NotExecuted(error) => error.cause(),
            error => error,
        }
    }

    /// The `tokio-postgres` error, for an [`Error::Postgres`] (also inside an
    /// [`Error::NotExecuted`]).
    #[cfg(feature = "postgres")]
    pub fn as_postgres(&self) -> Option<&tokio_postgres::Error> {
        match self.cause() {
            Error::Postgres(error) => Some(error),
            _ => None,
        }
    }

    /// The `rusqlite` error, for an [`Error::Sqlite`] (also inside an
    /// [`Error::NotExecuted`]).
    #[cfg(feature = "sqlite")]
    pub fn as_sqlite(&self) -> Option<&rusqlite::Error> {
        match self.cause() {
            Error::Sqlite(error) => Some(error),
            _ => None,
        }
    }

    /// The `tiberius` error, for an [`Error::Mssql`] (also inside an
    /// [`Error::NotExecuted`]).
    #[cfg(feature = "mssql")]
    pub fn as_mssql(&self) -> Option<&tiberius::error::Error> {
        match self.cause() {
            Error::Mssql(error) => Some(error),
            _ => None,
        }
    }

    /// The database's own code for an error it answered with, as text: the SQLSTATE
    /// (`42P01`), the SQL Server error number (`208`) or the SQLite extended result
    /// code (`2067`). `None` for every other error.
    pub fn database_code(&self) -> Option<String> {
        match self.cause() {
            #[cfg(feature = "postgres")]
            Error::Postgres(error) => error.as_db_error().map(|db| db.code().code().to_owned()),
            #[cfg(feature = "sqlite")]
            Error::Sqlite(error) => error.sqlite_error().map(|e| e.extended_code.to_string()),
            #[cfg(feature = "mssql")]
            Error::Mssql(tiberius::error::Error::Server(token)) => {
                Some(mssql_number(token).to_string())
            }
            #[cfg(any(feature = "sqlx-postgres", feature = "sqlx-sqlite"))]
            Error::Sqlx(sqlx::Error::Database(db)) => db.code().map(|code| code.into_owned()),
            _ => None,
        }
    }
}

/// How driver errors are displayed: what the database said, as sqlx does, and
/// otherwise the driver's error with its causes. A driver error displayed this way is
/// not also returned by `source()`.
#[cfg(any(feature = "postgres", feature = "sqlite", feature = "mssql"))]
mod display {
    use std::fmt;

    /// Writes `error` and each of its causes, separated by `: `, skipping a cause whose
    /// text the previous one already ended with.
    fn chain(f: &mut fmt::Formatter<'_>, error: &dyn std::error::Error) -> fmt::Result {
        let mut written = error.to_string();
        f.write_str(&written)?;
        let mut cause = error.source();
        while let Some(error) = cause {
            let text = error.to_string();
            if !written.ends_with(&text) {
                write!(f, ": {text}")?;
                written = text;
            }
            cause = error.source();
        }
        Ok(())
    }

    #[cfg(feature = "postgres")]
    pub(super) struct Postgres<'a>(pub(super) &'a tokio_postgres::Error);

    #[cfg(feature = "postgres")]
    impl fmt::Display for Postgres<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.0.as_db_error() {
                Some(db) => {
                    write!(
                        f,
                        "error returned from database: {} (SQLSTATE {})",
                        db.message(),
                        db.code().code()
                    )?;
                    if let Some(detail) = db.detail() {
                        write!(f, "; detail: {detail}")?;
                    }
                    if let Some(hint) = db.hint() {
                        write!(f, "; hint: {hint}")?;
                    }
                    Ok(())
                }
                None => {
                    f.write_str("postgresql: ")?;
                    chain(f, self.0)
                }
            }
        }
    }

    #[cfg(feature = "sqlite")]
    pub(super) struct Sqlite<'a>(pub(super) &'a rusqlite::Error);

    #[cfg(feature = "sqlite")]
    impl fmt::Display for Sqlite<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.0 {
                rusqlite::Error::SqliteFailure(error, message) => {
                    f.write_str("error returned from database: ")?;
                    match message {
                        Some(message) => f.write_str(message)?,
                        None => write!(f, "{error}")?,
                    }
                    write!(f, " (sqlite code {})", error.extended_code)
                }
                other => {
                    f.write_str("sqlite: ")?;
                    chain(f, other)
                }
            }
        }
    }

    #[cfg(feature = "mssql")]
    pub(super) struct Mssql<'a>(pub(super) &'a tiberius::error::Error);

    #[cfg(feature = "mssql")]
    impl fmt::Display for Mssql<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.0 {
                tiberius::error::Error::Server(token) => write!(
                    f,
                    "error returned from database: {} (sql server error {}, state {}, class {})",
                    token.message(),
                    super::mssql_number(token),
                    token.state(),
                    token.class()
                ),
                other => {
                    f.write_str("sql server: ")?;
                    chain(f, other)
                }
            }
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(feature = "postgres")]
impl From<tokio_postgres::Error> for Error {
    fn from(error: tokio_postgres::Error) -> Self {
        Error::Postgres(error)
    }
}

#[cfg(feature = "sqlite")]
impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Self {
        Error::Sqlite(error)
    }
}

#[cfg(feature = "mssql")]
impl From<tiberius::error::Error> for Error {
    fn from(error: tiberius::error::Error) -> Self {
        Error::Mssql(error)
    }
}

/// SQL Server: what the guard's batches add to an error's number when they raise it
/// again inside the caller's transaction (`mssql::dialect::in_transaction`), and what
/// [`Error::database_code`] takes off. Here, with the reading of errors, so that the
/// errors need none of SQL Server's statements.
pub(crate) const MSSQL_REPLAYED: u32 = 1_000_000;

/// A SQL Server error's number, as the database first raised it: the guard's batches
/// raise an error again inside the caller's transaction with
/// a fixed number (1,000,000) added to it.
#[cfg(feature = "mssql")]
pub(crate) fn mssql_number(token: &tiberius::error::TokenError) -> u32 {
    match token.code() {
        code if code > MSSQL_REPLAYED => code - MSSQL_REPLAYED,
        code => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "sqlite")]
    #[test]
    fn a_sqlite_error_displays_what_sqlite_said_and_its_code() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)")
            .unwrap();
        let error = Error::from(conn.execute("INSERT INTO t VALUES (1)", []).unwrap_err());
        assert_eq!(
            error.to_string(),
            "error returned from database: UNIQUE constraint failed: t.k (sqlite code 1555)"
        );
        assert_eq!(error.database_code().as_deref(), Some("1555"));
        assert!(
            std::error::Error::source(&error).is_none(),
            "displayed, so not a source too"
        );
        let driver = error.as_sqlite().expect("the driver's error");
        assert_eq!(
            driver.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ConstraintViolation)
        );

        // A driver error: the database was never asked.
        let error = Error::from(
            conn.query_row("SELECT 'x'", [], |row| row.get::<_, i64>(0))
                .unwrap_err(),
        );
        assert_eq!(
            error.to_string(),
            "sqlite: Invalid column type Text at index: 0, name: 'x'"
        );
        assert_eq!(error.database_code(), None);
    }

    #[test]
    fn errors_of_the_guard_have_no_database_code() {
        assert_eq!(Error::Cancelled.database_code(), None);
    }
}
