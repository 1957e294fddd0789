//! The one shape every finding takes, whatever rule raised it and whatever format
//! reports it.

use std::fmt;
use std::path::PathBuf;

use crate::rules::Rule;
pub use crate::severity::Severity;

/// A position in a file: 1-based line, 1-based column counted in characters (not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Position {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// The stretch of a file a finding is about: for a statement, from its first keyword to
/// its last character; for a file-level problem, the start of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Range {
    /// Where the statement's first keyword sits.
    pub start: Position,
    /// Where the statement ends (inclusive of its last character).
    pub end: Position,
}

/// One finding.
///
/// Ordering is by path, then position, then rule, which is the order every reporter
/// prints in, so that runs are reproducible.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Diagnostic {
    /// The file, as given on the command line or found by the walk.
    pub path: PathBuf,
    /// Where in the file.
    pub range: Range,
    /// The rule that raised it; its code, name and default severity come from here.
    pub rule: Rule,
    /// The fenced table the statement writes, when there is one.
    pub table: Option<String>,
    /// What is wrong, in one lowercase sentence without a trailing period.
    pub message: String,
    /// What to do about it, when the rule can say.
    pub help: Option<String>,
}

impl Diagnostic {
    /// The severity this finding is reported at.
    pub fn severity(&self) -> Severity {
        self.rule.severity()
    }
}

impl Diagnostic {
    /// The finding for a file that could not be read, decoded, or is too large to be
    /// source: rule `unreadable-file`, at line 1, column 1. The walker builds it for
    /// reading errors; [`Linter::check_file`](crate::Linter::check_file) for the rest.
    pub fn unreadable(path: impl Into<PathBuf>, reason: impl fmt::Display) -> Diagnostic {
        let origin = Position { line: 1, column: 1 };
        Diagnostic {
            path: path.into(),
            range: Range { start: origin, end: origin },
            rule: Rule::UnreadableFile,
            table: None,
            message: format!("file not checked: {reason}"),
            help: Some("make the file readable UTF-8 or UTF-16 with a byte order mark, or exclude it in .gitignore".to_owned()),
        }
    }
}
