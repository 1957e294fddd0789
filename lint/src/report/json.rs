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
    let string = |out: &mut Vec<u8>, value: &str| {
        serde_json::to_writer(&mut *out, value).map_err(io::Error::from)
    };
    out.extend_from_slice(b"\n    {\n      \"rule\": ");
    string(out, d.rule.name())?;
    out.extend_from_slice(b",\n      \"code\": ");
    string(out, d.rule.code())?;
    out.extend_from_slice(match d.severity() {
        Severity::Error => b",\n      \"severity\": \"error\"",
        Severity::Warning => b",\n      \"severity\": \"warning\"",
    });
    out.extend_from_slice(b",\n      \"path\": ");
    match d.path.to_str() {
        Some(path) if std::path::MAIN_SEPARATOR == '/' => string(out, path)?,
        _ => string(out, &display_path(&d.path))?,
    }
    for (key, value) in [
        (&b",\n      \"line\": "[..], d.range.start.line),
        (b",\n      \"column\": ", d.range.start.column),
        (b",\n      \"end_line\": ", d.range.end.line),
        (b",\n      \"end_column\": ", d.range.end.column),
    ] {
        out.extend_from_slice(key);
        decimal(out, value);
    }
    out.extend_from_slice(b",\n      \"table\": ");
    match &d.table {
        Some(table) => string(out, table)?,
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\n      \"message\": ");
    string(out, &d.message)?;
    out.extend_from_slice(b"\n    }");
    Ok(())
}

/// Appends `value` in decimal.
fn decimal(out: &mut Vec<u8>, mut value: u32) {
    let mut digits = [0u8; 10];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::decimal;

    #[test]
    fn decimals_are_written_as_display_writes_them() {
        for value in [0, 7, 10, 99, 1_000, 4_096, u32::MAX] {
            let mut out = Vec::new();
            decimal(&mut out, value);
            assert_eq!(out, value.to_string().as_bytes());
        }
    }
}
