//! The JSON format, exactly as the lint's contract states it.

use std::io::{self, Write};

use serde::Serialize;

use super::{Emitter, Run, display_path};
use crate::diagnostic::Severity;

/// One JSON document:
/// `{"findings":[{"rule","code","severity","path","line","column","end_line","end_column",
/// "table","message"}],"files_scanned":N,"statements_checked":N}`, pretty-printed, keys
/// in that order, `table` null when the finding concerns no fenced table.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

#[derive(Serialize)]
struct Document<'a> {
    findings: Vec<Finding<'a>>,
    files_scanned: usize,
    statements_checked: usize,
}

#[derive(Serialize)]
struct Finding<'a> {
    rule: &'static str,
    code: &'static str,
    severity: Severity,
    path: String,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    table: Option<&'a str>,
    message: &'a str,
}

impl Emitter for Json {
    fn emit(&mut self, w: &mut dyn Write, run: &Run) -> io::Result<()> {
        let document = Document {
            findings: run
                .diagnostics
                .iter()
                .map(|d| Finding {
                    rule: d.rule.name(),
                    code: d.rule.code(),
                    severity: d.severity(),
                    path: display_path(&d.path),
                    line: d.range.start.line,
                    column: d.range.start.column,
                    end_line: d.range.end.line,
                    end_column: d.range.end.column,
                    table: d.table.as_deref(),
                    message: &d.message,
                })
                .collect(),
            files_scanned: run.files_scanned,
            statements_checked: run.statements_checked,
        };
        // serde_json writes in small pieces: a buffer of its own takes them without a
        // call through `w` each, and without holding the whole document in memory.
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, w);
        serde_json::to_writer_pretty(&mut out, &document)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}
