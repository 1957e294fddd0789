//! The GitHub Actions format: one workflow command per finding, which the runner shows
//! as an annotation on the file and line in the pull request.

use std::io::{self, Write};

use super::{Emitter, Run, display_path};
use crate::diagnostic::{Diagnostic, Severity};

/// `::error file=PATH,line=L,col=C,endLine=L,endColumn=C,title=CODE rule::message`, one
/// line per finding (`::warning` for warnings), escaped as the runner requires; nothing
/// else, so the annotations are the whole output.
#[derive(Debug, Clone, Copy, Default)]
pub struct Github;

impl Emitter for Github {
    fn emit(&mut self, w: &mut dyn Write, run: &Run) -> io::Result<()> {
        for d in &run.diagnostics {
            writeln!(w, "{}", command(d))?;
        }
        Ok(())
    }
}

fn command(d: &Diagnostic) -> String {
    let level = match d.severity() {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let message = match &d.help {
        Some(help) => format!("{}\nhelp: {help}", d.message),
        None => d.message.clone(),
    };
    format!(
        "::{level} file={},line={},col={},endLine={},endColumn={},title={}::{}",
        property(&display_path(&d.path)),
        d.range.start.line,
        d.range.start.column,
        d.range.end.line,
        d.range.end.column,
        property(&format!("{} {}", d.rule.code(), d.rule.name())),
        data(&message)
    )
}

/// A command's message: `%`, CR and LF escaped.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value: as [`data`], and `:` and `,` too.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Position, Range};
    use crate::rules::Rule;

    #[test]
    fn commands_are_escaped_one_per_line() {
        let d = Diagnostic {
            path: "sql/a,b:c%.sql".into(),
            range: Range {
                start: Position { line: 3, column: 5 },
                end: Position { line: 4, column: 9 },
            },
            rule: Rule::UnfencedWrite,
            table: None,
            message: "100% wrong\nreally".into(),
            help: Some("add `x`".into()),
        };
        let run = Run::new(vec![d]);
        let mut out = Vec::new();
        Github.emit(&mut out, &run).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "::error file=sql/a%2Cb%3Ac%25.sql,line=3,col=5,endLine=4,endColumn=9,title=FL001 unfenced-write::100%25 wrong%0Areally%0Ahelp: add `x`\n"
        );
    }
}
