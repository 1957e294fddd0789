//! The comparisons, each measured A/B/A/B in one process so that drift on a shared
//! machine does not favour one side, and reported as the median of the repeats.

use std::path::PathBuf;
use std::time::Duration;

use crate::check::Check;
use crate::error::Result;
use crate::measure::{Summary, Timing};
use crate::postgres::Pg;
use crate::sqlite::{Execution, Lite};
use crate::workload::{Rows, Shape};

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// The measured window of each run.
    pub(crate) measured: Duration,
    /// The warm-up before each window (connections open, statements prepare).
    pub(crate) warmup: Duration,
    /// Runs of each side of each comparison.
    pub(crate) repeats: usize,
    /// Worker counts.
    pub(crate) workers: Vec<usize>,
    /// PostgreSQL connection string, or `None` to skip PostgreSQL.
    pub(crate) postgres: Option<String>,
    /// The directory of the SQLite file, or `None` to skip SQLite.
    pub(crate) sqlite: Option<PathBuf>,
    /// The guard's SQLite execution modes to measure, in order, none twice.
    pub(crate) sqlite_executions: Vec<Execution>,
    /// Whether commits wait for the disk: PostgreSQL's `synchronous_commit` left on
    /// (otherwise it is turned off for the benchmark's sessions only).
    pub(crate) durable: bool,
    /// A control run: each comparison's second side runs the first side's code again
    /// (see [`Results::control`]).
    pub(crate) control: bool,
}

/// The database of a comparison, and for SQLite how the guard runs its statements: the
/// mode decides much of the guard's cost there, so each is compared on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Database {
    /// PostgreSQL.
    Postgres,
    /// SQLite, the guard's statements run as the mode says.
    Sqlite(Execution),
}

impl Database {
    /// Its name in tables and charts.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Database::Postgres => "PostgreSQL",
            Database::Sqlite(Execution::InPlace) => "SQLite, in place",
            Database::Sqlite(Execution::HandOff) => "SQLite, hand-off",
        }
    }
}

/// What a comparison sets against what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The guard against the raw driver, three-statement cycle, on these rows.
    GuardVsRaw(Rows),
    /// The fused cycle against the three-statement cycle, both through the guard, on
    /// distinct rows.
    FusedVsThree,
}

/// One side of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Guard(Shape),
    Raw(Shape),
}

/// The result of one comparison: side `a` (the guard, or the fused cycle) and side `b`
/// (the raw driver, or the three-statement cycle).
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    pub(crate) database: Database,
    pub(crate) kind: Kind,
    pub(crate) workers: usize,
    pub(crate) a: Summary,
    pub(crate) b: Summary,
    pub(crate) a_check: Option<Check>,
    pub(crate) b_check: Option<Check>,
    /// `a`'s throughput over `b`'s in each repeat, the two runs of a repeat measured one
    /// right after the other: their spread shows how far one run's ratio strays.
    pub(crate) pair_ratios: Vec<f64>,
}

impl Comparison {
    /// `a`'s throughput over `b`'s.
    pub(crate) fn ratio(&self) -> f64 {
        self.a.cycles_per_sec / self.b.cycles_per_sec
    }

    /// The lowest and highest of [`pair_ratios`](Comparison::pair_ratios) (leaving out
    /// pairs with a side that completed no cycle), or `None` when there are none.
    pub(crate) fn pair_range(&self) -> Option<(f64, f64)> {
        self.pair_ratios
            .iter()
            .copied()
            .filter(|r| r.is_finite())
            .fold(None, |range, r| match range {
                None => Some((r, r)),
                Some((low, high)) => Some((low.min(r), high.max(r))),
            })
    }

    /// How many of the repeats' pairs reach `target` by their own ratio, out of how many
    /// pairs have a ratio (leaving out, as [`pair_range`](Comparison::pair_range) does,
    /// pairs with a side that completed no cycle).
    pub(crate) fn pairs_reaching(&self, target: f64) -> (usize, usize) {
        let finite = self.pair_ratios.iter().filter(|r| r.is_finite());
        let reaching = finite.clone().filter(|&&r| r >= target).count();
        (reaching, finite.count())
    }

