//! The SARIF 2.1.0 format, for code-scanning services.

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use super::{Emitter, Run, display_path};
use crate::diagnostic::{Diagnostic, Severity};
use crate::rules::Rule;

/// The schema every SARIF 2.1.0 log names.
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// Where the lint's documentation lives.
const INFORMATION_URI: &str = "https://github.com/fenced-rs/fenced/tree/main/lint";

/// A SARIF 2.1.0 log with one run: the tool's driver lists every rule (code as `id`,
/// name, short and full description, help as text and markdown from
/// [`explain`](crate::explain), default level), and each finding is a result pointing at
/// its file and region. Columns are counted in Unicode code points, as the lint counts
/// them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sarif;

impl Emitter for Sarif {
    fn emit(&mut self, w: &mut dyn Write, run: &Run) -> io::Result<()> {
        let driver = json!({
            "name": "fenced-lint",
            "version": env!("CARGO_PKG_VERSION"),
            "informationUri": INFORMATION_URI,
            "rules": Rule::ALL.iter().map(|rule| descriptor(*rule)).collect::<Vec<_>>(),
        });
        let log = Log {
            schema: SCHEMA,
            runs: [LogRun {
                column_kind: "unicodeCodePoints",
                results: run.diagnostics.iter().map(result).collect(),
                tool: Tool { driver },
            }],
            version: "2.1.0",
        };
        // serde_json writes in small pieces: a buffer of its own takes them without a
        // call through `w` each.
        let mut out = io::BufWriter::with_capacity(64 * 1024, w);
        serde_json::to_writer_pretty(&mut out, &log)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

// The log's shape, typed rather than built as `serde_json::Value`s: a run's thousands
// of results are then written without a map allocated per object. Fields are in the
// order `Value`'s sorted maps wrote them, so the output is the same.

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    runs: [LogRun<'a>; 1],
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogRun<'a> {
    column_kind: &'static str,
    results: Vec<LogResult<'a>>,
    tool: Tool,
}

#[derive(Serialize)]
struct Tool {
    driver: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogResult<'a> {
    level: &'static str,
    locations: [Location; 1],
    message: Message,
    rule_id: &'a str,
    rule_index: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    end_column: u32,
    end_line: u32,
    start_column: u32,
    start_line: u32,
}

#[derive(Serialize)]
struct Message {
    text: String,
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn descriptor(rule: Rule) -> Value {
    let doc = crate::explain(rule);
    json!({
        "id": rule.code(),
        "name": rule.name(),
        "shortDescription": { "text": rule.summary() },
        "fullDescription": { "text": what_it_does(doc).unwrap_or_else(|| rule.summary().to_owned()) },
        "help": { "text": doc, "markdown": doc },
        "defaultConfiguration": { "level": level(rule.severity()) },
    })
}

fn result(d: &Diagnostic) -> LogResult<'_> {
    let text = match &d.help {
        Some(help) => format!("{}\nhelp: {help}", d.message),
        None => d.message.clone(),
    };
    LogResult {
        level: level(d.severity()),
        locations: [Location {
            physical_location: PhysicalLocation {
                artifact_location: ArtifactLocation {
                    uri: artifact_uri(&d.path),
                },
                region: Region {
                    // SARIF's end column is the one after the region; ours is its last.
                    end_column: d.range.end.column + 1,
                    end_line: d.range.end.line,
                    start_column: d.range.start.column,
                    start_line: d.range.start.line,
                },
            },
        }],
        message: Message { text },
        rule_id: d.rule.code(),
        rule_index: Rule::ALL
            .iter()
            .position(|r| *r == d.rule)
            .unwrap_or_default(),
    }
}

/// A path as a SARIF `artifactLocation.uri` (an RFC 3986 URI reference): relative paths
/// stay relative, absolute ones become `file://` URIs, and every byte outside the
/// unreserved characters and `/` is percent-encoded (`fix#1.sql` is `fix%231.sql`, a
/// space `%20`).
fn artifact_uri(path: &Path) -> String {
    let text = display_path(path);
    let mut out = String::with_capacity(text.len() + 8);
    let drive = text.as_bytes().get(1) == Some(&b':') && text.as_bytes()[0].is_ascii_alphabetic();
    if path.is_absolute() || drive {
        out.push_str("file://");
        if !text.starts_with('/') {
            out.push('/');
        }
    }
    for (i, byte) in text.bytes().enumerate() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/')
            || (drive && i == 1);
        if keep {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The paragraph under the documentation's "What it does" heading, joined into one line.
fn what_it_does(doc: &str) -> Option<String> {
    let mut lines = doc.lines().skip_while(|l| !l.contains("What it does"));
    lines.next()?;
    let paragraph: Vec<&str> = lines
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::trim)
        .collect();
    (!paragraph.is_empty()).then(|| paragraph.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_uris_are_percent_encoded_and_absolute_paths_are_file_uris() {
        assert_eq!(artifact_uri(Path::new("sql/fix#1.sql")), "sql/fix%231.sql");
        assert_eq!(
            artifact_uri(Path::new("my dir/a b.sql")),
            "my%20dir/a%20b.sql"
        );
        assert_eq!(artifact_uri(Path::new("é%.sql")), "%C3%A9%25.sql");
        assert_eq!(
            artifact_uri(Path::new("sql/a-b_c.~1.sql")),
            "sql/a-b_c.~1.sql"
        );
        if cfg!(unix) {
            assert_eq!(
                artifact_uri(Path::new("/srv/repo/fix #1.sql")),
                "file:///srv/repo/fix%20%231.sql"
            );
        }
    }

    #[test]
    fn the_full_description_is_the_what_it_does_paragraph() {
        let doc = "## What it does\n\nFlags\nthis.\n\n## Why is this bad?\n\nBecause.";
        assert_eq!(what_it_does(doc).as_deref(), Some("Flags this."));
        assert_eq!(what_it_does("no headings here"), None);
    }
}
