//! The harness runs end to end on the real databases (PostgreSQL at `FENCED_PG_URL` or
//! the default, and a SQLite file in each of the guard's execution modes) with tiny
//! windows, and produces every table row and a well-formed chart. Figures are never
//! asserted.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fenced-bench");

/// Checks that `text` is well-formed XML as far as an SVG written by hand needs: every
/// element closed in order, one root `svg` element, attribute values quoted, and no bare
/// `<` or `&` in text. Returns the names of the elements seen, in order.
fn well_formed_svg(text: &str) -> Result<Vec<String>, String> {
    let mut open: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = text.trim();
    let mut roots = 0;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            check_text(rest)?;
            break;
        };
        check_text(&rest[..lt])?;
        if open.is_empty() && !rest[..lt].trim().is_empty() {
            return Err("text outside the root element".into());
        }
        let gt = rest[lt..]
            .find('>')
            .map(|i| lt + i)
            .ok_or("unterminated tag")?;
        let tag = &rest[lt + 1..gt];
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(top) if top == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else {
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body
                .split_whitespace()
                .next()
                .ok_or("empty tag")?
                .to_owned();
            if !body.matches('"').count().is_multiple_of(2) {
                return Err(format!("unbalanced quotes in <{name}>"));
            }
            if open.is_empty() {
                roots += 1;
                if name != "svg" || roots > 1 {
                    return Err(format!("root element <{name}>, expected one <svg>"));
                }
            }
            seen.push(name.clone());
            if !self_closing {
                open.push(name);
            }
        }
        rest = &rest[gt + 1..];
    }
    if let Some(unclosed) = open.pop() {
        return Err(format!("<{unclosed}> is never closed"));
    }
    if roots != 1 {
        return Err("no <svg> root".into());
    }
    Ok(seen)
}

fn check_text(text: &str) -> Result<(), String> {
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..];
        if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
            .iter()
            .any(|e| entity.starts_with(e))
        {
            return Err(format!("bare & in {text:?}"));
        }
    }
    Ok(())
}

#[test]
fn the_svg_checker_rejects_what_is_not_well_formed() {
    let good = r#"<svg a="1"><g><text x="1">a &amp; b</text><line/></g></svg>"#;
    assert_eq!(
        well_formed_svg(good).unwrap(),
        vec!["svg", "g", "text", "line"]
    );
    for bad in [
        r#"<svg><g></svg>"#,
        r#"<svg><g></g>"#,
        r#"<svg><text>a & b</text></svg>"#,
        r#"<svg a="1><line/></svg>"#,
        r#"<svg></svg><svg></svg>"#,
        r#"<html></html>"#,
        r#"<svg><line"#,
    ] {
        assert!(well_formed_svg(bad).is_err(), "accepted {bad}");
    }
}

fn run(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the benchmark binary runs")
}

/// Runs the benchmark with tiny windows, worker counts 1 and 3, the SQLite file in `dir`
/// and the chart to `svg`, plus `extra`; checks that it succeeded and returns its
/// standard output.
fn tiny_run(dir: &Path, extra: &[&str], svg: &Path) -> String {
    let mut args = vec![
        "--quick",
        "--seconds",
        "0.05",
        "--warmup",
        "0.05",
        "--workers",
        "1,3",
        "--sqlite-dir",
        dir.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = run(&args, dir);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The databases of a run in every mode, as the tables and the chart name them.
const ALL_DATABASES: [&str; 3] = ["PostgreSQL", "SQLite, in place", "SQLite, hand-off"];

/// The text from the heading that starts with `heading` to the next heading.
fn section<'a>(stdout: &'a str, heading: &str) -> &'a str {
    let start = stdout
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading} in\n{stdout}"));
    let rest = &stdout[start + heading.len()..];
    &rest[..rest.find("\n### ").unwrap_or(rest.len())]
}

/// Checks that `stdout` has every table row of `database` for worker counts 1 and 3.
fn assert_every_row(stdout: &str, database: &str) {
    for workers in [1, 3] {
        for rows in ["distinct", "contended"] {
            let row = format!("| {database} | {rows} | {workers} | ");
            assert!(stdout.contains(&row), "missing {row}\n{stdout}");
        }
        // The fused table and the contended row's refusals share their first columns:
        // look for each row in its own section.
        let short = format!("| {database} | {workers} | ");
        for heading in ["### Fused cycle", "### Contended row"] {
            assert!(
                section(stdout, heading).contains(&short),
                "missing {short} under {heading}\n{stdout}"
            );
        }
        for (comparison, side) in [
            ("distinct", "guard"),
            ("distinct", "raw"),
            ("contended", "guard"),
            ("contended", "raw"),
            ("fused vs three-statement", "guard fused"),
            ("fused vs three-statement", "guard three"),
        ] {
            let check = format!("| {database} | {comparison} | {workers} | {side} | ");
            assert!(stdout.contains(&check), "missing {check}\n{stdout}");
        }
    }
}

