//! The human format: rustc-like findings with the statement's first lines underlined.

use std::io::{self, Write};

use super::{Emitter, Run, display_path};
use crate::diagnostic::{Diagnostic, Severity};

/// How many lines of a statement the snippet shows before eliding the rest.
const SNIPPET_LINES: usize = 3;
/// How many columns a tab takes in a snippet.
const TAB_WIDTH: usize = 4;

/// rustc-like text: `error[FL001]: message`, ` --> path:line:col`, the statement's first
/// lines underlined with `^`, `= help:` when the rule says what to add, and one summary
/// line at the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct Human {
    color: bool,
}

impl Human {
    /// A human emitter; with `color`, severities, gutters and underlines are ANSI-colored.
    pub fn new(color: bool) -> Self {
        Self { color }
    }

    fn paint(&self, style: Style, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("{}{text}\x1b[0m", style.ansi())
        } else {
            text.to_owned()
        }
    }

    fn diagnostic(&self, w: &mut dyn Write, run: &Run, d: &Diagnostic) -> io::Result<()> {
        let severity = d.severity();
        let tone = Style::of(severity);
        let header = format!("{severity}[{}]", d.rule.code());
        writeln!(
            w,
            "{}{}",
            self.paint(tone, &header),
            self.paint(Style::Bold, &format!(": {}", d.message))
        )?;

        let lines = run
            .sources
            .get(&d.path)
            .map(|text| snippet(text, d))
            .unwrap_or_default();
        let last_line = lines.last().map_or(d.range.start.line, |l| l.number);
        let width = digits(last_line);
        let pad = " ".repeat(width);
        writeln!(
            w,
            "{pad}{} {}:{}:{}",
            self.paint(Style::Gutter, "-->"),
            display_path(&d.path),
            d.range.start.line,
            d.range.start.column
        )?;
        let bar = self.paint(Style::Gutter, "|");
        if !lines.is_empty() {
            writeln!(w, "{pad} {bar}")?;
            for line in &lines {
                let number = self.paint(Style::Gutter, &format!("{:>width$}", line.number));
                writeln!(w, "{number} {bar} {}", line.text.trim_end())?;
                if line.marks > 0 {
                    writeln!(
                        w,
                        "{pad} {bar} {}{}",
                        " ".repeat(line.indent),
                        self.paint(tone, &"^".repeat(line.marks))
                    )?;
                }
            }
            if lines.len() == SNIPPET_LINES && d.range.end.line > last_line {
                writeln!(w, "{}", self.paint(Style::Gutter, "..."))?;
            }
        }
        writeln!(w, "{pad} {bar}")?;
        let eq = self.paint(Style::Gutter, "=");
        if let Some(help) = &d.help {
            writeln!(w, "{pad} {eq} {}: {help}", self.paint(Style::Bold, "help"))?;
        }
        writeln!(
            w,
            "{pad} {eq} {}: rule `{}`; `fenced-lint explain {}` says why",
            self.paint(Style::Bold, "note"),
            d.rule.name(),
            d.rule.code()
        )?;
        writeln!(w)
    }
}

impl Emitter for Human {
    fn emit(&mut self, w: &mut dyn Write, run: &Run) -> io::Result<()> {
        for d in &run.diagnostics {
            self.diagnostic(w, run, d)?;
        }
        let errors = run.count(Severity::Error);
        let warnings = run.count(Severity::Warning);
        let scope = format!(
            "in {} (statements checked: {})",
            plural(run.files_scanned, "file"),
            run.statements_checked
        );
        let summary = match (errors, warnings) {
            (0, 0) => self.paint(Style::Bold, &format!("no findings {scope}")),
            _ => {
                let mut parts = Vec::new();
                if errors > 0 {
                    parts.push(self.paint(Style::Error, &plural(errors, "error")));
                }
                if warnings > 0 {
                    parts.push(self.paint(Style::Warning, &plural(warnings, "warning")));
                }
                format!("{} {scope}", parts.join(", "))
            }
        };
        writeln!(w, "fenced-lint: {summary}")
    }
}

/// One source line of a snippet, with tabs expanded, and where its underline goes.
#[derive(Debug, PartialEq, Eq)]
struct SnippetLine {
    number: u32,
    text: String,
    indent: usize,
    marks: usize,
}

