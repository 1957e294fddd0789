//! The linter over whole files: SQL and Rust sources, positions, suppressions, table
//! discovery and unreadable input.

use std::path::Path;

use fenced_lint::{Config, Diagnostic, Linter, Rule, TableSpec};

fn linter() -> Linter {
    Linter::new(
        &Config::from_toml("[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n")
            .unwrap(),
    )
}

/// `(rule, line, column)` of each finding.
fn found(path: &str, text: &[u8]) -> Vec<(Rule, u32, u32)> {
    linter()
        .check_file(Path::new(path), text)
        .diagnostics
        .iter()
        .map(|d: &Diagnostic| (d.rule, d.range.start.line, d.range.start.column))
        .collect()
}

const UNFENCED: &str = "UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id";

#[test]
fn sql_position_is_the_first_keyword() {
    let text = format!("-- header\n\n   {UNFENCED};\nSELECT 1;");
    assert_eq!(
        found("a.sql", text.as_bytes()),
        [(Rule::UnfencedWrite, 3, 4)]
    );
    let report = linter().check_file(Path::new("a.sql"), text.as_bytes());
    let d = &report.diagnostics[0];
    assert_eq!(
        (d.range.end.line, d.range.end.column),
        (3, 3 + UNFENCED.chars().count() as u32)
    );
    assert_eq!(d.table.as_deref(), Some("dbo.ReportPublication"));
    assert!(
        d.help
            .as_deref()
            .unwrap()
            .contains("Generation = @generation")
    );
    assert_eq!(report.statements_checked, 1);
}

#[test]
fn cte_statement_starts_at_with() {
    let text = "WITH c AS (SELECT TOP 1 * FROM dbo.ReportPublication WHERE ReportId = @id)\nUPDATE c SET Payload = @p;";
    assert_eq!(
        found("a.sql", text.as_bytes()),
        [(Rule::UnfencedWrite, 1, 1)]
    );
}

#[test]
fn files_without_fenced_tables_are_skipped() {
    let report = linter().check_file(
        Path::new("a.sql"),
        b"UPDATE dbo.Other SET a = 1; DELETE FROM x;",
    );
    assert_eq!(report.diagnostics, []);
    assert_eq!(report.statements_checked, 0);
}

#[test]
fn utf16_with_bom_is_read() {
    let text = format!("\n{UNFENCED}\nGO\n");
    let mut le = vec![0xFF, 0xFE];
    le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    assert_eq!(found("a.sql", &le), [(Rule::UnfencedWrite, 2, 1)]);
    let mut be = vec![0xFE, 0xFF];
    be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
    assert_eq!(found("a.sql", &be), [(Rule::UnfencedWrite, 2, 1)]);
    let bom8 = format!("\u{feff}{UNFENCED}");
    assert_eq!(
        found("a.sql", bom8.as_bytes()),
        [(Rule::UnfencedWrite, 1, 1)]
    );
}

#[test]
fn unreadable_input_is_one_diagnostic() {
    for bytes in [
        &b"UPDATE dbo.ReportPublication \xFF\xFE\xFD"[..],
        b"\x00\x01binary ReportPublication",
        b"\xFF\xFE\x00\xD8",
    ] {
        let report = linter().check_file(Path::new("x.sql"), bytes);
        assert_eq!(report.diagnostics.len(), 1, "{bytes:?}");
        assert_eq!(report.diagnostics[0].rule, Rule::UnreadableFile);
        assert_eq!(
            (
                report.diagnostics[0].range.start.line,
                report.diagnostics[0].range.start.column
            ),
            (1, 1)
        );
    }
    let big = vec![b'a'; 8 * 1024 * 1024 + 1];
    assert_eq!(found("big.sql", &big), [(Rule::UnreadableFile, 1, 1)]);
    let d = Diagnostic::unreadable("gone.sql", "permission denied");
    assert_eq!(d.rule, Rule::UnreadableFile);
    assert!(d.message.contains("permission denied"));
}

