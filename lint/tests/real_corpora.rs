//! The lint over the real corpora of `../shared/corpora` (relative to the repository's
//! root; `FENCED_LINT_CORPORA` names another directory holding `real-sql.tar.gz`): every
//! `UPDATE`, `DELETE`, `MERGE` with an update or delete arm, and `INSERT ... ON CONFLICT
//! DO UPDATE` of a permanent table, counted here by a deliberately simple scanner that
//! shares no code with the lint, must be reported when every table written (or named in
//! the FROM of a write) is declared fenced, and nothing else may be reported except
//! findings about INSERTs and GRANTs, which the counter does not count. Prints files /
//! writes / found / missed / false / other per corpus and fails on any miss, false report
//! or crash (an exit code other than 0 or 1, or an `unreadable-file` finding).
//!
//! The archive is unpacked into a temporary directory with `tar`, never into the
//! repository. Without it the test passes with a note, except in CI (`CI` set), where its
//! absence is a failure. It runs the binary built with the test: about 30 s in a debug
//! build on the shared 2-core machine.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::count::{self, Write};

const BIN: &str = env!("CARGO_BIN_EXE_fenced-lint");

fn corpora_archive() -> Option<PathBuf> {
    let dir = match std::env::var_os("FENCED_LINT_CORPORA") {
        Some(dir) => PathBuf::from(dir),
        // The package is `lint/` in the repository: `../shared` of the root.
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora"),
    };
    let archive = dir.join("real-sql.tar.gz");
    archive.is_file().then_some(archive)
}

