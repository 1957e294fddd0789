//! Snapshots of every output format over hand-made findings, so that a change to a
//! reporter shows up as a reviewed diff.

use std::path::PathBuf;

use fenced_lint::diagnostic::{Diagnostic, Position, Range};
use fenced_lint::report::{Format, Run};
use fenced_lint::rules::Rule;

const SQL: &str = "-- publish the report\nUPDATE dbo.FixtureLease\nSET Payload = @payload\nWHERE FixtureId = @id\n  AND Generation = @generation;\n\n-- fenced-lint: allow(fenced-row-delete) nothing to suppress here\nSELECT 1;\n";

const RUST: &str = "pub async fn publish(c: &Client) {\n\tc.execute(\"UPDATE FixtureLease SET Payload = $1 WHERE FixtureId = $2\", &[]).await;\n}\n";

fn at(path: &str, start: (u32, u32), end: (u32, u32)) -> (PathBuf, Range) {
    (
        PathBuf::from(path),
        Range {
            start: Position {
                line: start.0,
                column: start.1,
            },
            end: Position {
                line: end.0,
                column: end.1,
            },
        },
    )
}

fn diagnostic(
    (path, range): (PathBuf, Range),
    rule: Rule,
    table: Option<&str>,
    message: &str,
    help: Option<&str>,
) -> Diagnostic {
    Diagnostic {
        path,
        range,
        rule,
        table: table.map(str::to_owned),
        message: message.to_owned(),
        help: help.map(str::to_owned),
    }
}

/// Findings given out of order, to show that the report sorts them.
fn run() -> Run {
    let mut run = Run::new(vec![
        diagnostic(
            at("src/store.rs", (2, 13), (2, 69)),
            Rule::UnfencedWrite,
            Some("FixtureLease"),
            "update of fenced table `FixtureLease` lacks the generation, owner and expiry predicates",
            Some(
                "add `AND Generation = $3 AND LeaseOwner = $4 AND LeaseUntilUtc > clock_timestamp()` to the WHERE clause",
            ),
        ),
        diagnostic(
            at("sql/publish.sql", (7, 1), (7, 65)),
            Rule::UnusedSuppression,
            None,
            "suppression of `fenced-row-delete` suppresses nothing",
            Some("remove the comment"),
        ),
        diagnostic(
            at("sql/publish.sql", (2, 1), (5, 30)),
            Rule::UnfencedWrite,
            Some("dbo.FixtureLease"),
            "update of fenced table `dbo.FixtureLease` lacks the owner and expiry predicates",
            Some(
                "add `AND LeaseOwner = @owner AND LeaseUntilUtc > SYSUTCDATETIME()` to the WHERE clause",
            ),
        ),
        Diagnostic::unreadable(
            "data/dump.sql",
            "not UTF-8 or UTF-16 with a byte order mark",
        ),
    ]);
    run.files_scanned = 4;
    run.statements_checked = 3;
    run.sources.insert("sql/publish.sql".into(), SQL.to_owned());
    run.sources.insert("src/store.rs".into(), RUST.to_owned());
    run
}

fn render(format: Format, run: &Run) -> String {
    let mut out = Vec::new();
    format.emitter(false).emit(&mut out, run).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn human() {
    insta::assert_snapshot!(render(Format::Human, &run()));
}

#[test]
fn human_without_findings() {
    let run = Run {
        files_scanned: 12,
        statements_checked: 40,
        ..Run::default()
    };
    insta::assert_snapshot!(render(Format::Human, &run));
}

#[test]
fn json() {
    insta::assert_snapshot!(render(Format::Json, &run()));
}

#[test]
fn sarif() {
    // The rules' documentation is the rules' own and changes with them: it is checked
    // against `explain` below and stands as a marker here, so that this snapshot pins
    // the log's shape and results.
    let mut log: serde_json::Value = serde_json::from_str(&render(Format::Sarif, &run())).unwrap();
    for descriptor in log["runs"][0]["tool"]["driver"]["rules"]
        .as_array_mut()
        .unwrap()
    {
        let marker = format!("<explain {}>", descriptor["id"].as_str().unwrap());
        descriptor["fullDescription"]["text"] = format!("<what it does, {marker}>").into();
        descriptor["help"]["text"] = marker.clone().into();
        descriptor["help"]["markdown"] = marker.into();
    }
    insta::assert_snapshot!(serde_json::to_string_pretty(&log).unwrap());
}

#[test]
fn sarif_help_is_the_rule_documentation() {
    let log: serde_json::Value = serde_json::from_str(&render(Format::Sarif, &run())).unwrap();
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    for (rule, descriptor) in Rule::ALL.iter().zip(rules) {
        let doc = fenced_lint::explain(*rule);
        assert_eq!(descriptor["help"]["text"], doc);
        assert_eq!(descriptor["help"]["markdown"], doc);
        let full = descriptor["fullDescription"]["text"].as_str().unwrap();
        assert!(full.len() > 20 && !full.contains('\n'), "{full}");
        // It begins with the first line of the "What it does" paragraph.
        let first_line = doc
            .lines()
            .skip_while(|l| !l.contains("What it does"))
            .skip(1)
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .trim();
        assert!(full.starts_with(first_line), "{}: {full}", rule.code());
    }
}

#[test]
fn findings_are_sorted_by_path_position_and_rule() {
    let run = run();
    let order: Vec<_> = run
        .diagnostics
        .iter()
        .map(|d| (d.path.to_string_lossy().into_owned(), d.range.start.line))
        .collect();
    assert_eq!(
        order,
        [
            ("data/dump.sql".to_owned(), 1),
            ("sql/publish.sql".to_owned(), 2),
            ("sql/publish.sql".to_owned(), 7),
            ("src/store.rs".to_owned(), 2),
        ]
    );
}

#[test]
fn every_format_is_reproducible() {
    for format in Format::ALL {
        assert_eq!(render(*format, &run()), render(*format, &run()));
    }
}

#[test]
fn sarif_lists_every_rule_and_indexes_results_into_that_list() {
    let log: serde_json::Value = serde_json::from_str(&render(Format::Sarif, &run())).unwrap();
    let driver = &log["runs"][0]["tool"]["driver"];
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(rules.len(), Rule::ALL.len());
    for (rule, descriptor) in Rule::ALL.iter().zip(rules) {
        assert_eq!(descriptor["id"], rule.code());
        assert_eq!(descriptor["name"], rule.name());
        assert!(
            descriptor["help"]["markdown"]
                .as_str()
                .is_some_and(|h| !h.is_empty())
        );
    }
    for result in log["runs"][0]["results"].as_array().unwrap() {
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], result["ruleId"]);
    }
}