#[test]
fn rust_literals_map_back_to_the_file() {
    let text = r####"//! "UPDATE dbo.ReportPublication SET a = 1" in an inner doc comment is not SQL
/// UPDATE dbo.ReportPublication SET a = 1 in a doc comment is not SQL.
const Q: &str = "UPDATE dbo.ReportPublication SET a = 1";
fn f(client: &Client) {
    client.execute("SELECT 1;\n\
                    DELETE FROM dbo.ReportPublication", &[]);
    let q = sqlx::query!(r#"
        UPDATE "ReportPublication"
        SET "Payload" = $1
        WHERE "ReportId" = $2"#, payload, id);
    // UPDATE dbo.ReportPublication SET a = 1 in a comment is not SQL.
    let s = format!("{}\tUPDATE dbo.ReportPublication SET b = {}", x, y);
}
"####;
    assert_eq!(
        found("src/repo.rs", text.as_bytes()),
        [
            (Rule::UnfencedWrite, 3, 18),
            (Rule::FencedRowDelete, 6, 21),
            (Rule::UnfencedWrite, 8, 9),
            (Rule::UnfencedWrite, 12, 26),
        ]
    );
}

#[test]
fn prose_in_rust_strings_is_not_sql() {
    let text = r#"
fn f() -> anyhow::Result<()> {
    bail!("cannot update ReportPublication row {id}: lease lost");
    log::warn!("will delete ReportPublication entries later");
    client.execute("UPDATE dbo.ReportPublication SET WHERE", &[])?;
}
"#;
    // Negative control: the genuinely broken SQL on line 5 is still reported.
    assert_eq!(
        found("src/messages.rs", text.as_bytes()),
        [(Rule::UnanalysedWrite, 5, 21)]
    );
}

#[test]
fn fenced_write_methods_are_skipped() {
    let text = r#"
impl Store {
    #[fenced::fenced_write]
    async fn publish(&self, lease: &Lease) -> Result<u64> {
        self.client.execute("UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id", &[]).await
    }
    async fn sneaky(&self) -> Result<u64> {
        self.client.execute("UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id", &[]).await
    }
}
"#;
    assert_eq!(
        found("src/store.rs", text.as_bytes()),
        [(Rule::UnfencedWrite, 8, 30)]
    );
}

#[test]
fn sql_suppressions() {
    let used = format!(
        "-- fenced-lint: allow(unfenced-write) nightly backfill runs with workers stopped\n{UNFENCED};"
    );
    assert_eq!(found("a.sql", used.as_bytes()), []);
    let no_reason = format!("-- fenced-lint: allow(unfenced-write)\n{UNFENCED};");
    assert_eq!(
        found("a.sql", no_reason.as_bytes()),
        [(Rule::SuppressionWithoutReason, 1, 1)]
    );
    let wrong_rule = format!("-- fenced-lint: allow(fenced-row-delete) not this one\n{UNFENCED};");
    assert_eq!(
        found("a.sql", wrong_rule.as_bytes()),
        [(Rule::UnusedSuppression, 1, 1), (Rule::UnfencedWrite, 2, 1)]
    );
    let too_far = format!("-- fenced-lint: allow(unfenced-write) too far away\n\n{UNFENCED};");
    assert_eq!(
        found("a.sql", too_far.as_bytes()),
        [(Rule::UnusedSuppression, 1, 1), (Rule::UnfencedWrite, 3, 1)]
    );
    let unknown = format!("-- fenced-lint: allow(require-fence) old name\n{UNFENCED};");
    assert_eq!(
        found("a.sql", unknown.as_bytes()),
        [
            (Rule::MalformedSuppression, 1, 1),
            (Rule::UnfencedWrite, 2, 1)
        ]
    );
    // A suppression alone in a file without fenced tables is still checked.
    assert_eq!(
        found(
            "b.sql",
            b"-- fenced-lint: allow(unfenced-write) stale\nSELECT 1;"
        ),
        [(Rule::UnusedSuppression, 1, 1)]
    );
}

#[test]
fn rust_suppressions() {
    let on_keyword_line = "fn f() {\n    let q = \"SELECT 1;\n    // fenced-lint: allow(unfenced-write) this comment is inside the string\n\";\n}\n";
    assert_eq!(found("a.rs", on_keyword_line.as_bytes()), []);
    let before_statement = format!(
        "fn f() {{\n    // fenced-lint: allow(unfenced-write) legacy admin tool, fenced by permissions\n    client.execute(\n        \"{UNFENCED}\",\n        &[],\n    );\n}}\n"
    );
    assert_eq!(found("a.rs", before_statement.as_bytes()), []);
    let before_keyword = format!(
        "fn f() {{\n    client.execute(\n        // fenced-lint: allow(unfenced-write) legacy admin tool\n        \"{UNFENCED}\",\n    );\n}}\n"
    );
    assert_eq!(found("a.rs", before_keyword.as_bytes()), []);
    // A `--` comment inside the SQL of a Rust string is SQL text, not a suppression.
    let inside_sql = format!(
        "const Q: &str = r#\"\n    -- fenced-lint: allow(unfenced-write) not a Rust comment\n    {UNFENCED}\"#;\n"
    );
    assert_eq!(
        found("a.rs", inside_sql.as_bytes()),
        [(Rule::UnfencedWrite, 3, 5)]
    );
    let unused = "// fenced-lint: allow(unfenced-write) nothing here\nfn f() {}\n";
    assert_eq!(
        found("a.rs", unused.as_bytes()),
        [(Rule::UnusedSuppression, 1, 1)]
    );
}

#[test]
fn dynamic_sql_is_checked() {
    let text = "EXEC sp_executesql N'UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id', N'@p nvarchar(max), @id uniqueidentifier', @p, @id;
DECLARE @sql nvarchar(max) = N'UPDATE dbo.ReportPublication SET Payload = NULL WHERE ' + @filter; EXEC (@sql);
EXEC (N'SELECT ''not a write on ReportPublication''');
EXEC sp_executesql N'UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND LeaseUntilUtc > SYSUTCDATETIME() AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)';";
    assert_eq!(
        found("dynamic.sql", text.as_bytes()),
        [(Rule::UnfencedWrite, 1, 22), (Rule::UnanalysedWrite, 2, 32)]
    );
}

#[test]
fn tables_are_discovered_from_create_table() {
    let schema = "CREATE TABLE dbo.Jobs (\n  JobId uniqueidentifier NOT NULL CONSTRAINT PK_Jobs PRIMARY KEY,\n  Generation bigint NOT NULL DEFAULT (0),\n  LeaseOwner uniqueidentifier NULL,\n  LeaseUntilUtc datetime2(7) NULL\n);\nCREATE TABLE dbo.Plain (Id int PRIMARY KEY, Name nvarchar(10));";
    let empty = Linter::new(&Config::default());
    let discovered = empty.discover_tables(Path::new("schema.sql"), schema.as_bytes());
    assert_eq!(
        discovered,
        [TableSpec {
            // Created without the epoch column: its writes need not check one.
            epoch: None,
            ..TableSpec::new("dbo.Jobs", "JobId")
        }]
    );
    let postgres = "pub const SCHEMA: &str = \"CREATE TABLE IF NOT EXISTS leases (id text, generation bigint NOT NULL DEFAULT 0, lease_owner uuid, lease_until timestamptz, PRIMARY KEY (id))\";";
    let discovered_pg = empty.discover_tables(Path::new("migrations.rs"), postgres.as_bytes());
    assert_eq!(discovered_pg.len(), 1);
    assert_eq!(
        (
            discovered_pg[0].name.as_str(),
            discovered_pg[0].key.as_str()
        ),
        ("leases", "id")
    );

    let linter = empty.with_discovered([discovered, discovered_pg].concat());
    let report = linter.check_file(Path::new("jobs.sql"), b"UPDATE Jobs SET Payload = 1 WHERE JobId = @id;\nUPDATE leases SET x = 1 WHERE id = $1 AND generation = $2 AND lease_owner = $3 AND lease_until > clock_timestamp();");
    let rules: Vec<_> = report
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.range.start.line))
        .collect();
    assert_eq!(rules, [(Rule::UnfencedWrite, 1)]);
    // Negative control: before discovery, nothing is fenced.
    assert_eq!(
        Linter::new(&Config::default())
            .check_file(Path::new("jobs.sql"), b"UPDATE Jobs SET Payload = 1;")
            .diagnostics,
        []
    );
}

