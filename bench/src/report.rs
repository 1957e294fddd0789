//! The results as Markdown tables, ready to paste into `BENCHMARKS.md`.

use std::fmt::Write as _;

use crate::check::Check;
use crate::sqlite::Execution;
use crate::suite::{Comparison, Kind, Results, Settings, SideNames, kind_label, sign_test};
use crate::workload::Rows;

/// Renders the results: the machine and settings, guard against raw, fused against
/// three-statement, and the connection and statement checks.
pub(crate) fn markdown(settings: &Settings, results: &Results) -> String {
    let mut out = String::new();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let _ = writeln!(
        out,
        "- Machine: {cores} cores. Each figure is the median of {} runs of {:.1} s (after {:.1} s of warm-up), alternating which side runs first. A ratio is the ratio of the two sides' medians; *pairs* gives the lowest and highest ratio of one repeat's two runs, made one right after the other, for the spread; *target* says whether the ratio meets the target, and in how many pairs the pair's own ratio does (met or missed in every pair: beyond this run's spread; otherwise within it), and *p*, the two-sided sign test of the pairs against the target: how often as many pairs or more would fall on one side by chance alone, were a pair as likely to fall under the target as to reach it (under 0.05 the pairs decide the target; five pairs cannot go under 0.0625).",
        settings.repeats,
        settings.measured.as_secs_f64(),
        settings.warmup.as_secs_f64()
    );
    if results.control {
        let _ = writeln!(
            out,
            "- **Control run** (`--control`): the second side of every comparison ran the first side's code again (the guard's three-statement cycle, or its fused cycle), alternated and summarised as in a real run. Every true ratio here is 1, so its distance from 1 is this machine's noise; a target marked missed is missed by noise alone."
        );
    }
    if let Some(v) = &results.postgres_version {
        let commit = if settings.durable {
            "synchronous_commit on"
        } else {
            "synchronous_commit off for the benchmark's sessions"
        };
        let _ = writeln!(out, "- PostgreSQL {v}, {commit}.");
    }
    if let (Some(v), Some(dir)) = (&results.sqlite_version, &settings.sqlite) {
        let modes: Vec<String> = settings
            .sqlite_executions
            .iter()
            .map(|&e| format!("{} ({})", e.label(), execution_detail(e)))
            .collect();
        let own_runs = if results.control {
            ""
        } else {
            ", each with its own raw runs"
        };
        let _ = writeln!(
            out,
            "- SQLite {v} (bundled), WAL, synchronous FULL (the default), busy timeout 5 s, file under {}. The guard ran in each of these execution modes{own_runs}: {}.",
            dir.display(),
            modes.join("; ")
        );
    }

    let against = if results.control {
        "the guard again"
    } else {
        "raw driver"
    };
    let _ = writeln!(
        out,
        "\n### Guard against {against} (acquire, publish, release)\n"
    );
    let _ = writeln!(
        out,
        "| database | rows | workers | {} |",
        figure_headers(results.side_names(Kind::GuardVsRaw(Rows::Distinct)))
    );
    let _ = writeln!(
        out,
        "|---|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|"
    );
    for c in results
        .comparisons
        .iter()
        .filter(|c| matches!(c.kind, Kind::GuardVsRaw(_)))
    {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            c.database.label(),
            kind_label(c.kind),
            c.workers,
            figures(c)
        );
    }

    let _ = writeln!(
        out,
        "\n### Contended row: refused acquisitions per completed cycle\n"
    );
    let _ = writeln!(
        out,
        "On one row, throughput is set by how many attempts are refused while another worker holds the row, and so by how long a holder is kept from finishing its cycle (descheduled by the OS, for a thread of its own; by tokio, for a task), more than by what one statement costs.\n"
    );
    let names = results.side_names(Kind::GuardVsRaw(Rows::Contended));
    let _ = writeln!(
        out,
        "| database | workers | {} refused/cycle | {} refused/cycle |",
        names.a, names.b
    );
    let _ = writeln!(out, "|---|--:|--:|--:|");
    for c in results
        .comparisons
        .iter()
        .filter(|c| c.kind == Kind::GuardVsRaw(Rows::Contended))
    {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} |",
            c.database.label(),
            c.workers,
            c.a.refused_per_cycle,
            c.b.refused_per_cycle
        );
    }

    let _ = writeln!(
        out,
        "\n### Fused cycle (acquire, publish-and-release) against the article's three statements, through the guard, distinct rows\n"
    );
    let _ = writeln!(
        out,
        "| database | workers | {} |",
        figure_headers(results.side_names(Kind::FusedVsThree))
    );
    let _ = writeln!(
        out,
        "|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|"
    );
    for c in results
        .comparisons
        .iter()
        .filter(|c| c.kind == Kind::FusedVsThree)
    {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            c.database.label(),
            c.workers,
            figures(c)
        );
    }

    let _ = writeln!(
        out,
        "\n### Connections and prepared statements (worst over the repeats)\n"
    );
    let _ = writeln!(
        out,
        "| database | comparison | workers | side | connections at window start / end | opened during the window | prepared statements per connection | executions per prepared statement | only the rendered SQL |"
    );
    let _ = writeln!(out, "|---|---|--:|---|--:|--:|--:|--:|---|");
    for c in &results.comparisons {
        let names = results.side_names(c.kind);
        let (a, b) = match c.kind {
            Kind::GuardVsRaw(_) => (names.a.to_owned(), names.b.to_owned()),
            Kind::FusedVsThree => (format!("guard {}", names.a), format!("guard {}", names.b)),
        };
        for (side, check) in [(&a, &c.a_check), (&b, &c.b_check)] {
            if let Some(check) = check {
                let _ = writeln!(out, "{}", check_row(c, side, check));
            }
        }
    }
    out
}

