//! The `fenced-lint` binary, run as a CI step runs it: exit codes, configuration,
//! suppressions, encodings, unreadable files, `.gitignore`, output files and formats.
//!
//! Every tree is written to a temporary directory by the test itself. Fixture SQL names
//! its table `{T}`, replaced by `FixtureLease` when the file is written, so that this
//! source file holds no write to a fenced table when the repository lints itself.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fenced_lint::rules::Rule;

const BIN: &str = env!("CARGO_BIN_EXE_fenced-lint");

const CONFIG: &str = "[[table]]\nname = \"FixtureLease\"\nkey = \"ReportId\"\n";

/// The article's acquire, publish, renew and release: all correctly fenced.
const CLEAN_SQL: &str = "\
UPDATE dbo.{T}
SET Generation = Generation + 1,
    LeaseOwner = @owner,
    LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
OUTPUT inserted.Generation
WHERE ReportId = @reportId
  AND (
      LeaseUntilUtc IS NULL
      OR LeaseUntilUtc <= SYSUTCDATETIME()
  );

UPDATE dbo.{T}
SET Payload = @payload,
    PublishedGeneration = @generation,
    PublishedAtUtc = SYSUTCDATETIME()
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)
  AND PublishedGeneration < @generation;

UPDATE dbo.{T}
SET LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1);

UPDATE dbo.{T}
SET LeaseOwner = NULL,
    LeaseUntilUtc = NULL
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner;
";

/// A publish that forgot the owner and the expiry: `unfenced-write` at line 3.
const UNFENCED_SQL: &str = "\
-- publish without the fence
SELECT 1;
UPDATE dbo.{T}
SET Payload = @payload
WHERE ReportId = @reportId
  AND Generation = @generation;
";

/// The same write in Rust: the finding must point into the Rust file.
const UNFENCED_RS: &str = r#"pub async fn publish(client: &Client, payload: &str, id: &str) {
    client
        .execute("UPDATE {T} SET Payload = $1 WHERE ReportId = $2", &[&payload, &id])
        .await
        .unwrap();
}
"#;

/// A temporary tree to lint.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A tree with the fixture configuration.
    fn configured() -> Tree {
        let tree = Tree::new();
        tree.file("fenced-lint.toml", CONFIG);
        tree
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a text file, naming the fixture table where `{T}` stands.
    fn file(&self, rel: &str, text: &str) -> &Tree {
        self.bytes(rel, text.replace("{T}", "FixtureLease").as_bytes())
    }

    fn bytes(&self, rel: &str, bytes: &[u8]) -> &Tree {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
        self
    }

    /// Runs the binary in the tree's root.
    fn run(&self, args: &[&str]) -> Run {
        self.run_in(self.dir.path(), args)
    }

    fn run_in(&self, cwd: &Path, args: &[&str]) -> Run {
        let output = Command::new(BIN)
            .args(args)
            .current_dir(cwd)
            .env_remove("NO_COLOR")
            .output()
            .unwrap();
        Run::from(output)
    }
}

/// One finished run of the binary.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output
                .status
                .code()
                .expect("the lint was not killed by a signal"),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

impl Run {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }

    /// `(path, line, rule)` of every finding, from the JSON format.
    fn findings(&self) -> Vec<(String, u64, String)> {
        self.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_owned(),
                    f["line"].as_u64().unwrap(),
                    f["rule"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

fn finding(path: &str, line: u64, rule: Rule) -> (String, u64, String) {
    (path.to_owned(), line, rule.name().to_owned())
}

#[test]
fn a_clean_tree_exits_0() {
    let tree = Tree::configured();
    tree.file("sql/lease.sql", CLEAN_SQL);
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.findings(), []);
    assert_eq!(run.json()["statements_checked"], 4, "{run:?}");
}

#[test]
fn an_unfenced_write_exits_1_in_sql_and_in_rust() {
    let tree = Tree::configured();
    tree.file("sql/lease.sql", CLEAN_SQL)
        .file("sql/publish.sql", UNFENCED_SQL)
        .file("src/store.rs", UNFENCED_RS);
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.findings(),
        [
            finding("sql/publish.sql", 3, Rule::UnfencedWrite),
            finding("src/store.rs", 3, Rule::UnfencedWrite),
        ]
    );
    // Inside the Rust file, the column is where `UPDATE` sits in the string literal.
    let rust = &run.json()["findings"][1];
    assert_eq!(rust["column"], 19, "{rust}");
    assert_eq!(rust["table"], "FixtureLease");
}