    /// `b`'s CPU time per cycle over `a`'s: how much less this process worked per cycle
    /// on side `a` (1 means the same; for the guard, below 1 is its overhead).
    pub(crate) fn cpu_ratio(&self) -> f64 {
        self.b.cpu_us_per_cycle / self.a.cpu_us_per_cycle
    }

    /// The target ratio.
    pub(crate) fn target(&self) -> f64 {
        match (self.kind, self.database) {
            (Kind::FusedVsThree, _) => 1.4,
            (Kind::GuardVsRaw(_), Database::Postgres) => 0.95,
            (Kind::GuardVsRaw(_), Database::Sqlite(_)) => 0.9,
        }
    }

    /// For tests: the fused cycle against the three statements on PostgreSQL, one
    /// worker, both sides at one cycle per second, with these pair ratios.
    #[cfg(test)]
    pub(crate) fn of_pairs(pair_ratios: Vec<f64>) -> Comparison {
        let run = Summary {
            cycles_per_sec: 1.0,
            p50_ms: 1.0,
            p99_ms: 1.0,
            cpu_us_per_cycle: 1.0,
            refused_per_cycle: 0.0,
        };
        Comparison {
            database: Database::Postgres,
            kind: Kind::FusedVsThree,
            workers: 1,
            a: run,
            b: run,
            a_check: None,
            b_check: None,
            pair_ratios,
        }
    }
}

/// The two-sided sign test of `pairs` pairs of which `reaching` reach a target: how
/// likely, if a pair were as likely to fall under the target as to reach it, as many
/// pairs or more would fall on one side as did (twice the binomial tail of the larger
/// side, at most 1). Under 0.05, the pairs decide the target; five pairs never can
/// (all five on one side: 0.0625).
pub(crate) fn sign_test(reaching: usize, pairs: usize) -> f64 {
    let most = reaching.max(pairs - reaching);
    let pairs_f = pairs as f64;
    // C(pairs, i) / 2^pairs, summed over i = most..=pairs, built up term by term.
    let mut term = 0.5_f64.powf(pairs_f);
    let mut tail = 0.0;
    for i in 0..=pairs {
        if i >= most {
            tail += term;
        }
        term *= (pairs_f - i as f64) / (i as f64 + 1.0);
    }
    (2.0 * tail).min(1.0)
}

/// Everything a run of the suite produced.
#[derive(Clone, Debug, Default)]
pub(crate) struct Results {
    pub(crate) postgres_version: Option<String>,
    pub(crate) sqlite_version: Option<String>,
    pub(crate) comparisons: Vec<Comparison>,
    /// Whether this was a control run: both sides of every comparison ran the same
    /// code (the guard's three-statement cycle, or its fused cycle), alternated and
    /// summarised exactly as in a real run. Every true ratio is then 1, so how far the
    /// measured ratios stray from 1 is what this machine's noise alone does to a ratio.
    pub(crate) control: bool,
}

/// What the tables and the chart call the two sides of comparisons of one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SideNames {
    pub(crate) a: &'static str,
    pub(crate) b: &'static str,
}

impl Results {
    /// The names of the two sides of a comparison of `kind`: in a control run the
    /// second side is named for what it ran, the first side's code again.
    pub(crate) fn side_names(&self, kind: Kind) -> SideNames {
        match (kind, self.control) {
            (Kind::GuardVsRaw(_), false) => SideNames {
                a: "guard",
                b: "raw",
            },
            (Kind::GuardVsRaw(_), true) => SideNames {
                a: "guard",
                b: "guard again",
            },
            (Kind::FusedVsThree, false) => SideNames {
                a: "fused",
                b: "three",
            },
            (Kind::FusedVsThree, true) => SideNames {
                a: "fused",
                b: "fused again",
            },
        }
    }
}

