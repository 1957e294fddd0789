//! Realistic T-SQL, PostgreSQL and Rust sources under `tests/corpus/`: the exact findings,
//! and proof that every write statement in them is reached and analysed.

use std::path::{Path, PathBuf};

use fenced_lint::sql::{self, StatementKind};
use fenced_lint::{Config, Linter, Rule, source};

fn corpus(name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// Configured: the SQL Server table. The PostgreSQL table is discovered from its
/// `CREATE TABLE` in `postgres_functions.sql`, as the command line does in its first pass.
fn linter() -> Linter {
    let config =
        Config::from_toml("[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n")
            .unwrap();
    let linter = Linter::new(&config);
    let mut discovered = Vec::new();
    for name in FILES {
        let (path, bytes) = corpus(name);
        discovered.extend(linter.discover_tables(&path, &bytes));
    }
    linter.with_discovered(discovered)
}

const FILES: [&str; 4] = [
    "tsql_procedures.sql",
    "postgres_functions.sql",
    "ssms_unicode.sql",
    "repository.rs",
];

fn findings(name: &str) -> Vec<(Rule, u32, u32)> {
    let (path, bytes) = corpus(name);
    linter()
        .check_file(&path, &bytes)
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.range.start.line, d.range.start.column))
        .collect()
}

#[test]
fn tsql_procedures() {
    assert_eq!(
        findings("tsql_procedures.sql"),
        [
            // The CATCH block's release lacks generation and owner: it can clear a successor's lease.
            (Rule::UnfencedWrite, 43, 5),
            // The repair job has no fence at all.
            (Rule::UnfencedWrite, 49, 1),
            // `UPDATE alias ... FROM` with a join: only the generation is checked.
            (Rule::UnfencedWrite, 59, 1),
            // MERGE arm compares the expiry with the client's clock.
            (Rule::ClientClockExpiry, 66, 1),
            // Renewal through an SSMS template without the unexpired check.
            (Rule::RevivingRenewal, 76, 5),
            // Generation set from a parameter; and, fenced otherwise, it lacks the epoch.
            (Rule::GenerationRewind, 83, 1),
            (Rule::EpochlessWrite, 83, 1),
            (Rule::FencedTableGrant, 85, 1),
        ]
    );
}

#[test]
fn postgres_functions() {
    assert_eq!(
        findings("postgres_functions.sql"),
        [
            // Inside the PL/pgSQL body: the fallback write has only the key.
            (Rule::UnfencedWrite, 23, 9),
            // Upsert whose update arm has no WHERE.
            (Rule::UnfencedWrite, 36, 1),
            // Renewal in a data-modifying CTE, without the unexpired check.
            (Rule::RevivingRenewal, 40, 5),
            (Rule::FencedRowDelete, 47, 1),
            (Rule::FencedTableGrant, 53, 1),
        ]
    );
}

#[test]
fn ssms_unicode() {
    assert_eq!(
        findings("ssms_unicode.sql"),
        [(Rule::UnfencedWrite, 12, 1), (Rule::FencedRowDelete, 14, 1)]
    );
}

#[test]
fn rust_repository() {
    assert_eq!(
        findings("repository.rs"),
        [
            // `publish`: key only. The `#[fenced_write]` method and the doc comment are not checked.
            (Rule::UnfencedWrite, 23, 23),
            // `renew` compares the expiry with `$4`, the client's clock.
            (Rule::ClientClockExpiry, 35, 18),
            // `reset` inside `sqlx::query!`.
            (Rule::UnfencedWrite, 49, 31),
            (Rule::GenerationRewind, 49, 31),
        ]
    );
}

/// Every `UPDATE`, `DELETE`, `MERGE` in the SQL corpus is found and parsed; none that
/// writes a fenced table is left unanalysed.
#[test]
fn every_write_is_reached() {
    // Counted by hand when the files were written.
    let expected = [
        ("tsql_procedures.sql", 10),
        ("postgres_functions.sql", 5),
        ("ssms_unicode.sql", 2),
    ];
    let (mut parsed, mut total, mut sqlparser_ast) = (0, 0, 0);
    for (name, writes) in expected {
        let (_, bytes) = corpus(name);
        let text = source::decode(&bytes).unwrap();
        let analysed = sql::analyse(&text);
        let reached: Vec<_> = analysed
            .iter()
            .filter(|a| {
                matches!(
                    a.kind,
                    StatementKind::Update | StatementKind::Delete | StatementKind::Merge
                )
            })
            .collect();
        assert_eq!(reached.len(), writes, "{name}");
        total += reached.len();
        parsed += reached.iter().filter(|a| a.result.is_ok()).count();
        // For comparison: the same statements, cut out exactly, given to sqlparser.
        sqlparser_ast += reached
            .iter()
            .filter_map(|a| a.result.as_ref().ok())
            .filter(|statement| {
                let text = &text[statement.range.clone()];
                let mssql = sqlparser::dialect::MsSqlDialect {};
                let postgres = sqlparser::dialect::PostgreSqlDialect {};
                sqlparser::parser::Parser::parse_sql(&mssql, text).is_ok()
                    || sqlparser::parser::Parser::parse_sql(&postgres, text).is_ok()
            })
            .count();
        let report = linter().check_file(Path::new(name), &bytes);
        // Any unparsed write to a fenced table is reported, never silent.
        let reported = report
            .diagnostics
            .iter()
            .filter(|d| d.rule == Rule::UnanalysedWrite)
            .count();
        assert_eq!(reported, report.coverage.unanalysed_fenced, "{name}");
    }
    println!(
        "write statements: {total}, parsed: {parsed}, unparsed: {}; sqlparser alone on the same cut statements: {sqlparser_ast}",
        total - parsed
    );
    assert_eq!(parsed, total);
}
