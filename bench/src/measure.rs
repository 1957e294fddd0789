//! Timing: workers run cycles until a deadline; only cycles that complete inside the
//! measured window count, after a warm-up that opens connections and prepares
//! statements. Latencies are kept exactly (one entry per cycle) and summarised as
//! cycles per second, p50 and p99.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long a run warms up and then measures.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    pub(crate) warmup: Duration,
    pub(crate) measured: Duration,
}

impl Timing {
    /// The window of a run whose workers start now: call once connections are made.
    pub(crate) fn start(self) -> Window {
        Window::starting_now(self.warmup, self.measured)
    }
}

/// The windows of one run: warm-up from `start` to `measure_from`, then the measured
/// window up to `until`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub(crate) measure_from: Instant,
    pub(crate) until: Instant,
}

impl Window {
    /// A window starting now: `warmup`, then `measured`.
    pub(crate) fn starting_now(warmup: Duration, measured: Duration) -> Self {
        let measure_from = Instant::now() + warmup;
        Window {
            measure_from,
            until: measure_from + measured,
        }
    }

    /// The measured length.
    pub(crate) fn measured(&self) -> Duration {
        self.until - self.measure_from
    }
}

/// What one worker saw: the latency of every cycle completed in the measured window,
/// and how many acquisitions were refused in that window (only on a contended row).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) latencies_ns: Vec<u64>,
    pub(crate) refused: u64,
}

impl Tally {
    fn record(&mut self, window: &Window, started: Instant, finished: Instant) {
        if finished >= window.measure_from && finished < window.until {
            let ns = u64::try_from((finished - started).as_nanos()).unwrap_or(u64::MAX);
            self.latencies_ns.push(ns);
        }
    }

    /// Counts a refused acquisition, if it came back inside the measured window.
    fn refuse(&mut self, window: &Window) {
        let now = Instant::now();
        if now >= window.measure_from && now < window.until {
            self.refused += 1;
        }
    }

    /// Merges another worker's tally into this one.
    pub(crate) fn merge(&mut self, other: Tally) {
        self.latencies_ns.extend(other.latencies_ns);
        self.refused += other.refused;
    }
}

/// One lease cycle, run by one worker on its key: `Ok(true)` when the cycle completed
/// (acquired, published, released), `Ok(false)` when the acquisition was refused
/// because another worker holds the row.
pub(crate) trait Cycle: Send + 'static {
    /// One attempt.
    fn attempt(&mut self, key: i64) -> impl Future<Output = Result<bool>> + Send;
}

/// One async worker: cycles on `key` until the window ends. A cycle's latency runs from
/// its first acquisition attempt to the end of its release, retrying at once when the
/// row is held.
pub(crate) async fn drive<C: Cycle>(mut cycle: C, key: i64, window: Window) -> Result<(C, Tally)> {
    let mut tally = Tally::default();
    'cycles: loop {
        let started = Instant::now();
        if started >= window.until {
            break;
        }
        while !cycle.attempt(key).await? {
            tally.refuse(&window);
            if Instant::now() >= window.until {
                break 'cycles;
            }
        }
        tally.record(&window, started, Instant::now());
    }
    Ok((cycle, tally))
}

/// One attempt of a worker whose attempts borrow what the worker keeps (a store on a
/// client of its own), for [`drive_with`].
pub(crate) trait Attempt {
    /// One attempt, as [`Cycle::attempt`].
    fn attempt(&mut self, key: i64) -> impl Future<Output = Result<bool>> + Send;
}

/// The loop of [`drive`] for an [`Attempt`].
pub(crate) async fn drive_with(
    mut attempt: impl Attempt,
    key: i64,
    window: Window,
) -> Result<Tally> {
    let mut tally = Tally::default();
    'cycles: loop {
        let started = Instant::now();
        if started >= window.until {
            break;
        }
        while !attempt.attempt(key).await? {
            tally.refuse(&window);
            if Instant::now() >= window.until {
                break 'cycles;
            }
        }
        tally.record(&window, started, Instant::now());
    }
    Ok(tally)
}

/// The same loop for a blocking worker on its own thread.
pub(crate) fn drive_blocking(
    mut attempt: impl FnMut(i64) -> Result<bool>,
    key: i64,
    window: Window,
) -> Result<Tally> {
    let mut tally = Tally::default();
    'cycles: loop {
        let started = Instant::now();
        if started >= window.until {
            break;
        }
        while !attempt(key)? {
            tally.refuse(&window);
            if Instant::now() >= window.until {
                break 'cycles;
            }
        }
        tally.record(&window, started, Instant::now());
    }
    Ok(tally)
}

