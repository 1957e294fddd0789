//! The crate's error type.
//!
//! An [`Error`] is an operational failure: bad input, bad configuration, or a driver,
//! network or SQL error. A write refused by the fence is *not* an error; it is
//! [`Outcome::Refused`](crate::Outcome::Refused).

use crate::table::KeyType;

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
    /// An error reported by PostgreSQL or by the `tokio-postgres` driver.
    #[cfg(feature = "postgres")]
    #[error("postgresql error")]
    Postgres(#[source] tokio_postgres::Error),
    /// An error reported by SQLite or by the `rusqlite` driver.
    #[cfg(feature = "sqlite")]
    #[error("sqlite error")]
    Sqlite(#[source] rusqlite::Error),
    /// An error reported by SQL Server or by the `tiberius` driver.
    #[cfg(feature = "mssql")]
    #[error("sql server error")]
    Mssql(#[source] tiberius::error::Error),
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
    /// own is such an answer), and for errors raised before anything was sent (bad
    /// input or configuration, a cancelled wait, a failed connection to SQL Server).
    pub fn may_have_committed(&self) -> bool {
        match self {
            Error::InvalidIdentifier { .. }
            | Error::ProtectedColumn { .. }
            | Error::Config(_)
            | Error::KeyType { .. }
            | Error::InvalidTtl { .. }
            | Error::Cancelled => false,
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