#[test]
fn unparseable_fenced_writes_are_reported_not_skipped() {
    let text =
        "UPDATE dbo.ReportPublication SET WHERE ReportId = @id;\nUPDATE dbo.Other SET WHERE x = 1;";
    assert_eq!(
        found("a.sql", text.as_bytes()),
        [(Rule::UnanalysedWrite, 1, 1)]
    );
    let report = linter().check_file(Path::new("a.sql"), text.as_bytes());
    assert_eq!(report.coverage.unparsed, 2);
    assert_eq!(report.coverage.unanalysed_fenced, 1);
}

#[test]
fn explain_has_the_fixed_headings() {
    for rule in Rule::ALL {
        let doc = fenced_lint::explain(*rule);
        assert!(
            doc.contains(rule.name()) && doc.contains(rule.code()),
            "{rule}"
        );
        for heading in [
            "## What it does",
            "## Why is this bad?",
            "## Example",
            "## Use instead",
        ] {
            assert!(doc.contains(heading), "{rule} lacks {heading}");
        }
    }
}

#[test]
fn candidates_are_sql_and_rust() {
    assert!(Linter::is_candidate(Path::new("a/b.SQL")));
    assert!(Linter::is_candidate(Path::new("src/lib.rs")));
    assert!(!Linter::is_candidate(Path::new("README.md")));
    assert!(!Linter::is_candidate(Path::new("Makefile")));
}

