//! The lint against ripgrep over the largest real corpus, with its written tables fenced.
//!
//! `cargo bench -p fenced-lint --bench corpus` unpacks `../shared/corpora/real-sql.tar.gz`
//! (or the one in the directory `FENCED_LINT_CORPORA` names) into a temporary directory,
//! picks the corpus with the most bytes of `.sql` and `.rs`, declares fenced every table
//! the independent counter of `tests/support/count.rs` finds written there (as the
//! real-corpus check does), and times, alternately, `FENCED_BENCH_RUNS` times (default
//! 9):
//!
//! - `fenced-lint --format json .` (the release binary, output discarded);
//! - `rg --count-matches -i 'update|delete|merge' -g '*.sql' -g '*.rs' .` when `rg` is
//!   on the `PATH`; otherwise the same count in this process (the `ignore` crate's
//!   parallel walk, as ripgrep's, and a search of each file lower-cased), which is
//!   printed as such;
//! - the lint with no table fenced, for scale.
//!
//! It prints the median of each and the median of the per-round ratios lint / ripgrep.
//! `FENCED_BENCH_KEEP_CONFIG=FILE` keeps a copy of the configuration, for profiling.
//! Timings are printed, never asserted.

#[allow(dead_code)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::count;

const BIN: &str = env!("CARGO_BIN_EXE_fenced-lint");

fn main() {
    let dir = std::env::var_os("FENCED_LINT_CORPORA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora"),
        PathBuf::from,
    );
    let archive = dir.join("real-sql.tar.gz");
    if !archive.is_file() {
        eprintln!(
            "corpus bench: {} not found, nothing measured",
            archive.display()
        );
        return;
    }
    let runs: usize = std::env::var("FENCED_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9);
    let temp = tempfile::tempdir().expect("a temporary directory");
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(temp.path())
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar failed");

    let (corpus, bytes) = std::fs::read_dir(temp.path())
        .expect("the unpacked archive")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let bytes: u64 = count::files(&p)
                .iter()
                .map(|f| f.metadata().map_or(0, |m| m.len()))
                .sum();
            (p, bytes)
        })
        .max_by_key(|(_, bytes)| *bytes)
        .expect("a corpus");
    let survey = count::survey(&corpus);
    let fenced = temp.path().join("fenced.toml");
    std::fs::write(&fenced, count::config(&survey.tables)).expect("config written");
    if let Some(keep) = std::env::var_os("FENCED_BENCH_KEEP_CONFIG") {
        // For profiling the same run outside the benchmark.
        std::fs::copy(&fenced, keep).expect("config copied");
    }
    let empty = temp.path().join("empty.toml");
    std::fs::write(&empty, "").expect("config written");
    let rg = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    println!(
        "corpus `{}`: {} files, {:.1} MB of .sql/.rs, {} writes counted, {} tables fenced; baseline: {}",
        corpus.file_name().unwrap_or_default().to_string_lossy(),
        survey.files,
        bytes as f64 / 1e6,
        survey.writes.len(),
        survey.tables.len(),
        if rg {
            "rg (ripgrep) on the PATH"
        } else {
            "in-process count (rg not found)"
        }
    );

    let lint = |config: &Path| {
        time(|| {
            let status = Command::new(BIN)
                .arg("--config")
                .arg(config)
                .args(["--format", "json", "."])
                .current_dir(&corpus)
                .stdout(Stdio::null())
                .status()
                .expect("fenced-lint runs");
            assert!(
                matches!(status.code(), Some(0 | 1)),
                "fenced-lint: {status}"
            );
        })
    };
    let grep = || {
        time(|| {
            if rg {
                let status = Command::new("rg")
                    .args(["--count-matches", "-i", "update|delete|merge"])
                    .args(["-g", "*.sql", "-g", "*.rs", "."])
                    .current_dir(&corpus)
                    .stdout(Stdio::null())
                    .status()
                    .expect("rg runs");
                assert!(matches!(status.code(), Some(0 | 1)), "rg: {status}");
            } else {
                std::hint::black_box(count_in_process(&corpus));
            }
        })
    };

    let (mut fenced_times, mut grep_times, mut empty_times, mut ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // One untimed round warms the page cache for all three.
    lint(&fenced);
    grep();
    lint(&empty);
    for _ in 0..runs {
        let f = lint(&fenced);
        let g = grep();
        let e = lint(&empty);
        ratios.push(f.as_secs_f64() / g.as_secs_f64());
        fenced_times.push(f);
        grep_times.push(g);
        empty_times.push(e);
    }
    let ms = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    ratios.sort_by(f64::total_cmp);
    println!(
        "ripgrep-like count   (median of {runs}): {:8.1} ms",
        ms(grep_times)
    );
    println!(
        "lint, tables fenced  (median of {runs}): {:8.1} ms",
        ms(fenced_times)
    );
    println!(
        "lint, nothing fenced (median of {runs}): {:8.1} ms",
        ms(empty_times)
    );
    println!(
        "lint (fenced) / ripgrep: median ratio {:.2} (range {:.2}-{:.2}); the target is within 2",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
}

fn time(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

/// Occurrences of `update`, `delete` and `merge`, in any case, in the `.sql` and `.rs`
/// files under `root`, walked in parallel as ripgrep walks.
fn count_in_process(root: &Path) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let total = AtomicUsize::new(0);
    let finders: Vec<memchr::memmem::Finder<'static>> = ["update", "delete", "merge"]
        .iter()
        .map(|w| memchr::memmem::Finder::new(w.as_bytes()))
        .collect();
    let mut types = ignore::types::TypesBuilder::new();
    types.add("src", "*.sql").expect("a glob");
    types.add("src", "*.rs").expect("a glob");
    types.select("src");
    ignore::WalkBuilder::new(root)
        .types(types.build().expect("file types"))
        .build_parallel()
        .run(|| {
            let total = &total;
            let finders = &finders;
            let mut lower = Vec::new();
            Box::new(move |entry| {
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                    && let Ok(bytes) = std::fs::read(entry.path())
                {
                    lower.clear();
                    lower.extend(bytes.iter().map(u8::to_ascii_lowercase));
                    let n: usize = finders.iter().map(|f| f.find_iter(&lower).count()).sum();
                    total.fetch_add(n, Ordering::Relaxed);
                }
                ignore::WalkState::Continue
            })
        });
    total.into_inner()
}
