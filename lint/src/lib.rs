//! The analysis behind `fenced-lint`: finds SQL writes that bypass the fence, in `.sql`
//! files (T-SQL and PostgreSQL, no configuration) and in SQL inside Rust string literals.
//!
//! ```
//! use fenced_lint::{Config, Linter};
//! use std::path::Path;
//!
//! let config = Config::from_toml("[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n").unwrap();
//! let linter = Linter::new(&config);
//! let report = linter.check_file(
//!     Path::new("publish.sql"),
//!     b"UPDATE dbo.ReportPublication SET Payload = @payload WHERE ReportId = @reportId;",
//! );
//! assert_eq!(report.diagnostics[0].rule.name(), "unfenced-write");
//! ```
//!
//! The command line (`cli` feature, on by default) walks directories, runs the two
//! passes ([`Linter::discover_tables`], then [`Linter::check_file`]) and reports.

// docs.rs (`[package.metadata.docs.rs]`) shows each feature-gated item's feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod config;
pub mod diagnostic;
pub mod error;
pub mod exclude;
mod linter;
mod prefilter;
#[cfg(feature = "cli")]
pub mod report;
pub mod rules;
mod severity;
pub mod source;
pub mod sql;
pub mod suppress;

pub use config::{Config, TableSpec};
pub use diagnostic::{Diagnostic, Position, Range, Severity};
pub use error::{ConfigError, Error, Result};
pub use linter::{Coverage, FileReport, Linter, Scan, SqlFinding, explain};
pub use rules::Rule;
