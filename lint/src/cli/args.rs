//! The command line, exactly as the lint's contract states it.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use fenced_lint::report::Format;

/// Finds SQL writes that bypass the fence, in `.sql` files and in SQL inside Rust string
/// literals.
///
/// Exit status: 0 when no finding is an error, 1 when one is, 2 on a usage or
/// configuration error.
#[derive(Debug, Parser)]
#[command(
    name = "fenced-lint",
    version,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,

    /// Files and directories to lint (default: the current directory). Directories are
    /// walked for `.sql` and `.rs` files, skipping hidden ones and honouring `.gitignore`
    /// and `.ignore` in git repositories and outside them alike; a file named here is
    /// linted whatever its extension, even if ignored.
    #[arg(value_name = "PATH")]
    pub(crate) paths: Vec<PathBuf>,

    /// The configuration file (default: `fenced.toml`, or `fenced-lint.toml`, found from the current directory
    /// upwards; without one, fenced tables come only from `CREATE TABLE` statements).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// The output format.
    #[arg(long, value_name = "FORMAT", default_value = "human")]
    pub(crate) format: FormatArg,

    /// Write the report to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Print a rule's documentation (by name or code), or list the rules.
    Explain {
        /// A rule name such as `unfenced-write`, or a code such as `FL001`.
        rule: Option<String>,
    },
}

/// `--format` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum FormatArg {
    /// rustc-like text with source snippets.
    Human,
    /// The contract's JSON document.
    Json,
    /// SARIF 2.1.0 for code scanning.
    Sarif,
    /// GitHub Actions annotations (workflow commands).
    Github,
}

impl From<FormatArg> for Format {
    fn from(arg: FormatArg) -> Format {
        match arg {
            FormatArg::Human => Format::Human,
            FormatArg::Json => Format::Json,
            FormatArg::Sarif => Format::Sarif,
            FormatArg::Github => Format::Github,
        }
    }
}