/// The statement's first lines (at most [`SNIPPET_LINES`]), each underlined from the
/// statement's start (first line) or the first non-blank character (later lines) to the
/// statement's end (last line) or the end of the line.
fn snippet(text: &str, d: &Diagnostic) -> Vec<SnippetLine> {
    let start = d.range.start;
    let end = d.range.end.max(start);
    let first = start.line.max(1);
    let last = end.line.min(first.saturating_add(SNIPPET_LINES as u32 - 1));
    text.lines()
        .enumerate()
        .skip(first as usize - 1)
        .take((last - first + 1) as usize)
        .map(|(index, raw)| {
            let number = index as u32 + 1;
            let chars: Vec<char> = raw.trim_end().chars().collect();
            let from = if number == first {
                (start.column.max(1) as usize - 1).min(chars.len())
            } else {
                chars.iter().take_while(|c| c.is_whitespace()).count()
            };
            let to = if number == end.line {
                (end.column as usize).clamp(from, chars.len())
            } else {
                chars.len()
            };
            let indent = display_width(&chars[..from]);
            let marks = display_width(&chars[from..to]);
            SnippetLine {
                number,
                text: chars.iter().map(expand).collect(),
                indent,
                marks,
            }
        })
        .collect()
}

fn expand(c: &char) -> String {
    if *c == '\t' {
        " ".repeat(TAB_WIDTH)
    } else if c.is_control() {
        // A stray control character would move the terminal's cursor; show its place.
        '\u{fffd}'.to_string()
    } else {
        c.to_string()
    }
}

fn display_width(chars: &[char]) -> usize {
    chars
        .iter()
        .map(|c| if *c == '\t' { TAB_WIDTH } else { 1 })
        .sum()
}

fn digits(n: u32) -> usize {
    n.max(1).ilog10() as usize + 1
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Error,
    Warning,
    Gutter,
    Bold,
}

impl Style {
    fn of(severity: Severity) -> Self {
        match severity {
            Severity::Error => Style::Error,
            Severity::Warning => Style::Warning,
        }
    }

    fn ansi(self) -> &'static str {
        match self {
            Style::Error => "\x1b[1;31m",
            Style::Warning => "\x1b[1;33m",
            Style::Gutter => "\x1b[1;34m",
            Style::Bold => "\x1b[1m",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Position, Range};
    use crate::rules::Rule;

    fn at(line: u32, column: u32, end_line: u32, end_column: u32) -> Diagnostic {
        Diagnostic {
            path: "a.sql".into(),
            range: Range {
                start: Position { line, column },
                end: Position {
                    line: end_line,
                    column: end_column,
                },
            },
            rule: Rule::UnfencedWrite,
            table: None,
            message: "m".into(),
            help: None,
        }
    }

    #[test]
    fn underline_starts_at_the_column_and_ends_at_the_end_column() {
        let lines = snippet("x\n  UPDATE t SET a = 1; -- tail\n", &at(2, 3, 2, 20));
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].indent, lines[0].marks), (2, 18));
    }

    #[test]
    fn tabs_widen_the_indent_and_later_lines_skip_their_indentation() {
        let lines = snippet("\tUPDATE t\n\t\tSET a = 1\nWHERE k = 1;", &at(1, 2, 3, 12));
        assert_eq!(lines[0].text, "    UPDATE t");
        assert_eq!((lines[0].indent, lines[0].marks), (4, 8));
        assert_eq!((lines[1].indent, lines[1].marks), (8, 9));
        assert_eq!((lines[2].indent, lines[2].marks), (0, 12));
    }

    #[test]
    fn long_statements_are_cut_and_out_of_range_positions_do_not_panic() {
        let text = "UPDATE t\nSET a = 1\nWHERE k = 1\nAND g = 2;";
        assert_eq!(snippet(text, &at(1, 1, 4, 10)).len(), SNIPPET_LINES);
        assert!(snippet(text, &at(40, 1, 41, 1)).is_empty());
        assert_eq!(snippet(text, &at(1, 99, 1, 1))[0].marks, 0);
    }

    #[test]
    fn color_is_only_written_when_asked_for() {
        let run = Run::new(vec![at(1, 1, 1, 1)]);
        let mut plain = Vec::new();
        Human::new(false).emit(&mut plain, &run).unwrap();
        let mut colored = Vec::new();
        Human::new(true).emit(&mut colored, &run).unwrap();
        assert!(!plain.contains(&0x1b));
        assert!(colored.contains(&0x1b));
    }
}
