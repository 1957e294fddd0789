//! Nothing panics on user input: arbitrary bytes, and token soups built from the
//! constructs the lexer and parser treat specially.

use std::path::Path;

use fenced_lint::{Config, Linter, TableSpec};
use proptest::prelude::*;

const FRAGMENTS: &[&str] = &[
    "UPDATE ",
    "DELETE ",
    "MERGE ",
    "INSERT ",
    "INTO ",
    "GRANT ",
    "TRUNCATE ",
    "WITH ",
    "AS ",
    "SET ",
    "WHERE ",
    "FROM ",
    "USING ",
    "ON ",
    "CONFLICT ",
    "DO ",
    "WHEN ",
    "MATCHED ",
    "THEN ",
    "AND ",
    "OR ",
    "NOT ",
    "IS ",
    "NULL ",
    "CASE ",
    "END ",
    "BEGIN ",
    "TOP ",
    "OUTPUT ",
    "RETURNING ",
    "VALUES ",
    "(",
    ")",
    "((",
    "))",
    ",",
    ";",
    ".",
    "=",
    "<",
    ">",
    "<=",
    "+",
    "1",
    "@p",
    "$1",
    "?",
    ":x",
    "'s'",
    "'",
    "\"",
    "[",
    "]",
    "[x]",
    "\"q\"",
    "$$",
    "$t$",
    "--",
    "-- fenced-lint: allow(unfenced-write) r\n",
    "/*",
    "*/",
    "\n",
    "\nGO\n",
    "\n:setvar x 1\n",
    "<a, b, c>",
    "ReportPublication",
    "dbo.",
    "Generation",
    "LeaseOwner",
    "LeaseUntilUtc",
    "ReportId",
    "SYSUTCDATETIME()",
    "now()",
    "unixepoch(",
    "r#\"",
    "\"#",
    "\\",
    "\\n",
    "\\u{41}",
    "#[fenced_write]",
    "fn ",
    "{",
    "}",
    "//",
    "é",
    "\u{feff}",
    "CAST(",
    "::int",
    "EXISTS ",
    "IN ",
    "BETWEEN ",
    "LIKE ",
    "ESCAPE ",
    "CREATE TABLE ",
    "PRIMARY KEY ",
];

fn linter() -> Linter {
    let mut config = Config::default();
    config
        .tables
        .push(TableSpec::new("dbo.ReportPublication", "ReportId"));
    Linter::new(&config)
}

fn check_everything(text: &[u8]) {
    let linter = linter();
    for name in ["x.sql", "x.rs"] {
        let report = linter.check_file(Path::new(name), text);
        for d in &report.diagnostics {
            assert!(d.range.start.line >= 1 && d.range.start.column >= 1);
            assert!(d.range.start <= d.range.end, "{d:?}");
        }
        let _ = linter.discover_tables(Path::new(name), text);
    }
    if let Ok(text) = std::str::from_utf8(text) {
        let _ = fenced_lint::sql::parse_update(text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn token_soup_does_not_panic(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..60)) {
        let text: String = parts.iter().map(|i| FRAGMENTS[*i]).collect();
        check_everything(text.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_everything(&bytes);
        let mut with_table = b"UPDATE dbo.ReportPublication ".to_vec();
        with_table.extend(&bytes);
        check_everything(&with_table);
    }

    #[test]
    fn arbitrary_text_does_not_panic(text in "\\PC{0,200}") {
        check_everything(format!("UPDATE ReportPublication {text}").as_bytes());
    }
}

#[test]
fn deep_nesting_is_bounded() {
    let deep = format!(
        "UPDATE dbo.ReportPublication SET a = {}1{} WHERE {}ReportId = @id{};",
        "f(".repeat(20_000),
        ")".repeat(20_000),
        "(".repeat(20_000),
        ")".repeat(20_000)
    );
    let report = linter().check_file(Path::new("deep.sql"), deep.as_bytes());
    assert_eq!(report.diagnostics.len(), 1, "{:?}", report.diagnostics);
    let nots = format!(
        "UPDATE dbo.ReportPublication SET a = 1 WHERE {} ReportId = @id;",
        "NOT ".repeat(50_000)
    );
    assert_eq!(
        linter()
            .check_file(Path::new("not.sql"), nots.as_bytes())
            .diagnostics
            .len(),
        1
    );
    let cases = format!(
        "UPDATE dbo.ReportPublication SET a = {} 1 {};",
        "CASE WHEN 1 = 1 THEN ".repeat(5_000),
        "END ".repeat(5_000)
    );
    assert_eq!(
        linter()
            .check_file(Path::new("case.sql"), cases.as_bytes())
            .diagnostics
            .len(),
        1
    );
}