#[test]
fn check_sql_reports_byte_ranges() {
    let sql = format!("SELECT 1; {UNFENCED}");
    let findings = linter().check_sql(&sql);
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].rule, Rule::UnfencedWrite);
    assert_eq!(&sql[findings[0].range.clone()], UNFENCED);
    assert_eq!(linter().check_sql("UPDATE dbo.Other SET a = 1"), []);
}

#[test]
fn the_articles_table_is_discovered() {
    let article = "CREATE TABLE dbo.ReportPublication
(
    ReportId uniqueidentifier NOT NULL
        CONSTRAINT PK_ReportPublication PRIMARY KEY,

    Generation bigint NOT NULL
        CONSTRAINT DF_ReportPublication_Generation DEFAULT (0),

    LeaseOwner uniqueidentifier NULL,
    LeaseUntilUtc datetime2(7) NULL,

    PublishedGeneration bigint NOT NULL
        CONSTRAINT DF_ReportPublication_PublishedGeneration DEFAULT (0),

    Payload nvarchar(max) NULL,
    PublishedAtUtc datetime2(7) NULL
);";
    let discovered = Linter::new(&Config::default())
        .discover_tables(Path::new("schema.sql"), article.as_bytes());
    // The article's table has no epoch column (the guard adds `LeaseEpoch`): its writes
    // cannot check one.
    assert_eq!(
        discovered,
        [TableSpec {
            epoch: None,
            ..TableSpec::new("dbo.ReportPublication", "ReportId")
        }]
    );
}

#[test]
fn excluded_paths_are_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("fenced-lint.toml");
    std::fs::write(
        &config_path,
        "exclude = [\"fixtures/**\"]\n[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n",
    )
    .unwrap();
    let linter = Linter::new(&Config::load(&config_path).unwrap());
    let excluded = dir.path().join("fixtures/bad.sql");
    assert!(linter.is_excluded(&excluded));
    assert_eq!(
        linter
            .check_file(&excluded, UNFENCED.as_bytes())
            .diagnostics,
        []
    );
    // Negative control: the same file elsewhere is checked.
    let checked = dir.path().join("src/bad.sql");
    assert!(!linter.is_excluded(&checked));
    assert_eq!(
        linter
            .check_file(&checked, UNFENCED.as_bytes())
            .diagnostics
            .len(),
        1
    );
    // Discovery keeps the exclusions.
    let linter = linter.with_discovered(Vec::new());
    assert!(linter.is_excluded(&excluded));
}