#[test]
fn human_output_points_at_the_statement_and_ends_with_a_summary() {
    let tree = Tree::configured();
    tree.file("sql/publish.sql", UNFENCED_SQL);
    let run = tree.run(&[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.starts_with("error[FL001]: "), "{}", run.stdout);
    assert!(
        run.stdout.contains(" --> sql/publish.sql:3:1\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("3 | UPDATE dbo.FixtureLease\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  | ^^^^^^^^^^^^^^^^^^^^^^^\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("= help: "), "{}", run.stdout);
    assert!(
        run.stdout
            .ends_with("fenced-lint: 1 error in 1 file (statements checked: 1)\n"),
        "{}",
        run.stdout
    );
    // Not a terminal: no color.
    assert!(!run.stdout.contains('\x1b'));
}

#[test]
fn tables_come_from_create_table_without_any_configuration() {
    let tree = Tree::new();
    tree.file(
        "schema.sql",
        "CREATE TABLE dbo.{T} (ReportId uniqueidentifier NOT NULL PRIMARY KEY, Generation bigint NOT NULL, LeaseOwner uniqueidentifier NULL, LeaseUntilUtc datetime2(7) NULL, Payload nvarchar(max) NULL);\n",
    )
    .file("z/publish.sql", UNFENCED_SQL);
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.findings(),
        [finding("z/publish.sql", 3, Rule::UnfencedWrite)]
    );

    // Negative control: without the CREATE TABLE, nothing is fenced.
    fs::remove_file(tree.path("schema.sql")).unwrap();
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
}

/// Discovery adding a table to the configured ones: the files checked during the walk
/// with the configured tables alone are checked again with all of them.
#[test]
fn discovered_tables_add_to_configured_ones() {
    let tree = Tree::configured();
    tree.file(
        "a/schema.sql",
        "CREATE TABLE dbo.Jobs (JobId int PRIMARY KEY, Generation bigint, LeaseOwner uuid, LeaseUntilUtc datetime2);\n",
    )
    // fenced-lint: allow(unfenced-write) the unfenced write this test expects the lint to find
    .file("b/jobs.sql", "UPDATE dbo.Jobs SET Payload = 1 WHERE JobId = @id;\n")
    .file("c/publish.sql", UNFENCED_SQL)
    .file("d/jobs.rs", "const Q: &str = \"UPDATE jobs SET Payload = $1\";\n")
    .file("e/read.sql", "SELECT * FROM dbo.Jobs;\n");
    let expected = [
        finding("b/jobs.sql", 1, Rule::UnfencedWrite),
        finding("c/publish.sql", 3, Rule::UnfencedWrite),
        finding("d/jobs.rs", 1, Rule::UnfencedWrite),
    ];
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.findings(), expected);
    // The human report shows the statements of both passes.
    let human = tree.run(&[]);
    // fenced-lint: allow(unanalysed-write) the human report this test reads back
    assert!(human.stdout.contains("1 | UPDATE dbo.Jobs"), "{human:?}");
    assert!(
        human.stdout.contains("3 | UPDATE dbo.FixtureLease"),
        "{human:?}"
    );

    // Negative control: without the CREATE TABLE, only the configured table is fenced.
    fs::remove_file(tree.path("a/schema.sql")).unwrap();
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.findings(), expected[1..2]);
}

