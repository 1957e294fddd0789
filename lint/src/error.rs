//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong outside the findings themselves: reading or understanding the
/// configuration, or a statement handed to the SQL API that cannot be analysed.
///
/// Findings about the code under check are never errors: they are
/// [`Diagnostic`](crate::diagnostic::Diagnostic)s.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration file could not be read.
    #[error("cannot read configuration file `{}`", path.display())]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is not valid TOML or does not have the expected shape.
    #[error("invalid configuration{}", path.as_ref().map(|p| format!(" in `{}`", p.display())).unwrap_or_default())]
    ParseConfig {
        /// The file, when the text came from one.
        path: Option<PathBuf>,
        /// What the TOML reader said.
        #[source]
        source: toml::de::Error,
    },
    /// The configuration parses but says something impossible.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A single SQL statement given to [`parse_update`](crate::sql::parse_update) could
    /// not be analysed; the [`SqlError`](crate::sql::SqlError) carries its byte range.
    #[error(transparent)]
    Sql(#[from] crate::sql::SqlError),
}

/// The error type of configuration loading; the crate's [`Error`].
pub type ConfigError = Error;

/// `Result` with the crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
