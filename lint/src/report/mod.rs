//! Reporters: one emitter per output format behind one trait.
//!
//! A run's findings are collected into a [`Run`], sorted by the [`Ord`] on
//! [`Diagnostic`] (path, position, rule), and handed to the [`Emitter`] of the chosen
//! [`Format`]. Every format prints the same findings in the same order, so two runs over
//! the same tree produce the same bytes.

mod github;
mod human;
mod json;
mod sarif;

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::diagnostic::{Diagnostic, Severity};

pub use github::Github;
pub use human::Human;
pub use json::Json;
pub use sarif::Sarif;

/// Everything a reporter needs to know about one run of the lint.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// The findings, in the order they are printed (see [`Run::new`]).
    pub diagnostics: Vec<Diagnostic>,
    /// How many candidate files the run read (or tried to read).
    pub files_scanned: usize,
    /// How many SQL statements the analysis looked at.
    pub statements_checked: usize,
    /// The decoded text of the files that have findings, for the human format's source
    /// snippets. A file missing here is reported without a snippet.
    pub sources: BTreeMap<PathBuf, String>,
}

impl Run {
    /// A run with these findings, sorted (path, position, rule) and without duplicates.
    pub fn new(mut diagnostics: Vec<Diagnostic>) -> Self {
        diagnostics.sort();
        diagnostics.dedup();
        Self {
            diagnostics,
            ..Self::default()
        }
    }

    /// The number of findings at `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity() == severity)
            .count()
    }

    /// Whether any finding is an error, which makes the run exit 1.
    pub fn has_errors(&self) -> bool {
        self.count(Severity::Error) > 0
    }
}

/// Writes a [`Run`] in one output format.
pub trait Emitter {
    /// Writes the whole report for `run` to `w`.
    fn emit(&mut self, w: &mut dyn Write, run: &Run) -> io::Result<()>;
}

/// The output formats of `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Format {
    /// rustc-like text with source snippets, for people (the default).
    #[default]
    Human,
    /// One JSON document in the shape of the lint's contract, for tools.
    Json,
    /// SARIF 2.1.0, for code-scanning services.
    Sarif,
    /// GitHub Actions workflow commands, shown as annotations on pull requests.
    Github,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: &'static [Format] =
        &[Format::Human, Format::Json, Format::Sarif, Format::Github];

    /// Whether the report shows source snippets, so the run must keep the texts of the
    /// files with findings ([`Run::sources`]).
    pub fn shows_sources(self) -> bool {
        matches!(self, Format::Human)
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Human => "human",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Github => "github",
        }
    }

    /// The emitter for this format. `color` only affects the human format.
    pub fn emitter(self, color: bool) -> Box<dyn Emitter> {
        match self {
            Format::Human => Box::new(Human::new(color)),
            Format::Json => Box::new(Json),
            Format::Sarif => Box::new(Sarif),
            Format::Github => Box::new(Github),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a `--format` value that is not a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}`; expected human, json, sarif or github")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .iter()
            .copied()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// A path as reports print it: as given or found, with `/` separators on every platform
/// so that reports are the same on Windows and Unix.
pub fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        text.into_owned()
    } else {
        text.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_round_trip_through_their_names() {
        for format in Format::ALL {
            assert_eq!(format.name().parse::<Format>(), Ok(*format));
        }
        assert_eq!("JSON".parse::<Format>(), Ok(Format::Json));
        assert!("xml".parse::<Format>().is_err());
    }
}
