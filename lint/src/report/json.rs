//! The JSON format, exactly as the lint's contract states it.

use std::io::{self, Write};

use rayon::prelude::*;

use super::{Emitter, Run, display_path};
use crate::diagnostic::{Diagnostic, Severity};

/// One JSON document:
/// `{"findings":[{"rule","code","severity","path","line","column","end_line","end_column",
/// "table","message"}],"files_scanned":N,"statements_checked":N}`, pretty-printed, keys
/// in that order, `table` null when the finding concerns no fenced table.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl Emitter for Json {
    fn emit(&mut self, w: &mut dyn Write, run: &Run) -> io::Result<()> {
        // The findings are written by hand, since their shape is fixed, and in blocks
        // in parallel: a run over a large tree has thousands, and this is the part of
        // the run no other thread shares.
        let blocks: Vec<Vec<u8>> = run
            .diagnostics
            .par_chunks(FINDINGS_PER_BLOCK)
            .map(|chunk| {
                let mut block = Vec::with_capacity(chunk.len() * 512);
                for (i, d) in chunk.iter().enumerate() {
                    if i > 0 {
                        block.extend_from_slice(b",");
                    }
                    finding(&mut block, d)?;
                }
                Ok(block)
            })
            .collect::<io::Result<_>>()?;
        let mut out = io::BufWriter::with_capacity(64 * 1024, w);
        out.write_all(b"{\n  \"findings\": [")?;
        for (i, block) in blocks.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(block)?;
        }
        if !blocks.is_empty() {
            out.write_all(b"\n  ")?;
        }
        writeln!(
            out,
            "],\n  \"files_scanned\": {},\n  \"statements_checked\": {}\n}}",
            run.files_scanned, run.statements_checked
        )?;
        out.flush()
    }
}

/// How many findings one task of the parallel writing takes.
const FINDINGS_PER_BLOCK: usize = 256;

/// Writes one finding, as serde_json's pretty printer would inside the document: keys
/// in the contract's order, strings escaped by serde_json.
fn finding(out: &mut Vec<u8>, d: &Diagnostic) -> io::Result<()> {
    let string = |out: &mut Vec<u8>, key: &str, value: &str| -> io::Result<()> {
        write!(out, "\n      \"{key}\": ")?;
        serde_json::to_writer(&mut *out, value).map_err(io::Error::from)?;
        out.push(b',');
        Ok(())
    };
    out.extend_from_slice(b"\n    {");
    string(out, "rule", d.rule.name())?;
    string(out, "code", d.rule.code())?;
    string(
        out,
        "severity",
        match d.severity() {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
    )?;
    string(out, "path", &display_path(&d.path))?;
    for (key, value) in [
        ("line", d.range.start.line),
        ("column", d.range.start.column),
        ("end_line", d.range.end.line),
        ("end_column", d.range.end.column),
    ] {
        write!(out, "\n      \"{key}\": {value},")?;
    }
    match &d.table {
        Some(table) => string(out, "table", table)?,
        None => out.extend_from_slice(b"\n      \"table\": null,"),
    }
    out.extend_from_slice(b"\n      \"message\": ");
    serde_json::to_writer(&mut *out, &d.message).map_err(io::Error::from)?;
    out.extend_from_slice(b"\n    }");
    Ok(())
}