/// The prefilter ignores case, brackets and quotes and lets schema-wide grants through:
/// each of these files names the fenced table only in such a form (or not at all, for
/// the grant), and is still parsed and flagged.
#[test]
fn prefilter_lets_through_every_spelling_of_a_fenced_table() {
    let cases: [(&str, &str, Rule); 7] = [
        (
            "odd_case.sql",
            "update DBO.reportPUBLICATION set Payload = @p where ReportId = @id;",
            Rule::UnfencedWrite,
        ),
        (
            "brackets.sql",
            "UPDATE [dbo].[REPORTPUBLICATION] SET Payload = @p WHERE ReportId = @id;",
            Rule::UnfencedWrite,
        ),
        (
            "quotes.sql",
            "UPDATE \"dbo\".\"reportpublication\" SET Payload = $1 WHERE ReportId = $2;",
            Rule::UnfencedWrite,
        ),
        (
            "odd_case.rs",
            "const Q: &str = \"update [ReportPUBLICATION] set Payload = $1 where ReportId = $2\";\n",
            Rule::UnfencedWrite,
        ),
        (
            "schema_grant.sql",
            "gRaNt UPDATE ON SCHEMA::dbo TO svc;",
            Rule::FencedTableGrant,
        ),
        (
            "all_tables.sql",
            "Grant insert, update on all tables in schema dbo to app;",
            Rule::FencedTableGrant,
        ),
        (
            "database_grant.rs",
            "const G: &str = \"grant control on database::Reports to svc\";\n",
            Rule::FencedTableGrant,
        ),
    ];
    for (name, text, rule) in cases {
        let report = linter().check_file(Path::new(name), text.as_bytes());
        assert!(report.analysed, "{name}: skipped by the prefilter");
        assert!(
            report.diagnostics.iter().any(|d| d.rule == rule),
            "{name}: no {rule:?} in {:?}",
            report.diagnostics
        );
    }
}

/// Negative control for the prefilter: a file that names no fenced table, holds no grant
/// and no suppression marker costs one search and is not parsed.
#[test]
fn prefilter_skips_files_that_mention_no_fenced_table() {
    for (name, text) in [
        (
            "orders.sql",
            "UPDATE dbo.Orders SET Status = @s WHERE OrderId = @id;\nDELETE FROM dbo.Report WHERE Id = 1;",
        ),
        (
            "orders.rs",
            "const Q: &str = \"UPDATE orders SET status = $1 WHERE id = $2\"; // publication\n",
        ),
    ] {
        let report = linter().check_file(Path::new(name), text.as_bytes());
        assert!(!report.analysed, "{name}: parsed");
        assert_eq!(report.statements_checked, 0, "{name}");
    }
    // The same statement naming the fenced table is parsed: the skip above is the
    // prefilter's, not the statement's.
    let named = linter().check_file(
        Path::new("orders.sql"),
        b"UPDATE dbo.Orders SET Status = @s WHERE OrderId = @id; -- ReportPublication",
    );
    assert!(named.analysed);
    assert_eq!(named.statements_checked, 1);
}

/// Decoding once and checking the text gives the same report as checking the bytes, for
/// UTF-16 as for UTF-8 (the walk decodes each file once and shares the text between the
/// passes).
#[test]
fn check_text_agrees_with_check_file() {
    let text = format!("-- header\n{UNFENCED};\nGRANT UPDATE ON SCHEMA::dbo TO svc;\n");
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    for bytes in [text.as_bytes(), &utf16] {
        let decoded = fenced_lint::source::decode(bytes).unwrap();
        let from_text = linter().check_text(Path::new("a.sql"), &decoded);
        assert_eq!(
            from_text.diagnostics.len(),
            2,
            "{:?}",
            from_text.diagnostics
        );
        assert_eq!(from_text, linter().check_file(Path::new("a.sql"), bytes));
    }
}