#[test]
fn explicit_paths_limit_the_run() {
    let tree = Tree::configured();
    tree.file("good/lease.sql", CLEAN_SQL)
        .file("bad/publish.sql", UNFENCED_SQL);
    assert_eq!(tree.run(&["good"]).code, 0);
    assert_eq!(tree.run(&["good", "bad"]).code, 1);
    let run = tree.run(&["--format", "json", "bad/publish.sql"]);
    assert_eq!(
        run.findings(),
        [finding("bad/publish.sql", 3, Rule::UnfencedWrite)]
    );
}

#[test]
fn a_named_file_is_linted_whatever_its_extension_but_walks_take_only_candidates() {
    let tree = Tree::configured();
    tree.file("scripts/publish.tsql", UNFENCED_SQL);
    assert_eq!(tree.run(&[]).code, 0, "a walk skips .tsql");
    let run = tree.run(&["--format", "json", "scripts/publish.tsql"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.findings(),
        [finding("scripts/publish.tsql", 3, Rule::UnfencedWrite)]
    );
}

#[test]
fn gitignore_is_honoured_outside_a_git_repository() {
    let tree = Tree::configured();
    tree.file("sql/lease.sql", CLEAN_SQL)
        .file("generated/publish.sql", UNFENCED_SQL);
    // Negative control: without the .gitignore the violation is found.
    assert_eq!(tree.run(&[]).code, 1);
    tree.file(".gitignore", "/generated/\n");
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["files_scanned"], 1);
}