/// The line of the header that describes SQLite.
fn sqlite_header(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("- SQLite "))
        .unwrap_or_else(|| panic!("no SQLite header line\n{stdout}"))
}

#[test]
fn a_quick_run_prints_every_row_and_draws_a_well_formed_chart() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("chart.svg");
    let markdown = dir.path().join("tables.md");
    let stdout = tiny_run(
        dir.path(),
        &["--markdown", markdown.to_str().unwrap()],
        &svg,
    );
    assert_eq!(std::fs::read_to_string(&markdown).unwrap(), stdout);

    for database in ALL_DATABASES {
        assert_every_row(&stdout, database);
    }
    let header = sqlite_header(&stdout);
    assert!(
        header.contains("in place (") && header.contains("hand-off ("),
        "{header}"
    );
    // Statements are prepared once per connection: on PostgreSQL, never more prepared
    // statements on one connection than the cycle has statements, and only the
    // statements rendered by the guard's dialect, on both sides.
    for line in stdout.lines().filter(|l| l.starts_with("| PostgreSQL | ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // The connections table: 9 columns.
        if cells.len() == 11 {
            assert_eq!(cells[9], "yes", "{line}");
            let most: usize = cells[7]
                .rsplit('–')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("prepared statements cell in {line}"));
            // At most the cycle's three statements, and the guard's read of a row it
            // could not acquire.
            assert!((1..=4).contains(&most), "{line}");
        }
    }

    let chart = std::fs::read_to_string(&svg).unwrap();
    let elements = well_formed_svg(&chart).unwrap_or_else(|e| panic!("{e}\n{chart}"));
    // Three panels (PostgreSQL, SQLite in each mode), each with four lines: distinct
    // and contended, guard and raw.
    assert_eq!(elements.iter().filter(|e| *e == "polyline").count(), 12);
    for database in ALL_DATABASES {
        assert!(
            chart.contains(&format!(">{database}<")),
            "{database}\n{chart}"
        );
    }
}

#[test]
fn one_sqlite_execution_runs_only_its_own_rows() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("chart.svg");
    let stdout = tiny_run(
        dir.path(),
        &["--no-postgres", "--sqlite-execution", "hand-off"],
        &svg,
    );
    assert_every_row(&stdout, "SQLite, hand-off");
    for absent in ["PostgreSQL", "SQLite, in place", "in place ("] {
        assert!(!stdout.contains(absent), "{absent} in\n{stdout}");
    }
    assert!(sqlite_header(&stdout).contains("hand-off ("), "{stdout}");

    let chart = std::fs::read_to_string(&svg).unwrap();
    let elements = well_formed_svg(&chart).unwrap_or_else(|e| panic!("{e}\n{chart}"));
    assert_eq!(elements.iter().filter(|e| *e == "polyline").count(), 4);
    assert!(chart.contains(">SQLite, hand-off<") && !chart.contains("in place"));
}

#[test]
fn a_control_run_says_so_and_names_its_second_side_for_what_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("chart.svg");
    let stdout = tiny_run(
        dir.path(),
        &[
            "--control",
            "--no-postgres",
            "--sqlite-execution",
            "in-place",
        ],
        &svg,
    );
    assert!(
        stdout.contains("- **Control run** (`--control`)"),
        "{stdout}"
    );
    for header in [
        "| database | rows | workers | guard cycles/s | guard again cycles/s | guard/guard again |",
        "| database | workers | guard refused/cycle | guard again refused/cycle |",
        "| database | workers | fused cycles/s | fused again cycles/s | fused/fused again |",
    ] {
        assert!(stdout.contains(header), "missing {header}\n{stdout}");
    }
    for workers in [1, 3] {
        for row in [
            format!("| SQLite, in place | distinct | {workers} | guard again | "),
            format!(
                "| SQLite, in place | fused vs three-statement | {workers} | guard fused again | "
            ),
        ] {
            assert!(stdout.contains(&row), "missing {row}\n{stdout}");
        }
    }
    // No side is called raw: none ran the raw driver.
    assert!(!stdout.contains("raw"), "{stdout}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    well_formed_svg(&chart).unwrap_or_else(|e| panic!("{e}\n{chart}"));
    assert!(chart.contains("distinct rows, guard again") && !chart.contains("raw"));
}