/// The walk searches each file once: pass 1's scan records whether the file mentions
/// what the configured linter looks for, and pass 2 searches a file that mentioned
/// nothing only for what discovery added. The reports must equal a full check's.
#[test]
fn check_scanned_agrees_with_check_text() {
    let configured = linter();
    let schema = "CREATE TABLE dbo.Jobs (JobId int PRIMARY KEY, Generation bigint, LeaseOwner uuid, LeaseUntilUtc datetime2);";
    let files = [
        ("schema.sql", schema),
        ("configured.sql", UNFENCED),
        // Names only the discovered table: the configured linter's scan saw nothing.
        (
            "discovered.sql",
            "update [JOBS] set Payload = 1 where JobId = @id;",
        ),
        (
            "discovered.rs",
            "const Q: &str = \"UPDATE jobs SET Payload = $1\";\n",
        ),
        ("grant.sql", "grant update on schema::dbo to svc;"),
        (
            "neither.sql",
            "UPDATE dbo.Orders SET Status = 1 WHERE OrderId = 2;",
        ),
    ];
    let scans: Vec<_> = files
        .iter()
        .map(|(name, text)| configured.scan_text(Path::new(name), text))
        .collect();
    assert_eq!(
        scans.iter().map(|s| s.mentions).collect::<Vec<_>>(),
        [false, true, false, false, true, false]
    );
    let discovered: Vec<TableSpec> = scans.iter().flat_map(|s| s.tables.clone()).collect();
    assert_eq!(discovered.len(), 1);
    let full = configured.clone().with_discovered(discovered);
    let mut flagged = Vec::new();
    for ((name, text), scan) in files.iter().zip(&scans) {
        // Both passes at once, as the walk runs them with the configured linter.
        assert_eq!(
            configured.scan_and_check(Path::new(name), text),
            (
                scan.clone(),
                configured.check_scanned(Path::new(name), text, scan)
            ),
            "{name}"
        );
        let report = full.check_scanned(Path::new(name), text, scan);
        assert_eq!(report, full.check_text(Path::new(name), text), "{name}");
        if !report.diagnostics.is_empty() {
            flagged.push(*name);
        }
    }
    assert_eq!(
        flagged,
        [
            "configured.sql",
            "discovered.sql",
            "discovered.rs",
            "grant.sql"
        ]
    );
}

#[test]
fn a_concat_is_checked_as_one_statement() {
    let split = |first: &str, second: &str| {
        format!(
            "fn f() {{\n    db.execute(concat!(\n        \"{first}\",\n        \"{second}\"\n    ), &[]);\n}}\n"
        )
    };
    let head = "UPDATE dbo.ReportPublication SET Payload = @p ";
    let fenced = "WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o \
                  AND LeaseUntilUtc > SYSUTCDATETIME() \
                  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)";
    assert_eq!(found("src/repo.rs", split(head, fenced).as_bytes()), []);
    // Negative control: the same pieces as two separate strings. The first alone is an
    // UPDATE without a fence.
    let separate = format!(
        "fn f() {{\n    db.execute(\"{head}\", &[]);\n    db.execute(\"{fenced}\", &[]);\n}}\n"
    );
    assert_eq!(
        found("src/repo.rs", separate.as_bytes()),
        [(Rule::UnfencedWrite, 2, 17)]
    );
    // Unfenced across the pieces: reported, at the statement's start in the first piece.
    let unfenced = split(head, "WHERE ReportId = @id");
    assert_eq!(
        found("src/repo.rs", unfenced.as_bytes()),
        [(Rule::UnfencedWrite, 3, 10)]
    );
}

/// pg_dump's layout: `COPY ... FROM stdin;`, data lines (with `[`, an odd `"`, an
/// apostrophe), `\.`, then more statements, which must all be checked.
#[test]
fn statements_after_copy_data_are_checked() {
    let text = format!(
        "COPY dbo.ReportPublication (ReportId, Payload) FROM stdin;\n1\t[open\n2\t\"odd\n3\tit's\n\\.\n{UNFENCED};\n\\.\n{UNFENCED};\n"
    );
    assert_eq!(
        found("dump.sql", text.as_bytes()),
        [(Rule::UnfencedWrite, 6, 1), (Rule::UnfencedWrite, 8, 1)]
    );
}