/// Runs every comparison of `settings`, reporting progress through `progress`.
pub(crate) async fn run(settings: &Settings, progress: &mut dyn FnMut(&str)) -> Result<Results> {
    let max_workers = settings.workers.iter().copied().max().unwrap_or(1);
    let mut results = Results {
        control: settings.control,
        ..Results::default()
    };
    if let Some(config) = &settings.postgres {
        let pg = Pg::setup(config, settings.durable, max_workers).await?;
        let outcome = async {
            results.postgres_version = Some(pg.version().await?);
            let pg = &pg;
            for_each_comparison(
                settings,
                Database::Postgres,
                progress,
                &mut results,
                move |side, rows, workers, timing| async move {
                    match side {
                        Side::Guard(shape) => pg.run_guard(rows, shape, workers, timing).await,
                        Side::Raw(shape) => pg.run_raw(rows, shape, workers, timing).await,
                    }
                },
            )
            .await
        }
        .await;
        let dropped = pg.teardown().await;
        outcome?;
        dropped?;
    }
    if let Some(dir) = &settings.sqlite {
        let lite = Lite::setup(dir, max_workers).await?;
        results.sqlite_version = Some(rusqlite::version().to_owned());
        let lite = &lite;
        // The whole plan once per mode, raw runs included, on the same file: each mode's
        // ratios come from raw runs interleaved with its own, not from another mode's.
        for &execution in &settings.sqlite_executions {
            for_each_comparison(
                settings,
                Database::Sqlite(execution),
                progress,
                &mut results,
                move |side, rows, workers, timing| async move {
                    match side {
                        Side::Guard(shape) => {
                            lite.run_guard(execution, rows, shape, workers, timing)
                                .await
                        }
                        Side::Raw(shape) => lite.run_raw(rows, shape, workers, timing).await,
                    }
                },
            )
            .await?;
        }
    }
    Ok(results)
}

async fn for_each_comparison<F, Fut>(
    settings: &Settings,
    database: Database,
    progress: &mut dyn FnMut(&str),
    results: &mut Results,
    run: F,
) -> Result<()>
where
    F: Fn(Side, Rows, usize, Timing) -> Fut,
    Fut: Future<Output = Result<(Summary, crate::check::Check)>>,
{
    let mut plan = Vec::new();
    for rows in [Rows::Distinct, Rows::Contended] {
        for &workers in &settings.workers {
            plan.push((Kind::GuardVsRaw(rows), workers));
        }
    }
    for &workers in &settings.workers {
        plan.push((Kind::FusedVsThree, workers));
    }
    for (kind, workers) in plan {
        let (rows, a_side, b_side) = match kind {
            Kind::GuardVsRaw(rows) => (rows, Side::Guard(Shape::Three), Side::Raw(Shape::Three)),
            Kind::FusedVsThree => (
                Rows::Distinct,
                Side::Guard(Shape::Fused),
                Side::Guard(Shape::Three),
            ),
        };
        let b_side = if settings.control { a_side } else { b_side };
        let (mut a_runs, mut b_runs, mut a_checks, mut b_checks) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for repeat in 0..settings.repeats {
            // A/B, then B/A: neither side always runs first.
            let order = if repeat % 2 == 0 {
                [(a_side, true), (b_side, false)]
            } else {
                [(b_side, false), (a_side, true)]
            };
            for (side, is_a) in order {
                let timing = Timing {
                    warmup: settings.warmup,
                    measured: settings.measured,
                };
                let (summary, check) = run(side, rows, workers, timing).await?;
                progress(&format!(
                    "{}, {}, {} workers, {}{}: {:.0} cycles/s",
                    database.label(),
                    kind_label(kind),
                    workers,
                    side_label(side),
                    if settings.control && !is_a {
                        " again"
                    } else {
                        ""
                    },
                    summary.cycles_per_sec
                ));
                if is_a {
                    a_runs.push(summary);
                    a_checks.push(check);
                } else {
                    b_runs.push(summary);
                    b_checks.push(check);
                }
            }
        }
        let pair_ratios = a_runs
            .iter()
            .zip(&b_runs)
            .map(|(a, b)| a.cycles_per_sec / b.cycles_per_sec)
            .collect();
        results.comparisons.push(Comparison {
            database,
            kind,
            workers,
            a: Summary::median(&a_runs),
            b: Summary::median(&b_runs),
            a_check: Check::worst(&a_checks),
            b_check: Check::worst(&b_checks),
            pair_ratios,
        });
    }
    Ok(())
}

/// A label for a comparison's kind.
pub(crate) fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::GuardVsRaw(rows) => rows.label(),
        Kind::FusedVsThree => "fused vs three-statement",
    }
}