/// Where an execution mode runs the guard's statements, for the header.
fn execution_detail(execution: Execution) -> &'static str {
    match execution {
        Execution::InPlace => "each statement on the runtime thread that awaits it",
        Execution::HandOff => {
            "each statement inside `tokio::task::block_in_place`, the guard's default"
        }
    }
}

fn check_row(c: &Comparison, side: &str, check: &Check) -> String {
    let (prepared, executions) = match check.prepared {
        Some(p) if p.min_per_connection == p.max_per_connection => (
            p.min_per_connection.to_string(),
            format!("{:.0}", p.executions_per_statement),
        ),
        Some(p) => (
            format!("{}–{}", p.min_per_connection, p.max_per_connection),
            format!("{:.0}", p.executions_per_statement),
        ),
        None => ("not observable".to_owned(), "–".to_owned()),
    };
    let same_sql = match check.same_sql {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "–",
    };
    format!(
        "| {} | {} | {} | {} | {} / {} | {} | {} | {} | {same_sql} |",
        c.database.label(),
        kind_label(c.kind),
        c.workers,
        side,
        check.connections_at_start,
        check.connections_at_end,
        check.opened_during,
        prepared,
        executions
    )
}

/// Whether the ratio meets its target, and in how many of the repeats' pairs the pair's
/// own ratio does: a target met by the ratio but not in every pair, or missed by it but
/// not in every pair, lies within this run's spread.
fn verdict(c: &Comparison) -> String {
    let target = c.target();
    let ratio = c.ratio();
    let mark = if ratio.is_nan() {
        "no data"
    } else if ratio >= target {
        "met"
    } else {
        "missed"
    };
    match c.pairs_reaching(target) {
        (_, 0) => format!("≥ {target} {mark}"),
        (reaching, pairs) => {
            let p = sign_test(reaching, pairs);
            format!("≥ {target} {mark}, in {reaching} of {pairs} pairs (p {p:.2})")
        }
    }
}

/// The lowest and highest ratio of one repeat's pair of runs, or a dash.
fn pairs(c: &Comparison) -> String {
    match c.pair_range() {
        Some((low, high)) => format!("{low:.2}–{high:.2}"),
        None => "–".to_owned(),
    }
}

/// The headers of the cells [`figures`] prints, for sides named `names`.
fn figure_headers(names: SideNames) -> String {
    let SideNames { a, b } = names;
    format!(
        "{a} cycles/s | {b} cycles/s | {a}/{b} | pairs | target | {a} CPU µs/cycle | {b} CPU µs/cycle | {b}/{a} CPU | {a} p50 ms | {a} p99 ms | {b} p50 ms | {b} p99 ms"
    )
}

/// The cells both comparison tables share, in their column order: throughput of each
/// side, their ratio and its spread over the repeats' pairs, the verdict, CPU per cycle
/// of each side and their ratio, and p50/p99 latency of each side.
fn figures(c: &Comparison) -> String {
    format!(
        "{:.0} | {:.0} | {:.3} | {} | {} | {:.1} | {:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3}",
        c.a.cycles_per_sec,
        c.b.cycles_per_sec,
        c.ratio(),
        pairs(c),
        verdict(c),
        c.a.cpu_us_per_cycle,
        c.b.cpu_us_per_cycle,
        c.cpu_ratio(),
        c.a.p50_ms,
        c.a.p99_ms,
        c.b.p50_ms,
        c.b.p99_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fused-against-three comparison (target 1.4) whose sides' medians give `ratio`.
    fn fused(ratio: f64, pair_ratios: Vec<f64>) -> Comparison {
        let mut c = Comparison::of_pairs(pair_ratios);
        c.a.cycles_per_sec = ratio;
        c
    }

    #[test]
    fn the_verdict_says_in_how_many_pairs_the_target_held() {
        assert_eq!(
            verdict(&fused(1.5, vec![1.45, 1.5, 1.6])),
            "≥ 1.4 met, in 3 of 3 pairs (p 0.25)"
        );
        assert_eq!(
            verdict(&fused(1.42, vec![1.3, 1.42, 1.5])),
            "≥ 1.4 met, in 2 of 3 pairs (p 1.00)"
        );
        assert_eq!(
            verdict(&fused(1.38, vec![1.3, 1.38, 1.45])),
            "≥ 1.4 missed, in 1 of 3 pairs (p 1.00)"
        );
        assert_eq!(
            verdict(&fused(1.2, vec![1.1, 1.2, f64::NAN])),
            "≥ 1.4 missed, in 0 of 2 pairs (p 0.50)"
        );
    }

    #[test]
    fn a_verdict_without_pairs_names_no_count() {
        assert_eq!(verdict(&fused(1.5, Vec::new())), "≥ 1.4 met");
        assert_eq!(verdict(&fused(f64::NAN, Vec::new())), "≥ 1.4 no data");
    }
}