/// Runs `workers` async workers, worker `i` on `key(i)`, and merges their tallies.
/// `at_measure_start` runs once the warm-up is over, `at_measure_end` once the window
/// closes (while the workers finish their last cycle), so that checks see the steady
/// state. Returns the workers' cycles for inspection, and the process's CPU time over
/// the window.
pub(crate) async fn run_async<C, S, E, SF, EF>(
    cycles: Vec<C>,
    key: impl Fn(usize) -> i64,
    window: Window,
    at_measure_start: S,
    at_measure_end: E,
) -> Result<(Vec<C>, Tally, Option<Duration>, SF::Output, EF::Output)>
where
    C: Cycle,
    S: FnOnce() -> SF,
    SF: Future,
    E: FnOnce() -> EF,
    EF: Future,
{
    let handles: Vec<_> = cycles
        .into_iter()
        .enumerate()
        .map(|(i, c)| tokio::spawn(drive(c, key(i), window)))
        .collect();
    gather(handles, window, at_measure_start, at_measure_end).await
}

/// Waits out `window` for the workers `handles` (spawned already, each returning what
/// it kept and its tally), as [`run_async`] does, and merges their tallies.
pub(crate) async fn gather<C, S, E, SF, EF>(
    handles: Vec<tokio::task::JoinHandle<Result<(C, Tally)>>>,
    window: Window,
    at_measure_start: S,
    at_measure_end: E,
) -> Result<(Vec<C>, Tally, Option<Duration>, SF::Output, EF::Output)>
where
    S: FnOnce() -> SF,
    SF: Future,
    E: FnOnce() -> EF,
    EF: Future,
{
    tokio::time::sleep_until(window.measure_from.into()).await;
    let cpu_start = process_cpu();
    let started = at_measure_start().await;
    tokio::time::sleep_until(window.until.into()).await;
    let cpu = cpu_between(cpu_start, process_cpu());
    let ended = at_measure_end().await;
    let mut tally = Tally::default();
    let mut back = Vec::with_capacity(handles.len());
    let mut first_error = None;
    for handle in handles {
        match handle.await {
            Ok(Ok((c, t))) => {
                back.push(c);
                tally.merge(t);
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(Error::Worker);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok((back, tally, cpu, started, ended)),
    }
}

/// CPU time this process has used so far, all threads together (including threads that
/// already ended), from `/proc/self/stat`; `None` where that is not available.
pub(crate) fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces:
    // state is field 3, utime field 14 and stime field 15, in clock ticks (USER_HZ,
    // 100 per second on Linux).
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// The CPU time used between two readings of [`process_cpu`].
pub(crate) fn cpu_between(start: Option<Duration>, end: Option<Duration>) -> Option<Duration> {
    end?.checked_sub(start?)
}

/// A summary of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Summary {
    /// Completed cycles per second of the measured window.
    pub(crate) cycles_per_sec: f64,
    /// Median cycle latency, in milliseconds.
    pub(crate) p50_ms: f64,
    /// 99th percentile cycle latency, in milliseconds.
    pub(crate) p99_ms: f64,
    /// This process's CPU time per completed cycle, in microseconds (NaN when not
    /// measured): the client's whole cost, less sensitive than wall time to other
    /// processes on the machine.
    pub(crate) cpu_us_per_cycle: f64,
    /// Refused acquisitions per completed cycle in the measured window: the attempts a
    /// contended row wastes (0 on distinct rows; NaN without a completed cycle).
    pub(crate) refused_per_cycle: f64,
}

impl Summary {
    /// Summarises a tally over a measured window of `measured`, during which the
    /// process used `cpu`.
    pub(crate) fn of(mut tally: Tally, measured: Duration, cpu: Option<Duration>) -> Self {
        tally.latencies_ns.sort_unstable();
        let n = tally.latencies_ns.len();
        Summary {
            cycles_per_sec: n as f64 / measured.as_secs_f64(),
            p50_ms: percentile(&tally.latencies_ns, 0.50),
            p99_ms: percentile(&tally.latencies_ns, 0.99),
            cpu_us_per_cycle: match cpu {
                Some(cpu) if n > 0 => cpu.as_secs_f64() * 1e6 / n as f64,
                _ => f64::NAN,
            },
            refused_per_cycle: if n > 0 {
                tally.refused as f64 / n as f64
            } else {
                f64::NAN
            },
        }
    }

    /// The median of each figure over several runs (each figure on its own).
    pub(crate) fn median(runs: &[Summary]) -> Summary {
        Summary {
            cycles_per_sec: median(runs.iter().map(|s| s.cycles_per_sec)),
            p50_ms: median(runs.iter().map(|s| s.p50_ms)),
            p99_ms: median(runs.iter().map(|s| s.p99_ms)),
            cpu_us_per_cycle: median(runs.iter().map(|s| s.cpu_us_per_cycle)),
            refused_per_cycle: median(runs.iter().map(|s| s.refused_per_cycle)),
        }
    }
}

/// `v` with `decimals` decimals for a table, or "–" where it was not measured (NaN).
pub(crate) fn figure(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        "–".into()
    } else {
        format!("{v:.decimals$}")
    }
}

