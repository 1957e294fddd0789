//! The human format: rustc-like findings with the statement's first lines underlined.

use std::io::{self, Write};

use super::{Emitter, Run, display_path};
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::LineIndex;

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

    fn diagnostic(
        &self,
        w: &mut dyn Write,
        source: Option<(&str, &LineIndex)>,
        d: &Diagnostic,
    ) -> io::Result<()> {
        let severity = d.severity();
        let tone = Style::of(severity);
        let header = format!("{severity}[{}]", d.rule.code());
        writeln!(
            w,
            "{}{}",
            self.paint(tone, &header),
            self.paint(Style::Bold, &format!(": {}", d.message))
        )?;

        let lines = source
            .map(|(text, index)| snippet(text, index, d))
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
        // Diagnostics are sorted by path: each file's lines are indexed once.
        let mut indexed: Option<(&std::path::Path, LineIndex)> = None;
        for d in &run.diagnostics {
            let text = run.sources.get(&d.path);
            if let Some(text) = text
                && indexed.as_ref().is_none_or(|(path, _)| *path != d.path)
            {
                indexed = Some((&d.path, LineIndex::new(text)));
            }
            let source = text.zip(indexed.as_ref().map(|(_, index)| index));
            self.diagnostic(w, source.map(|(t, i)| (t.as_str(), i)), d)?;
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
/// statement's end (last line) or the end of the line. A line longer than
/// [`SNIPPET_WIDTH`] characters is shown as a window around the underline, cut at `...`,
/// so a one-line file of megabytes prints a few hundred bytes per finding.
fn snippet(text: &str, index: &LineIndex, d: &Diagnostic) -> Vec<SnippetLine> {
    let start = d.range.start;
    let end = d.range.end.max(start);
    let first = start.line.max(1);
    let last = end.line.min(first.saturating_add(SNIPPET_LINES as u32 - 1));
    let mut out = Vec::new();
    for number in first..=last {
        let Some(range) = index.line_range(text, number) else {
            break;
        };
        let line = text[range.clone()].trim_end();
        let line_end = range.start + line.len();
        let from = if number == first {
            index
                .offset(text, number, start.column)
                .unwrap_or(line_end)
                .min(line_end)
        } else {
            line_end - line.trim_start().len()
        };
        let to = if number == end.line {
            let last_char = index
                .offset(text, number, end.column)
                .unwrap_or(line_end)
                .min(line_end);
            let after = text[last_char..line_end]
                .chars()
                .next()
                .map_or(last_char, |c| last_char + c.len_utf8());
            after.max(from)
        } else {
            line_end
        };
        // The window: all of a short line, else up to `SNIPPET_WIDTH` characters starting
        // a little before the underline.
        let mut shown_start = range.start;
        let mut shown_end = line_end;
        if line.chars().take(SNIPPET_WIDTH + 1).count() > SNIPPET_WIDTH {
            shown_start = back_chars(text, from, SNIPPET_CONTEXT).max(range.start);
            shown_end = forward_chars(text, shown_start, SNIPPET_WIDTH).min(line_end);
        }
        let prefix = if shown_start > range.start { "..." } else { "" };
        let suffix = if shown_end < line_end { "..." } else { "" };
        let from = from.clamp(shown_start, shown_end);
        let to = to.clamp(from, shown_end);
        let shown: String = text[shown_start..shown_end].chars().map(expand).collect();
        out.push(SnippetLine {
            number,
            text: format!("{prefix}{shown}{suffix}"),
            indent: prefix.len() + display_width(&text[shown_start..from]),
            marks: display_width(&text[from..to]),
        });
    }
    out
}

/// How many characters of a long line a snippet shows.
const SNIPPET_WIDTH: usize = 120;
/// How many characters before the underline a window into a long line starts.
const SNIPPET_CONTEXT: usize = 20;

fn back_chars(text: &str, from: usize, n: usize) -> usize {
    text[..from]
        .char_indices()
        .rev()
        .take(n)
        .last()
        .map_or(from, |(i, _)| i)
}

fn forward_chars(text: &str, from: usize, n: usize) -> usize {
    text[from..]
        .char_indices()
        .nth(n)
        .map_or(text.len(), |(i, _)| from + i)
}

fn expand(c: char) -> String {
    if c == '\t' {
        " ".repeat(TAB_WIDTH)
    } else if c.is_control() {
        // A stray control character would move the terminal's cursor; show its place.
        '\u{fffd}'.to_string()
    } else {
        c.to_string()
    }
}

/// The columns a terminal gives `text`: a tab [`TAB_WIDTH`], an East Asian wide or
/// fullwidth character (CJK, Hangul, fullwidth forms, most emoji) 2, a combining mark or
/// zero-width character 0, anything else 1.
fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    let u = c as u32;
    if c == '\t' {
        return TAB_WIDTH;
    }
    const ZERO: &[(u32, u32)] = &[
        (0x0300, 0x036F),
        (0x0483, 0x0489),
        (0x0591, 0x05BD),
        (0x0610, 0x061A),
        (0x064B, 0x065F),
        (0x200B, 0x200F),
        (0x20D0, 0x20FF),
        (0xFE00, 0xFE0F),
        (0xFE20, 0xFE2F),
        (0xFEFF, 0xFEFF),
    ];
    const WIDE: &[(u32, u32)] = &[
        (0x1100, 0x115F),
        (0x231A, 0x231B),
        (0x2329, 0x232A),
        (0x23E9, 0x23EC),
        (0x25FD, 0x25FE),
        (0x2614, 0x2615),
        (0x2648, 0x2653),
        (0x26AA, 0x26AB),
        (0x26BD, 0x26BE),
        (0x26C4, 0x26C5),
        (0x2705, 0x2705),
        (0x270A, 0x270B),
        (0x2728, 0x2728),
        (0x274C, 0x274C),
        (0x2753, 0x2757),
        (0x2795, 0x2797),
        (0x2B1B, 0x2B1C),
        (0x2E80, 0x303E),
        (0x3041, 0x33FF),
        (0x3400, 0x4DBF),
        (0x4E00, 0x9FFF),
        (0xA000, 0xA4CF),
        (0xA960, 0xA97F),
        (0xAC00, 0xD7A3),
        (0xF900, 0xFAFF),
        (0xFE10, 0xFE19),
        (0xFE30, 0xFE6F),
        (0xFF00, 0xFF60),
        (0xFFE0, 0xFFE6),
        (0x1F004, 0x1F004),
        (0x1F0CF, 0x1F0CF),
        (0x1F18E, 0x1F18E),
        (0x1F191, 0x1F19A),
        (0x1F200, 0x1F251),
        (0x1F300, 0x1F64F),
        (0x1F680, 0x1F6FF),
        (0x1F900, 0x1F9FF),
        (0x1FA70, 0x1FAFF),
        (0x20000, 0x3FFFD),
    ];
    let within = |table: &[(u32, u32)]| {
        table
            .binary_search_by(|&(lo, hi)| {
                if hi < u {
                    std::cmp::Ordering::Less
                } else if lo > u {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    };
    if within(ZERO) {
        0
    } else if within(WIDE) {
        2
    } else {
        1
    }
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

    fn snip(text: &str, d: &Diagnostic) -> Vec<SnippetLine> {
        snippet(text, &LineIndex::new(text), d)
    }

    /// A CJK character takes two terminal columns: the underline after one starts two
    /// columns later, and under one it is two marks wide.
    #[test]
    fn wide_characters_take_two_columns() {
        let lines = snip("SET n = N'名前' WHERE k = 1", &at(1, 14, 1, 18));
        assert_eq!((lines[0].indent, lines[0].marks), (15, 5));
        let lines = snip("'名前'", &at(1, 2, 1, 3));
        assert_eq!((lines[0].indent, lines[0].marks), (1, 4));
    }

    /// A finding deep in a one-line file shows a window around it, not the whole line.
    #[test]
    fn long_lines_are_shown_as_a_window_around_the_underline() {
        let text = format!(
            "{}UPDATE t SET a = 1;{}",
            "x".repeat(10_000),
            "y".repeat(10_000)
        );
        let lines = snip(&text, &at(1, 10_001, 1, 10_019));
        assert!(
            lines[0].text.len() <= SNIPPET_WIDTH + 6,
            "{}",
            lines[0].text
        );
        let underlined: String = lines[0]
            .text
            .chars()
            .skip(lines[0].indent)
            .take(lines[0].marks)
            .collect();
        assert_eq!(underlined, "UPDATE t SET a = 1;");
    }

    #[test]
    fn underline_starts_at_the_column_and_ends_at_the_end_column() {
        let lines = snip("x\n  UPDATE t SET a = 1; -- tail\n", &at(2, 3, 2, 20));
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].indent, lines[0].marks), (2, 18));
    }

    #[test]
    fn tabs_widen_the_indent_and_later_lines_skip_their_indentation() {
        let lines = snip("\tUPDATE t\n\t\tSET a = 1\nWHERE k = 1;", &at(1, 2, 3, 12));
        assert_eq!(lines[0].text, "    UPDATE t");
        assert_eq!((lines[0].indent, lines[0].marks), (4, 8));
        assert_eq!((lines[1].indent, lines[1].marks), (8, 9));
        assert_eq!((lines[2].indent, lines[2].marks), (0, 12));
    }

    #[test]
    fn long_statements_are_cut_and_out_of_range_positions_do_not_panic() {
        let text = "UPDATE t\nSET a = 1\nWHERE k = 1\nAND g = 2;";
        assert_eq!(snip(text, &at(1, 1, 4, 10)).len(), SNIPPET_LINES);
        assert!(snip(text, &at(40, 1, 41, 1)).is_empty());
        assert_eq!(snip(text, &at(1, 99, 1, 1))[0].marks, 0);
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