#[test]
fn bad_arguments_are_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--repeats", "0"][..],
        &["--seconds", "-1"],
        &["--workers", "0"],
        &["--seconds", "nan"],
        &["--sqlite-execution", "bogus"],
        &["--sqlite-execution", "in-place,blocking"],
    ] {
        let output = run(args, dir.path());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}\n{stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}\n{stderr}");
        if args[0] == "--sqlite-execution" {
            // Says what was wrong and what is accepted.
            assert!(
                stderr.contains("--sqlite-execution") && stderr.contains("in-place, hand-off"),
                "{stderr}"
            );
        }
    }
}

#[test]
fn a_quick_stamp_run_prints_a_row_per_worker_count() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("stamp.md");
    let output = run(
        &[
            "stamp",
            "--quick",
            "--workers",
            "1,2",
            "--markdown",
            markdown.to_str().unwrap(),
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(std::fs::read_to_string(&markdown).unwrap(), stdout);
    assert!(
        stdout.contains("| workers | stamped writes/s | unstamped writes/s | stamped/unstamped |"),
        "{stdout}"
    );
    for workers in [1, 2] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {workers} | ")))
            .unwrap_or_else(|| panic!("no row for {workers} workers:\n{stdout}"));
        // Ten cells, every figure a number.
        let cells: Vec<&str> = row
            .split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(cells.len(), 10, "{row}");
        for cell in [cells[1], cells[2], cells[3]] {
            assert!(cell.parse::<f64>().is_ok_and(f64::is_finite), "{row}");
        }
    }
    assert!(
        stdout.contains("| stamped µs/evaluation | unstamped µs/evaluation | difference µs |"),
        "{stdout}"
    );
    let control = run(
        &["stamp", "--quick", "--control", "--workers", "1"],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&control.stdout);
    assert!(control.status.success(), "{stdout}");
    assert!(
        stdout.contains("| workers | unstamped writes/s | unstamped again writes/s |"),
        "{stdout}"
    );
    let bad = run(&["stamp", "--repeats", "0"], dir.path());
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_quick_paths_run_prints_a_row_per_path_database_and_worker_count() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("paths.md");
    let output = run(
        &[
            "paths",
            "--quick",
            "--workers",
            "1,2",
            "--markdown",
            markdown.to_str().unwrap(),
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(std::fs::read_to_string(&markdown).unwrap(), stdout);
    let mut expected = vec![
        ("lease cycle on the caller's client", "PostgreSQL"),
        ("fenced transaction, guard's pool", "PostgreSQL"),
        ("fenced transaction, guard's pool", "SQLite, in place"),
        ("fenced transaction, guard's pool", "SQLite, hand-off"),
        ("fence in the caller's sqlx transaction", "PostgreSQL"),
        ("claim of one row", "PostgreSQL"),
    ];
    if std::env::var_os("FENCED_MSSQL_URL").is_some() {
        expected.push(("lease cycle on the caller's client", "SQL Server (TDS)"));
        expected.push(("fenced transaction, guard's pool", "SQL Server (TDS)"));
    }
    for (path, database) in expected {
        for workers in ["1", "2"] {
            let row = stdout
                .lines()
                .find(|l| {
                    let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                    cells.len() > 4
                        && cells[1].starts_with(path)
                        && cells[3] == database
                        && cells[4] == workers
                })
                .unwrap_or_else(|| panic!("no row for {path} on {database}, {workers}:\n{stdout}"));
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            // Both sides ran and completed operations: a finite ratio.
            for cell in [cells[5], cells[6], cells[7]] {
                assert!(
                    cell.parse::<f64>().is_ok_and(|v| v.is_finite() && v > 0.0),
                    "{row}"
                );
            }
        }
    }
    let control = run(
        &[
            "paths",
            "--quick",
            "--control",
            "--workers",
            "1",
            "--parts",
            "claim",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&control.stdout);
    assert!(control.status.success(), "{stdout}");
    assert!(
        stdout.contains("**control run**") && stdout.contains("| the same path again |"),
        "{stdout}"
    );
    let bad = run(&["paths", "--workers", "0"], dir.path());
    assert_eq!(bad.status.code(), Some(2));
}
