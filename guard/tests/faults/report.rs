//! The run's report: printed for the log, and written as JSON.
//!
//! The JSON file goes to `$FENCED_HISTORY_REPORT_DIR` if set, otherwise to the target
//! directory's test scratch space (`CARGO_TARGET_TMPDIR`); its path is printed.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::checker::Verdict;
use crate::history::{CallerCounts, Faults, Mode};

/// Everything one run reports.
#[derive(Debug)]
pub struct Report<'a> {
    pub backend: &'static str,
    pub mode: Mode,
    pub seed: u64,
    pub duration: Duration,
    pub workers: usize,
    pub rows: i64,
    pub faults: Faults,
    /// Promotions of a standby the run went through.
    pub failovers: usize,
    /// Updates committed through a fenced transaction.
    pub transactions: u64,
    /// The fenced transactions on the workers' own connections.
    pub caller: CallerCounts,
    pub verdict: &'a Verdict,
}

impl Report<'_> {
    /// The report as one JSON object.
    pub fn to_json(&self) -> String {
        let c = &self.verdict.counts;
        let f = &self.faults;
        let mut out = String::new();
        write!(
            out,
            "{{\"backend\":{},\"mode\":{},\"seed\":{},\"seconds\":{:.3},\"workers\":{},\
             \"rows\":{},\"failovers\":{},\"operations\":{},\"acquisitions\":{},\
             \"claimed\":{},\"lost_in_failovers\":{},\
             \"writes\":{{\"applied\":{},\"already_applied\":{},\"refused\":{},\"failed\":{}}},\
             \"resolutions\":{},\
             \"faults\":{{\"total\":{},\"pauses\":{},\"cuts_before_execute\":{},\
             \"cuts_after_commit\":{},\"delays\":{}}},\
             \"stale_writes\":{{\"attempted\":{},\"refused\":{},\"accepted\":{},\"failed\":{}}},\
             \"violations\":[",
            json_string(self.backend),
            json_string(self.mode.name()),
            self.seed,
            self.duration.as_secs_f64(),
            self.workers,
            self.rows,
            self.failovers,
            c.operations,
            c.acquisitions,
            c.claimed,
            c.lost,
            c.writes_applied,
            c.writes_already_applied,
            c.writes_refused,
            c.writes_failed,
            c.resolutions,
            f.total(),
            f.pauses,
            f.cuts_before_execute,
            f.cuts_after_commit,
            f.delays,
            c.stale_attempted,
            c.stale_refused,
            c.stale_accepted,
            c.stale_failed,
        )
        .unwrap();
        for (i, v) in self.verdict.violations.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write!(
                out,
                "{{\"kind\":{},\"message\":{}}}",
                json_string(v.kind()),
                json_string(&v.to_string())
            )
            .unwrap();
        }
        out.push_str("]}");
        out
    }

    /// Prints the summary and writes the JSON file; returns its path.
    pub fn emit(&self) -> PathBuf {
        let c = &self.verdict.counts;
        let f = &self.faults;
        println!(
            "history {} {}: seed {} (replay with FENCED_HISTORY_SEED={}), {:.1} s, \
             {} workers on {} rows",
            self.backend,
            self.mode.name(),
            self.seed,
            self.seed,
            self.duration.as_secs_f64(),
            self.workers,
            self.rows
        );
        println!(
            "  operations {}, acquisitions {} (by claim {}), writes applied {} / already \
             applied {} / refused {} / failed {}, operation ids resolved {}",
            c.operations,
            c.acquisitions,
            c.claimed,
            c.writes_applied,
            c.writes_already_applied,
            c.writes_refused,
            c.writes_failed,
            c.resolutions
        );
        println!(
            "  fenced transactions committed {}, epoch advances {}",
            self.transactions, c.advances
        );
        if self.caller.connections > 0 {
            println!(
                "  on the workers' own connections ({}): fenced transactions committed {}, \
                 fences asked for in autocommit refused {} / granted {}",
                self.caller.connections,
                self.caller.committed,
                self.caller.autocommit_refused,
                self.caller.autocommit_granted
            );
        }
        if self.failovers > 0 {
            println!(
                "  failovers {} (calls in effect lost with an old primary {})",
                self.failovers, c.lost
            );
        }
        println!(
            "  faults injected {} (pauses past ttl {}, cuts before execute {}, cuts after \
             commit {}, delayed past ttl {})",
            f.total(),
            f.pauses,
            f.cuts_before_execute,
            f.cuts_after_commit,
            f.delays
        );
        println!(
            "  stale writes attempted {}, refused {}, accepted {}, failed {}",
            c.stale_attempted, c.stale_refused, c.stale_accepted, c.stale_failed
        );
        println!("  violations {}", self.verdict.violations.len());
        for v in self.verdict.violations.iter().take(10) {
            println!("    {}: {v}", v.kind());
        }
        let dir = std::env::var_os("FENCED_HISTORY_REPORT_DIR")
            .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from);
        let path = dir.join(format!(
            "fenced-history-{}-{}.json",
            self.backend,
            self.mode.name()
        ));
        std::fs::create_dir_all(&dir).expect("create the report directory");
        std::fs::write(&path, self.to_json()).expect("write the JSON report");
        println!("  report {}", path.display());
        path
    }
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => write!(out, "\\u{:04x}", u32::from(c)).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[test]
fn json_strings_are_escaped() {
    assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
}