fn side_label(side: Side) -> &'static str {
    match side {
        Side::Guard(Shape::Three) => "guard",
        Side::Guard(Shape::Fused) => "guard fused",
        Side::Raw(Shape::Three) => "raw",
        Side::Raw(Shape::Fused) => "raw fused",
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::check::Check;

    /// The sides `for_each_comparison` runs, in order, for one worker count and one
    /// repeat, with or without `control`.
    async fn sides_run(control: bool) -> Vec<Side> {
        let settings = Settings {
            measured: Duration::ZERO,
            warmup: Duration::ZERO,
            repeats: 1,
            workers: vec![1],
            postgres: None,
            sqlite: None,
            sqlite_executions: Vec::new(),
            durable: false,
            control,
        };
        let ran = Mutex::new(Vec::new());
        let mut results = Results::default();
        for_each_comparison(
            &settings,
            Database::Postgres,
            &mut |_| {},
            &mut results,
            |side, _, _, _| {
                ran.lock().unwrap().push(side);
                async { Ok((comparison(Vec::new()).a, Check::default())) }
            },
        )
        .await
        .unwrap();
        assert_eq!(results.comparisons.len(), 3);
        ran.into_inner().unwrap()
    }

    #[tokio::test]
    async fn a_control_run_runs_the_first_side_on_both_sides() {
        let (guard, raw) = (Side::Guard(Shape::Three), Side::Raw(Shape::Three));
        let fused = Side::Guard(Shape::Fused);
        assert_eq!(
            sides_run(false).await,
            [guard, raw, guard, raw, fused, guard],
            "distinct, contended, then fused against three statements"
        );
        assert_eq!(
            sides_run(true).await,
            [guard, guard, guard, guard, fused, fused]
        );
    }

    #[test]
    fn a_control_run_names_its_second_side_for_what_it_ran() {
        let mut results = Results::default();
        let kinds = [Kind::GuardVsRaw(Rows::Distinct), Kind::FusedVsThree];
        let names = |results: &Results| kinds.map(|k| results.side_names(k)).map(|n| (n.a, n.b));
        assert_eq!(names(&results), [("guard", "raw"), ("fused", "three")]);
        results.control = true;
        assert_eq!(
            names(&results),
            [("guard", "guard again"), ("fused", "fused again")]
        );
    }

    fn comparison(pair_ratios: Vec<f64>) -> Comparison {
        Comparison::of_pairs(pair_ratios)
    }

    #[test]
    fn the_pair_range_spans_the_finite_ratios() {
        assert_eq!(
            comparison(vec![0.93, 1.07, 0.88, 1.0]).pair_range(),
            Some((0.88, 1.07))
        );
        // A side that completed no cycle makes its pair infinite or NaN: left out.
        assert_eq!(
            comparison(vec![f64::INFINITY, 0.9, f64::NAN, 0.95]).pair_range(),
            Some((0.9, 0.95))
        );
        assert_eq!(comparison(vec![f64::NAN]).pair_range(), None);
        assert_eq!(comparison(Vec::new()).pair_range(), None);
    }

    #[test]
    fn pairs_reaching_a_target_count_only_the_finite_ratios_at_or_above_it() {
        let c = comparison(vec![0.93, 0.95, 0.97, f64::NAN, f64::INFINITY]);
        assert_eq!(c.pairs_reaching(0.95), (2, 3));
        assert_eq!(c.pairs_reaching(0.9), (3, 3));
        assert_eq!(c.pairs_reaching(1.0), (0, 3));
        assert_eq!(comparison(Vec::new()).pairs_reaching(0.95), (0, 0));
    }

    #[test]
    fn the_sign_test_gives_the_binomial_tails() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // All five pairs on one side, either side: 2 / 32.
        assert!(close(sign_test(5, 5), 0.0625));
        assert!(close(sign_test(0, 5), 0.0625));
        // 12 or more of 15 on one side: 2 * (455 + 105 + 15 + 1) / 32768.
        assert!(close(sign_test(12, 15), 1152.0 / 32768.0));
        assert!(close(sign_test(3, 15), 1152.0 / 32768.0));
        // An even split, or a larger side of no more than half, is no evidence at all.
        assert!(close(sign_test(2, 4), 1.0));
        assert!(close(sign_test(3, 5), 1.0));
        assert!(close(sign_test(2, 5), 1.0));
        assert!(close(sign_test(1, 1), 1.0));
    }
}
