//! How much the lint costs over merely reading the tree.
//!
//! `cargo bench -p fenced-lint --bench walk` generates a deterministic tree of about
//! 40 MB (`.sql` and `.rs` files; about one file in fifty writes a fenced table) in a
//! temporary directory, then times, best of several runs, a plain parallel walk that reads
//! every file with the lint's own walker, and the whole lint (walk, read, table discovery,
//! check) over the same tree. It prints both and their ratio; the target is a ratio
//! within 2. Timings are printed, never asserted.
//!
//! `FENCED_BENCH_MB` changes the tree's size and `FENCED_BENCH_RUNS` the number of runs.

#[allow(dead_code, unreachable_pub)]
#[path = "../src/cli/walk.rs"]
mod walk;

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fenced_lint::Linter;
use fenced_lint::config::Config;
use fenced_lint::source::decode;
use rayon::prelude::*;

/// The configuration of the generated tree. The table name is written in pieces in the
/// templates below so that this file is not itself a fenced write when the repository
/// lints itself.
const CONFIG: &str = r#"
[[table]]
name = "dbo.BenchLease"
key = "LeaseId"
"#;

const SQL_PLAIN: &[&str] = &[
    "UPDATE dbo.Orders\nSET Status = @status, UpdatedAtUtc = SYSUTCDATETIME()\nWHERE OrderId = @orderId AND Status <> 'shipped';\n",
    "INSERT INTO dbo.OrderLines (OrderId, Sku, Quantity, Price)\nSELECT @orderId, s.Sku, s.Quantity, p.Price\nFROM @lines s JOIN dbo.Prices p ON p.Sku = s.Sku;\n",
    "SELECT o.OrderId, c.Name, SUM(l.Quantity * l.Price) AS Total\nFROM dbo.Orders o\nJOIN dbo.Customers c ON c.CustomerId = o.CustomerId\nJOIN dbo.OrderLines l ON l.OrderId = o.OrderId\nWHERE o.CreatedAtUtc >= @since\nGROUP BY o.OrderId, c.Name\nORDER BY Total DESC;\n",
    "CREATE PROCEDURE dbo.ArchiveOrders @before datetime2 AS\nBEGIN\n  SET NOCOUNT ON\n  DELETE TOP (1000) FROM dbo.Orders WHERE CreatedAtUtc < @before\n  UPDATE STATISTICS dbo.Orders\nEND\nGO\n",
    "MERGE dbo.Inventory AS t\nUSING (SELECT @sku AS Sku, @delta AS Delta) AS s ON t.Sku = s.Sku\nWHEN MATCHED THEN UPDATE SET Quantity = t.Quantity + s.Delta\nWHEN NOT MATCHED THEN INSERT (Sku, Quantity) VALUES (s.Sku, s.Delta);\n",
    "-- nightly maintenance: keep the audit trail short\nDELETE FROM audit_log WHERE created_at < now() - interval '90 days' RETURNING id;\n",
];

const SQL_FENCED: &[&str] = &[
    "UPDATE dbo.Bench{L}\nSET Payload = @payload\nWHERE LeaseId = @id\n  AND Generation = @generation\n  AND LeaseOwner = @owner\n  AND LeaseUntilUtc > SYSUTCDATETIME();\n",
    "UPDATE dbo.Bench{L}\nSET Generation = Generation + 1, LeaseOwner = @owner,\n    LeaseUntilUtc = DATEADD(second, @ttl, SYSUTCDATETIME())\nWHERE LeaseId = @id AND (LeaseUntilUtc IS NULL OR LeaseUntilUtc <= SYSUTCDATETIME());\n",
    "UPDATE dbo.Bench{L} SET Payload = @payload WHERE LeaseId = @id;\n",
];

const RUST_PLAIN: &str = "/// Loads an order with its lines.\npub async fn load_order(client: &Client, id: i64) -> Result<Order, Error> {\n    let row = client\n        .query_one(\"SELECT id, status, created_at FROM orders WHERE id = $1\", &[&id])\n        .await?;\n    let lines = client\n        .query(r#\"SELECT sku, quantity, price FROM order_lines WHERE order_id = $1 ORDER BY sku\"#, &[&id])\n        .await?;\n    Ok(Order::from_rows(row, lines))\n}\n\n";
const RUST_FENCED: &str = "pub async fn publish(client: &Client, lease: &Lease, payload: &str) -> Result<u64, Error> {\n    client\n        .execute(\n            \"UPDATE dbo.Bench{L} SET Payload = $1 WHERE LeaseId = $2 AND Generation = $3 AND LeaseOwner = $4 AND LeaseUntilUtc > clock_timestamp()\",\n            &[&payload, &lease.id, &lease.generation, &lease.owner],\n        )\n        .await\n}\n\n";