/// A PostgreSQL rule's actions are statements; its event (`ON UPDATE TO t`) is not.
#[test]
fn rule_actions_are_checked() {
    let text = "CREATE RULE r AS ON UPDATE TO dbo.ReportPublication\n    DO INSTEAD UPDATE dbo.ReportPublication SET Payload = NEW.Payload WHERE ReportId = OLD.ReportId;\n\
CREATE RULE s AS ON DELETE TO v DO ALSO (DELETE FROM dbo.ReportPublication WHERE ReportId = OLD.ReportId; UPDATE dbo.ReportPublication SET Payload = NULL WHERE ReportId = 1);\n\
CREATE RULE q AS ON INSERT TO v DO UPDATE dbo.ReportPublication SET Payload = NULL WHERE ReportId = 1;\n";
    assert_eq!(
        found("rules.sql", text.as_bytes()),
        [
            (Rule::UnfencedWrite, 2, 16),
            (Rule::FencedRowDelete, 3, 42),
            (Rule::UnfencedWrite, 3, 107),
            (Rule::UnfencedWrite, 4, 36),
        ]
    );
}

/// A string is SQL only where it is executed: a message (`RAISERROR`, `PRINT`, `THROW`,
/// PL/pgSQL `RAISE`), a value selected or inserted, or a variable never executed, is not.
#[test]
fn messages_and_values_are_not_sql() {
    let text = "RAISERROR('UPDATE dbo.ReportPublication SET Payload = NULL failed', 16, 1);
PRINT N'DELETE FROM dbo.ReportPublication WHERE ReportId = 1';
PRINT 'run: ' + N'UPDATE dbo.ReportPublication SET Payload = 1';
SELECT 'UPDATE dbo.ReportPublication SET Payload = 1' AS Example;
INSERT INTO dbo.Help (Text) VALUES (N'DELETE dbo.ReportPublication');
SET @msg = N'UPDATE dbo.ReportPublication SET Payload = 1'; RAISERROR(@msg, 16, 1);
DO $$ BEGIN RAISE NOTICE 'UPDATE dbo.ReportPublication SET Payload = 1'; END $$;
SET @sql = N'UPDATE dbo.ReportPublication SET Payload = 2'; EXEC sys.sp_executesql @stmt = @sql;
";
    assert_eq!(
        found("messages.sql", text.as_bytes()),
        [(Rule::UnfencedWrite, 8, 14)]
    );
}

/// Dynamic SQL inside dynamic SQL, in T-SQL quotes and in PostgreSQL dollar quotes: the
/// finding points at the innermost statement in the file.
#[test]
fn nested_dynamic_sql_is_checked() {
    let text = "EXEC sp_executesql N'EXEC sp_executesql N''EXEC (N''''UPDATE dbo.ReportPublication SET Payload = 1 WHERE ReportId = 1'''')''';
CREATE FUNCTION f() RETURNS void AS $body$ BEGIN EXECUTE $q$ EXECUTE 'DELETE FROM dbo.ReportPublication WHERE ReportId = 1' $q$; END $body$ LANGUAGE plpgsql;
DO $$ BEGIN EXECUTE format('UPDATE dbo.ReportPublication SET Payload = %L WHERE ReportId = 1', 'x'); END $$;
";
    assert_eq!(
        found("nested.sql", text.as_bytes()),
        [
            (Rule::UnfencedWrite, 1, 55),
            (Rule::FencedRowDelete, 2, 71),
            (Rule::UnfencedWrite, 3, 29),
        ]
    );
}

/// A log or panic message in Rust is prose even when it reads like SQL.
#[test]
fn rust_messages_are_not_sql() {
    let text = r#"fn f() {
    info!("Delete ReportPublication rows when expired ...");
    log::warn!( "Update dbo.ReportPublication set failed");
    let x = y.expect("delete from ReportPublication failed");
    client.execute("DELETE FROM ReportPublication WHERE ReportId = $1", &[&id]);
    —info!("Delete ReportPublication rows when expired");
}
"#;
    assert_eq!(
        found("a.rs", text.as_bytes()),
        [(Rule::FencedRowDelete, 5, 21)]
    );
}

