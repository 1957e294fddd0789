//! The benchmark's error type.

/// Everything that can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// The guard failed (a driver, pool or configuration error inside the guard).
    #[error("guard operation failed")]
    Guard(#[source] fenced_guard::Error),
    /// A raw tokio-postgres statement failed.
    #[error("postgresql statement failed")]
    Postgres(#[source] tokio_postgres::Error),
    /// A raw tiberius statement failed.
    #[error("sql server statement failed")]
    Mssql(#[source] tiberius::error::Error),
    /// A raw sqlx statement failed.
    #[error("sqlx statement failed")]
    Sqlx(#[source] sqlx::Error),
    /// A raw rusqlite statement failed.
    #[error("sqlite statement failed")]
    Sqlite(#[source] rusqlite::Error),
    /// A file or directory could not be read or written.
    #[error("i/o failed on {path}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The system refused to start a benchmark thread.
    #[error("cannot start a benchmark thread")]
    Spawn(#[source] std::io::Error),
    /// A worker task or thread panicked or was cancelled.
    #[error("a benchmark worker did not finish")]
    Worker,
    /// A statement that must succeed in an uncontended cycle was refused: the harness
    /// or the protocol is broken, and the figures would be meaningless.
    #[error("{0}")]
    Protocol(String),
    /// An argument is not acceptable.
    #[error("{0}")]
    Usage(String),
}

impl From<fenced_guard::Error> for Error {
    fn from(e: fenced_guard::Error) -> Self {
        Error::Guard(e)
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        Error::Postgres(e)
    }
}

impl From<tiberius::error::Error> for Error {
    fn from(e: tiberius::error::Error) -> Self {
        Error::Mssql(e)
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Sqlx(e)
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Sqlite(e)
    }
}

/// The benchmark's result type.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