/// Writes the tree: `files` files of about `file_size` bytes each, in nested folders.
fn generate(root: &Path, total_bytes: usize) -> (usize, usize) {
    let file_size = 20 * 1024;
    let files = total_bytes / file_size;
    let mut written = 0;
    for i in 0..files {
        let fenced = i % 50 == 7;
        let rust = i % 3 == 0;
        let mut text = String::with_capacity(file_size + 1024);
        let mut k = i;
        while text.len() < file_size {
            k = k
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pick = k >> 33;
            if rust {
                text.push_str(RUST_PLAIN);
            } else {
                text.push_str(SQL_PLAIN[pick % SQL_PLAIN.len()]);
            }
            let _ = writeln!(text);
        }
        if fenced {
            let piece = if rust {
                RUST_FENCED
            } else {
                SQL_FENCED[(i / 50 + 2) % SQL_FENCED.len()]
            };
            text.push_str(&piece.replace("{L}", "Lease"));
        }
        let dir = root.join(format!("m{:02}/p{:02}", i % 16, (i / 16) % 8));
        fs::create_dir_all(&dir).unwrap();
        let name = format!("f{i:05}.{}", if rust { "rs" } else { "sql" });
        fs::write(dir.join(name), &text).unwrap();
        written += text.len();
    }
    (files, written)
}

/// A file as the plain walk reads it: its bytes.
type Read = walk::Input<Vec<u8>>;

fn best_of(runs: usize, mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut last = 0;
    for _ in 0..runs {
        let start = Instant::now();
        last = std::hint::black_box(f());
        best = best.min(start.elapsed());
    }
    (best, last)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run a tiny
    // tree then, so the benchmark stays compiled and working without costing CI time.
    let benching = std::env::args().any(|a| a == "--bench");
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let megabytes = if benching {
        env("FENCED_BENCH_MB", 40)
    } else {
        1
    };
    let runs = if benching {
        env("FENCED_BENCH_RUNS", 5)
    } else {
        1
    };

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let (files, bytes) = generate(&root, megabytes * 1024 * 1024);
    let config = Config::from_toml(CONFIG).unwrap();
    let roots: Vec<PathBuf> = vec![root];

    // Warm the page cache so that both measurements read from memory.
    let _ = walk::read_tree(&roots, false, |_| true, |_, bytes| std::mem::take(bytes));

    let (plain, read) = best_of(runs, || {
        walk::read_tree(&roots, false, |_| true, |_, bytes| std::mem::take(bytes))
            .iter()
            .map(|input| input.content.as_ref().map_or(0, Vec::len))
            .sum()
    });
    let (lint, findings) = best_of(runs, || {
        walk::lint_tree(&config, &roots, false, true)
            .diagnostics
            .len()
    });

    assert_eq!(read, bytes, "the plain walk read the whole tree");
    // Each fenced SQL file whose statement lacks the fence is a finding: the lint worked.
    assert!(
        findings > 0,
        "the lint found nothing in a tree with unfenced writes"
    );
    let ratio = lint.as_secs_f64() / plain.as_secs_f64();
    println!(
        "tree: {files} files, {:.1} MB; best of {runs}",
        bytes as f64 / (1024.0 * 1024.0)
    );
    println!(
        "plain walk: {:>8.1} ms  ({:.0} MB/s)",
        plain.as_secs_f64() * 1e3,
        bytes as f64 / (1024.0 * 1024.0) / plain.as_secs_f64()
    );
    println!(
        "lint:       {:>8.1} ms  ({findings} findings)",
        lint.as_secs_f64() * 1e3
    );
    println!("ratio:      {ratio:>8.2}x  (target: within 2x)");

    // Where the lint's time goes, stage by stage, over files already in memory: pass 1
    // (decode, one search for both passes, table discovery) as the walk runs it on each
    // file, then pass 2 on the files that name a fenced table and on the others.
    let inputs = walk::read_tree(&roots, false, Linter::is_candidate, |_, bytes| {
        std::mem::take(bytes)
    });
    let linter = Linter::new(&config);
    let (pass1, tables) = best_of(runs, || {
        inputs
            .par_iter()
            .map(|i| {
                decode(i.content.as_ref().unwrap())
                    .map_or(0, |text| linter.scan_text(&i.path, &text).tables.len())
            })
            .sum()
    });
    let loaded: Vec<(&Read, walk::Loaded, String)> = inputs
        .iter()
        .map(|i| {
            let bytes = i.content.clone().unwrap();
            let text = decode(&bytes).map(|t| t.into_owned()).unwrap_or_default();
            let keep = walk::Keep {
                rerun: false,
                sources: true,
            };
            (i, walk::load(&linter, &i.path, &bytes, keep), text)
        })
        .collect();
    let linter = Linter::new(&config).with_discovered(Vec::new());
    let (mentioning, others): (Vec<_>, Vec<_>) = loaded.iter().partition(|(i, _, _)| {
        i.content
            .as_ref()
            .is_ok_and(|b| b.windows(10).any(|w| w == b"BenchLease"))
    });
    let check_part = |part: &[&(&Read, walk::Loaded, String)]| {
        best_of(runs, || {
            part.par_iter()
                .map(|(i, loaded, text)| {
                    linter
                        .check_scanned(&i.path, text, &loaded.scan)
                        .statements_checked
                })
                .sum()
        })
    };
    let (check_mentioning, statements) = check_part(&mentioning);
    let (check_others, _) = check_part(&others);
    println!(
        "stages:     pass 1 {:.1} ms ({tables} tables); pass 2 of the {} files naming a fenced table {:.1} ms ({statements} statements), of the {} others {:.1} ms",
        pass1.as_secs_f64() * 1e3,
        mentioning.len(),
        check_mentioning.as_secs_f64() * 1e3,
        others.len(),
        check_others.as_secs_f64() * 1e3,
    );
}