/// A MERGE's `THEN DELETE` arm closing a CTE is not a DELETE statement of its own.
#[test]
fn a_merge_delete_arm_closing_a_cte_is_not_a_statement() {
    let text = "WITH c AS (MERGE INTO t USING s ON (true) WHEN MATCHED THEN DELETE)\nSELECT * FROM dbo.ReportPublication;\n";
    assert_eq!(found("merge.sql", text.as_bytes()), []);
}

/// A fence column buried in an expression does not fence the write, and the finding
/// says why: the predicate must be a plain conjunct of the top-level AND.
#[test]
fn fences_inside_expressions_are_named_in_the_finding() {
    let linter = linter();
    for sql in [
        "UPDATE dbo.ReportPublication SET Payload = 1 WHERE ReportId = @id AND NOT (Generation <> @g OR LeaseOwner <> @o OR LeaseUntilUtc <= SYSUTCDATETIME())",
        "UPDATE dbo.ReportPublication SET Payload = 1 WHERE ReportId = @id AND Generation = @g AND LeaseOwner = @o AND DATEDIFF(second, SYSUTCDATETIME(), LeaseUntilUtc) > 0",
        "UPDATE dbo.ReportPublication SET Payload = 1 WHERE ReportId = @id AND (Generation, LeaseOwner) = (@g, @o) AND LeaseUntilUtc > SYSUTCDATETIME()",
    ] {
        let findings = linter.check_sql(sql);
        assert_eq!(findings.len(), 1, "{sql}: {findings:?}");
        assert_eq!(findings[0].rule, Rule::UnfencedWrite, "{sql}");
        assert!(
            findings[0].message.contains("must be a plain conjunct"),
            "{sql}: {}",
            findings[0].message
        );
    }
    // Negative control: the missing predicate named nowhere keeps the plain message.
    let findings =
        linter.check_sql("UPDATE dbo.ReportPublication SET Payload = 1 WHERE ReportId = @id");
    assert!(
        !findings[0].message.contains("plain conjunct"),
        "{}",
        findings[0].message
    );
}

/// The help line writes the missing predicates' values as the statement writes its
/// parameters: never `@name` in a PostgreSQL statement.
#[test]
fn help_placeholders_follow_the_statement() {
    let linter = linter();
    let help = |sql: &str| linter.check_sql(sql)[0].help.clone().unwrap();
    assert_eq!(
        help("UPDATE dbo.ReportPublication SET Payload = $1 WHERE ReportId = $2"),
        "add `AND Generation = $3 AND LeaseOwner = $4 AND LeaseUntilUtc > <database clock>` to the WHERE clause"
    );
    assert!(
        help("UPDATE dbo.ReportPublication SET Payload = @p WHERE ReportId = @id")
            .contains("Generation = @generation")
    );
    assert!(
        help("UPDATE dbo.ReportPublication SET Payload = ?1 WHERE ReportId = ?2")
            .contains("Generation = ?")
    );
    assert!(
        help("UPDATE dbo.ReportPublication SET Payload = p_payload WHERE ReportId = p_id")
            .contains("Generation = <generation>")
    );
}

/// A file that names a fenced table but holds no statement the rules examine (nor a
/// suppression) is not lexed; one with such a keyword, in any case, is.
#[test]
fn files_without_statement_keywords_are_not_analysed() {
    let linter = linter();
    let quiet = linter.check_file(
        Path::new("a.sql"),
        b"SELECT * FROM dbo.ReportPublication WHERE ReportId = 1;",
    );
    assert!(!quiet.analysed);
    let write = linter.check_file(
        Path::new("a.sql"),
        b"SELECT * FROM dbo.ReportPublication; uPdAtE dbo.ReportPublication SET Payload = 1;",
    );
    assert!(write.analysed);
    assert_eq!(write.diagnostics.len(), 1);
}