#[test]
fn configured_excludes_are_not_linted() {
    let tree = Tree::new();
    tree.file("sql/lease.sql", CLEAN_SQL)
        .file("fixtures/publish.sql", UNFENCED_SQL);
    // Negative control: without the exclude the violation is found.
    tree.file("fenced-lint.toml", CONFIG);
    assert_eq!(tree.run(&[]).code, 1);
    tree.file(
        "fenced-lint.toml",
        &format!("exclude = [\"fixtures/**\"]\n{CONFIG}"),
    );
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()["files_scanned"],
        1,
        "excluded files are not read"
    );
    // The globs are relative to the configuration file, wherever the lint runs from.
    let run = tree.run_in(&tree.path("fixtures"), &["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn config_is_discovered_from_the_current_directory_upwards() {
    let tree = Tree::configured();
    tree.file("deep/down/publish.sql", UNFENCED_SQL);
    let run = tree.run_in(&tree.path("deep/down"), &["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.findings(),
        [finding("publish.sql", 3, Rule::UnfencedWrite)]
    );
}

#[test]
fn config_flag_overrides_discovery() {
    let tree = Tree::new();
    tree.file("lint/custom.toml", CONFIG)
        .file("publish.sql", UNFENCED_SQL);
    assert_eq!(tree.run(&[]).code, 0, "no configuration: nothing fenced");
    assert_eq!(tree.run(&["--config", "lint/custom.toml"]).code, 1);
}

#[test]
fn a_broken_config_exits_2_naming_the_file() {
    let tree = Tree::new();
    tree.file("fenced-lint.toml", "[[table]\nname = ")
        .file("publish.sql", UNFENCED_SQL);
    let run = tree.run(&[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("fenced-lint.toml"), "{}", run.stderr);
    assert!(run.stdout.is_empty());

    let tree = Tree::new();
    tree.file("bad.toml", "[[table]]\nname = \"x; DROP TABLE y\"\n");
    let run = tree.run(&["--config", "bad.toml"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("bad.toml"), "{}", run.stderr);

    let run = tree.run(&["--config", "missing.toml"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("missing.toml"), "{}", run.stderr);
}

#[test]
fn usage_errors_exit_2() {
    let tree = Tree::new();
    for args in [
        &["--no-such-flag"][..],
        &["--format", "xml"],
        &["--config"],
        &["no/such/path"],
    ] {
        let run = tree.run(args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(!run.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn version_and_help_exit_0() {
    let tree = Tree::new();
    let run = tree.run(&["--version"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        format!("fenced-lint {}\n", env!("CARGO_PKG_VERSION"))
    );
    let run = tree.run(&["--help"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("--format <FORMAT>"), "{}", run.stdout);
}

#[test]
fn output_flag_writes_the_report_to_a_file() {
    let tree = Tree::configured();
    tree.file("publish.sql", UNFENCED_SQL);
    let run = tree.run(&["--format", "json", "--output", "report.json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(tree.path("report.json")).unwrap()).unwrap();
    assert_eq!(report["findings"][0]["rule"], "unfenced-write");

    let run = tree.run(&["--output", "no/such/dir/report.txt"]);
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn json_output_has_exactly_the_contract_keys() {
    let tree = Tree::configured();
    tree.file("publish.sql", UNFENCED_SQL);
    let json = tree.run(&["--format", "json"]).json();
    let keys = |v: &serde_json::Value| {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(
        keys(&json),
        ["files_scanned", "findings", "statements_checked"]
    );
    let mut expected = [
        "rule",
        "code",
        "severity",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "table",
        "message",
    ];
    expected.sort();
    assert_eq!(keys(&json["findings"][0]), expected);
    let f = &json["findings"][0];
    assert_eq!(f["code"], "FL001");
    assert_eq!(f["severity"], "error");
    assert_eq!(json["files_scanned"], 1);
}

#[test]
fn a_suppression_with_a_reason_silences_the_finding() {
    let tree = Tree::configured();
    tree.file(
        "publish.sql",
        &format!(
            "-- fenced-lint: allow(unfenced-write) migration runs before any worker starts\n{}",
            &UNFENCED_SQL[UNFENCED_SQL.find("UPDATE").unwrap()..]
        ),
    );
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.findings(), []);
}

#[test]
fn a_suppression_in_rust_silences_the_finding() {
    let tree = Tree::configured();
    let suppressed = UNFENCED_RS.replace(
        "        .execute(",
        "        // fenced-lint: allow(unfenced-write) a test fixture\n        .execute(",
    );
    tree.file("src/store.rs", &suppressed);
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_suppression_without_a_reason_is_a_finding() {
    let tree = Tree::configured();
    tree.file(
        "publish.sql",
        &format!(
            "-- fenced-lint: allow(unfenced-write)\n{}",
            &UNFENCED_SQL[UNFENCED_SQL.find("UPDATE").unwrap()..]
        ),
    );
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let rules: Vec<String> = run.findings().into_iter().map(|f| f.2).collect();
    assert!(
        rules.contains(&"suppression-without-reason".to_owned()),
        "{rules:?}"
    );
}

#[test]
fn an_unused_suppression_warns_but_exits_0() {
    let tree = Tree::configured();
    tree.file(
        "lease.sql",
        &format!("-- fenced-lint: allow(fenced-row-delete) retention job\n{CLEAN_SQL}"),
    );
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.findings(),
        [finding("lease.sql", 1, Rule::UnusedSuppression)]
    );
    assert_eq!(run.json()["findings"][0]["severity"], "warning");
}

fn utf16le_with_bom(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes
}

#[test]
fn utf16_with_a_bom_is_analysed() {
    let tree = Tree::configured();
    let text = UNFENCED_SQL
        .replace("{T}", "FixtureLease")
        .replace('\n', "\r\n");
    tree.bytes("ssms/publish.sql", &utf16le_with_bom(&text));
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.findings(),
        [finding("ssms/publish.sql", 3, Rule::UnfencedWrite)]
    );
    // The human format decodes it too, for the snippet.
    let run = tree.run(&[]);
    assert!(
        run.stdout.contains("3 | UPDATE dbo.FixtureLease\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn unreadable_files_are_one_finding_each_and_never_a_crash() {
    let tree = Tree::configured();
    tree.file("lease.sql", CLEAN_SQL)
        .bytes(
            "binary.sql",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\x01\0\0\0",
        )
        .bytes(
            "latin1.sql",
            b"UPDATE t SET name = 'Fran\xe7ois' WHERE id = 1;\n",
        );
    #[cfg(unix)]
    std::os::unix::fs::symlink(tree.path("nowhere.sql"), tree.path("dangling.sql")).unwrap();
    let run = tree.run(&["--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let mut expected = vec![
        finding("binary.sql", 1, Rule::UnreadableFile),
        finding("latin1.sql", 1, Rule::UnreadableFile),
    ];
    if cfg!(unix) {
        expected.insert(1, finding("dangling.sql", 1, Rule::UnreadableFile));
    }
    assert_eq!(run.findings(), expected);
    assert_eq!(run.json()["files_scanned"], expected.len() + 1);
    // The human format reports them without a snippet and without panicking.
    let run = tree.run(&[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

/// Runs the binary in `cwd`, killing it and failing the test if it has not finished
/// within `limit`. Its output is read while it runs, so a full pipe cannot stall it.
#[cfg(unix)]
fn run_with_limit(cwd: &Path, args: &[&str], limit: std::time::Duration) -> Run {
    let child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(limit) {
        Ok(output) => Run::from(output.unwrap()),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("fenced-lint {args:?} still running after {limit:?}");
        }
    }
}

/// A named pipe called `*.sql` would block the read forever: walked, it is skipped;
/// named, it is one `unreadable-file` finding saying what it is.
#[cfg(unix)]
#[test]
fn a_named_pipe_never_hangs_the_run() {
    let tree = Tree::configured();
    tree.file("lease.sql", UNFENCED_SQL);
    let made = Command::new("mkfifo")
        .arg(tree.path("pipe.sql"))
        .status()
        .unwrap();
    assert!(made.success());
    let limit = std::time::Duration::from_secs(20);
    let walked = run_with_limit(tree.dir.path(), &["--format", "json"], limit);
    assert_eq!(
        walked.findings(),
        [finding("lease.sql", 3, Rule::UnfencedWrite)]
    );
    let named = run_with_limit(tree.dir.path(), &["--format", "json", "pipe.sql"], limit);
    assert_eq!(named.code, 1, "{named:?}");
    assert_eq!(
        named.findings(),
        [finding("pipe.sql", 1, Rule::UnreadableFile)]
    );
    let message = named.json()["findings"][0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("named pipe"), "{message}");
}

/// A one-line file of 2 MB with 38,000 findings: positions and snippets cost time in
/// the findings, not findings times the line's length (which took minutes).
#[cfg(unix)]
#[test]
fn many_findings_on_one_long_line_are_linear() {
    let tree = Tree::configured();
    let statement = "UPDATE dbo.{T} SET Payload = 1 WHERE ReportId = 1; ";
    let n = 2_000_000 / statement.len();
    tree.file("one.sql", &statement.repeat(n));
    let limit = std::time::Duration::from_secs(90);
    let run = run_with_limit(tree.dir.path(), &["one.sql"], limit);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let summary = format!("fenced-lint: {n} errors in 1 file (statements checked: {n})\n");
    assert!(
        run.stdout.ends_with(&summary),
        "{}",
        &run.stdout[run.stdout.len().saturating_sub(200)..]
    );
    // Each snippet shows a window of the line, not the line.
    assert!(run.stdout.len() < n * 1_000, "{} bytes", run.stdout.len());
}

/// `--format github`: one workflow command per finding, pointing at the statement.
#[test]
fn github_format_writes_one_annotation_per_finding() {
    let tree = Tree::configured();
    tree.file("sql/fix#1.sql", UNFENCED_SQL);
    let run = tree.run(&["--format", "github"]);
    assert_eq!(run.code, 1, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(
        lines[0].starts_with(
            "::error file=sql/fix#1.sql,line=3,col=1,endLine=6,endColumn=30,title=FL001 unfenced-write::write to fenced table"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("%0Ahelp: add `AND LeaseOwner = @owner"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let tree = Tree::configured();
    // Enough findings to fill any pipe buffer, so the write must meet the closed pipe.
    for i in 0..400 {
        tree.file(&format!("many/p{i:03}.sql"), UNFENCED_SQL);
    }
    let mut child = Command::new(BIN)
        .current_dir(tree.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.stderr.is_empty());
    // Negative control: read to the end, the same run reports its findings.
    assert_eq!(tree.run(&[]).code, 1);
}

#[test]
fn output_is_sorted_and_reproducible() {
    let tree = Tree::configured();
    for name in ["b.sql", "a/z.sql", "a/b.sql", "c.rs"] {
        if name.ends_with(".rs") {
            tree.file(name, UNFENCED_RS);
        } else {
            tree.file(name, &format!("{UNFENCED_SQL}{UNFENCED_SQL}"));
        }
    }
    let first = tree.run(&["--format", "json"]);
    for _ in 0..3 {
        assert_eq!(tree.run(&["--format", "json"]).stdout, first.stdout);
    }
    let found = first.findings();
    let mut sorted = found.clone();
    sorted.sort();
    assert_eq!(found, sorted);
    assert_eq!(found.len(), 7);
}

#[test]
fn explain_prints_a_rule_by_name_or_code() {
    let tree = Tree::new();
    for rule in Rule::ALL {
        for key in [rule.name(), rule.code()] {
            let run = tree.run(&["explain", key]);
            assert_eq!(run.code, 0, "{key}: {run:?}");
            assert!(run.stdout.contains(rule.name()), "{key}");
            assert!(
                run.stdout.len() > rule.summary().len(),
                "{key}: {}",
                run.stdout
            );
        }
    }
    let run = tree.run(&["explain", "unfenced-write"]);
    for heading in ["What it does", "Why is this bad?", "Example", "Use instead"] {
        assert!(run.stdout.contains(heading), "{heading}: {}", run.stdout);
    }
}

#[test]
fn explain_of_an_unknown_rule_exits_2_listing_the_rules() {
    let run = Tree::new().run(&["explain", "require-fence"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("require-fence"), "{}", run.stderr);
    for rule in Rule::ALL {
        assert!(run.stderr.contains(rule.name()), "{}", rule.name());
    }
    let run = Tree::new().run(&["explain"]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout.lines().count(), Rule::ALL.len());
}

#[test]
fn the_readme_documents_every_rule() {
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for rule in Rule::ALL {
        let row = format!(
            "| {} | `{}` | {} |",
            rule.code(),
            rule.name(),
            rule.severity()
        );
        assert!(readme.contains(&row), "README.md lacks the row `{row}`");
    }
}

/// A tree with one finding of several rules, in both languages and encodings, for the
/// snapshots of real runs.
fn mixed_tree() -> Tree {
    let tree = Tree::configured();
    tree.file("sql/lease.sql", CLEAN_SQL)
        .file("sql/publish.sql", UNFENCED_SQL)
        .file("src/store.rs", UNFENCED_RS)
        .file(
            "sql/cleanup.sql",
            "-- fenced-lint: allow(fenced-row-delete)\nDELETE FROM {T} WHERE ReportId = @reportId;\n\n-- fenced-lint: allow(unfenced-write) nothing here writes\nSELECT 1;\n",
        )
        .bytes("sql/latin1.sql", b"SELECT 'Fran\xe7ois';\n");
    tree
}

#[test]
fn snapshot_of_a_real_run_human() {
    let run = mixed_tree().run(&[]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn snapshot_of_a_real_run_json() {
    let run = mixed_tree().run(&["--format", "json"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn snapshot_of_a_real_run_sarif_results() {
    let run = mixed_tree().run(&["--format", "sarif"]);
    assert_eq!(run.code, 1);
    let log = run.json();
    assert_eq!(log["version"], "2.1.0");
    assert_eq!(log["runs"][0]["tool"]["driver"]["name"], "fenced-lint");
    // The rule descriptors are pinned by the reporter snapshot; here, the results.
    insta::assert_snapshot!(serde_json::to_string_pretty(&log["runs"][0]["results"]).unwrap());
}