/// The nearest-rank percentile `q` of sorted nanoseconds, in milliseconds; NaN when
/// there are none.
fn percentile(sorted_ns: &[u64], q: f64) -> f64 {
    if sorted_ns.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted_ns.len() as f64).ceil() as usize;
    let index = rank.clamp(1, sorted_ns.len()) - 1;
    sorted_ns[index] as f64 / 1e6
}

/// The median of some figures (the mean of the middle two for an even count); NaN
/// when there are none.
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if !v.len().is_multiple_of(2) {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let ns: Vec<u64> = (1..=100).map(|i| i * 1_000_000).collect();
        assert_eq!(percentile(&ns, 0.50), 50.0);
        assert_eq!(percentile(&ns, 0.99), 99.0);
        assert_eq!(percentile(&ns[..1], 0.99), 1.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn a_figure_not_measured_reads_as_a_dash() {
        assert_eq!(figure(f64::NAN, 1), "–");
        assert_eq!(figure(12.345, 1), "12.3");
        assert_eq!(figure(0.0, 3), "0.000");
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), 2.0);
        assert_eq!(median([4.0, 1.0, 3.0, 2.0].into_iter()), 2.5);
        assert!(median(std::iter::empty()).is_nan());
    }

    #[test]
    fn only_cycles_completed_inside_the_window_count() {
        let now = Instant::now();
        let window = Window {
            measure_from: now + Duration::from_secs(1),
            until: now + Duration::from_secs(2),
        };
        let mut tally = Tally::default();
        tally.record(&window, now, now + Duration::from_millis(500)); // warm-up
        tally.record(&window, now, now + Duration::from_millis(1500)); // counted
        tally.record(&window, now, now + Duration::from_millis(2500)); // after the end
        assert_eq!(tally.latencies_ns, vec![1_500_000_000]);
        let summary = Summary::of(tally, window.measured(), Some(Duration::from_millis(3)));
        assert_eq!(summary.cycles_per_sec, 1.0);
        assert_eq!(summary.p50_ms, 1500.0);
        assert_eq!(summary.cpu_us_per_cycle, 3000.0);
    }

    #[test]
    fn only_refusals_inside_the_window_count() {
        let now = Instant::now();
        let inside = Window {
            measure_from: now - Duration::from_secs(1),
            until: now + Duration::from_secs(60),
        };
        let over = Window {
            measure_from: now - Duration::from_secs(2),
            until: now - Duration::from_secs(1),
        };
        let mut tally = Tally::default();
        tally.refuse(&inside);
        tally.refuse(&inside);
        tally.refuse(&over);
        tally.record(&inside, now, Instant::now());
        assert_eq!(tally.refused, 2);
        let summary = Summary::of(tally, inside.measured(), None);
        assert_eq!(summary.refused_per_cycle, 2.0);
        assert!(
            Summary::of(Tally::default(), inside.measured(), None)
                .refused_per_cycle
                .is_nan()
        );
    }

    #[test]
    fn process_cpu_grows_with_work() {
        let start = process_cpu().expect("linux /proc");
        let mut x = 0u64;
        let deadline = Instant::now() + Duration::from_millis(60);
        while Instant::now() < deadline {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let used = cpu_between(Some(start), process_cpu()).unwrap();
        assert!(
            used >= Duration::from_millis(10),
            "{used:?} after a busy loop"
        );
        assert_eq!(cpu_between(None, Some(start)), None);
    }
}