#[test]
fn every_write_in_the_real_corpora_is_found_and_nothing_else() {
    let Some(archive) = corpora_archive() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but ../shared/corpora/real-sql.tar.gz is missing"
        );
        eprintln!("real_corpora: ../shared/corpora absent, not checked");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let unpacked = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(unpacked.success(), "tar failed on {}", archive.display());

    let mut corpora: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    corpora.sort();
    assert!(!corpora.is_empty(), "the archive holds no corpus");

    let mut table = String::from("corpus      files  writes  found  missed  false  other\n");
    let mut failures = Vec::new();
    for corpus in &corpora {
        let name = corpus.file_name().unwrap().to_string_lossy().into_owned();
        let outcome = check_corpus(corpus);
        writeln!(
            table,
            "{name:<10} {:>6} {:>7} {:>6} {:>7} {:>6} {:>6}",
            outcome.files,
            outcome.writes,
            outcome.found,
            outcome.missed.len(),
            outcome.false_reports.len(),
            outcome.other
        )
        .unwrap();
        for miss in &outcome.missed {
            failures.push(format!("{name}: missed {miss}"));
        }
        for report in &outcome.false_reports {
            failures.push(format!("{name}: false {report}"));
        }
        failures.extend(outcome.crashes.iter().map(|c| format!("{name}: {c}")));
    }
    eprintln!("{table}");
    assert!(
        failures.is_empty(),
        "{table}\n{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[derive(Debug, Default)]
struct Outcome {
    files: usize,
    writes: usize,
    found: usize,
    /// Findings of rules about statements the counter does not count (`INSERT`, `GRANT`).
    other: usize,
    missed: Vec<String>,
    false_reports: Vec<String>,
    crashes: Vec<String>,
}

fn check_corpus(corpus: &Path) -> Outcome {
    let mut outcome = Outcome::default();
    let survey = count::survey(corpus);
    outcome.files = survey.files;
    outcome.writes = survey.writes.len();
    let (writes, dropped, texts) = (survey.writes, survey.dropped, survey.texts);
    let config = count::config(&survey.tables);
    let config_path = corpus.with_extension("toml");
    std::fs::write(&config_path, config).unwrap();
    let output = Command::new(BIN)
        .arg("--config")
        .arg(&config_path)
        .args(["--format", "json", "."])
        .current_dir(corpus)
        .output()
        .unwrap();
    let code = output.status.code();
    if !matches!(code, Some(0 | 1)) {
        outcome.crashes.push(format!(
            "exit {code:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
        return outcome;
    }
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();

    let mut unmatched: BTreeMap<String, Vec<Write>> = BTreeMap::new();
    for write in writes {
        unmatched.entry(write.path.clone()).or_default().push(write);
    }
    // Narrowest findings first: a statement inside a CTE is matched before the one
    // whose range encloses it.
    let mut findings: Vec<&serde_json::Value> =
        report["findings"].as_array().unwrap().iter().collect();
    findings.sort_by_key(|f| f["end_line"].as_u64().unwrap() - f["line"].as_u64().unwrap());
    // Several rules may flag one statement (a MERGE's delete and update arms): it is one
    // write found.
    let mut seen = BTreeSet::new();
    findings.retain(|f| {
        seen.insert((
            f["path"].to_string(),
            f["line"].as_u64(),
            f["column"].as_u64(),
        ))
    });
    for finding in findings {
        let path = finding["path"].as_str().unwrap().trim_start_matches("./");
        let rule = finding["rule"].as_str().unwrap();
        let line = finding["line"].as_u64().unwrap() as usize;
        let end_line = finding["end_line"].as_u64().unwrap() as usize;
        if rule == "unreadable-file" {
            outcome
                .crashes
                .push(format!("{path}: {}", finding["message"]));
            continue;
        }
        let message = finding["message"].as_str().unwrap_or_default();
        if message.contains("INSERT") {
            // About an INSERT's values, not a write the counter counts.
            outcome.other += 1;
            continue;
        }
        let candidates = unmatched.entry(path.to_owned()).or_default();
        // The write whose keyword lies within the finding's lines, nearest its start.
        let table = finding["table"].as_str().unwrap_or_default();
        let same_table = |w: &Write| {
            table
                .rsplit('.')
                .next()
                .is_some_and(|t| t.eq_ignore_ascii_case(&w.table))
        };
        let within = |w: &Write| w.line >= line && w.line <= end_line;
        let matched = candidates
            .iter()
            .enumerate()
            .filter(|(_, w)| within(w) && same_table(w))
            .min_by_key(|(_, w)| w.line)
            .or_else(|| {
                candidates
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| within(w))
                    .min_by_key(|(_, w)| w.line)
            })
            .map(|(i, _)| i);
        match matched {
            Some(i) => {
                candidates.remove(i);
                outcome.found += 1;
            }
            None => {
                let first_word = texts
                    .get(path)
                    .and_then(|t| word_at(t, line, finding["column"].as_u64().unwrap() as usize));
                let counted_kind = first_word.as_deref().is_none_or(|w| {
                    !["INSERT", "REPLACE", "GRANT", "UPSERT", "TRUNCATE", "COPY"]
                        .contains(&w.to_uppercase().as_str())
                });
                let uncounted = dropped
                    .iter()
                    .any(|w| w.path == path && w.line >= line && w.line <= end_line);
                if counted_kind && !uncounted {
                    outcome.false_reports.push(format!(
                        "{path}:{line} {rule}: {}",
                        finding["message"].as_str().unwrap_or_default()
                    ));
                } else {
                    outcome.other += 1;
                }
            }
        }
    }
    for write in unmatched.into_values().flatten() {
        outcome
            .missed
            .push(format!("{}:{} {}", write.path, write.line, write.table));
    }
    outcome
}

/// The word starting at a 1-based line and character column.
fn word_at(text: &str, line: usize, column: usize) -> Option<String> {
    let line_text = text.lines().nth(line.checked_sub(1)?)?;
    let rest: String = line_text.chars().skip(column.saturating_sub(1)).collect();
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// Negative controls: the counter counts what it should and skips what it should not,
/// so a lint that missed these would be caught.
#[test]
fn the_counter_counts_statements_not_words() {
    let sql = "\
UPDATE dbo.T SET a = 1 WHERE b = 2;
DELETE FROM [dbo].[U] WHERE x = 1;
MERGE INTO v USING w ON v.id = w.id WHEN MATCHED THEN DELETE;
ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES u (a) ON DELETE CASCADE ON UPDATE NO ACTION;
SELECT * FROM t FOR UPDATE;
GRANT UPDATE, DELETE ON t TO r;
RAISERROR('UPDATE t SET failed', 16, 1);
PRINT 'DELETE FROM t';
EXEC sp_executesql N'UPDATE dbo.X SET a = 1';
SET @sql = N'DELETE dbo.Y WHERE 1 = 1'; EXEC(@sql);
COPY t FROM stdin;
1\t[x\t\"
\\.
UPDATE #tmp SET a = 1;
UPDATE after_copy SET a = 1;
";
    let counted: Vec<String> = count::count_sql(sql)
        .into_iter()
        .map(|(_, t, _)| t)
        .collect();
    assert_eq!(counted, ["T", "U", "v", "X", "Y", "after_copy"]);
    let rust =
        r#"let q = "UPDATE posts SET x = $1"; let m = "failed to update post"; // DELETE FROM z"#;
    let counted: Vec<String> = count::count_rust(rust)
        .into_iter()
        .map(|(_, t, _)| t)
        .collect();
    assert_eq!(counted, ["posts"]);
}
