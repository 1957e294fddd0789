//! The checker: what the client recorded against what the database's trace says.
//!
//! Properties, each with its own [`Violation`]:
//!
//! 1. No write is accepted from a generation after a later acquisition of the same row
//!    committed (trace order is commit order per row).
//! 2. At most one publication per generation of a row.
//! 3. Generations strictly increase per row: every acquisition in the trace installs a
//!    generation above all earlier ones, no generation is ever lowered, no generation
//!    is handed to two clients, and every acquisition a client saw is in the trace.
//!    A row taken by a claim counts as an acquisition of that row.
//! 4. Every write the client saw as applied is in the database, and no write the
//!    client saw as refused is.
//! 5. No write is in the database from a lease acquired before an epoch advance began,
//!    made by a call that started after the advance returned.
//!
//! Beside the verdict it counts stale writes: writes a worker started after it could
//! have known (by the client's own record) that a later acquisition of its row had
//! completed; how many were refused, accepted, or failed.
//!
//! # Across failovers
//!
//! A run may go through failovers of its database ([`Failover`]): replication to the
//! standby cut, calls made on the primary alone, then the primary killed and the
//! standby promoted, with no call in flight at either instant. What the calls in
//! between did is lost with the old primary: their acquisitions, writes and
//! resolutions are not held against properties 3 and 4, and a generation they took can
//! be issued again on the new primary. "Later acquisition" then means later in the
//! order of (failover era, generation): an acquisition on the new primary comes after
//! every one on the old, whatever their generations, and a write is stale when an
//! acquisition after its lease's completed before the write started, lost or not. The
//! trace, the new primary's, holds what survived, in commit order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use crate::history::{Call, Op, Seen, TraceEntry};

/// A failover on the client's clock (microseconds since the run started): replication
/// to the standby cut at `cut_us`, the primary killed at `kill_us` and the standby
/// promoted before any call went on. No call was in flight at either instant, so every
/// call is before the cut, between the two (on the primary alone: lost), or after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failover {
    pub cut_us: u64,
    pub kill_us: u64,
}

/// Where a lease stands in the order of a row's leases: its failover era, then its
/// generation.
type Order = (usize, i64);

/// The run's failovers, as the checker reads calls against them.
struct Failovers<'a>(&'a [Failover]);

impl Failovers<'_> {
    /// Whether `call` ran on a primary between a cut and its death: its effects are gone.
    fn lost(&self, call: &Call) -> bool {
        self.0
            .iter()
            .any(|f| call.start_us >= f.cut_us && call.end_us <= f.kill_us)
    }

    /// How many primaries had died before `at`.
    fn era(&self, at: u64) -> usize {
        self.0.iter().filter(|f| f.kill_us <= at).count()
    }
}

/// One broken property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Property 1.
    StaleWriteAccepted {
        row: i64,
        seq: i64,
        write_id: i64,
        writer_generation: i64,
        current_generation: i64,
    },
    /// Property 2.
    DuplicatePublication {
        row: i64,
        generation: i64,
        write_ids: Vec<i64>,
    },
    /// Property 3: an entry lowered the generation or an acquisition did not raise it.
    GenerationNotIncreasing {
        row: i64,
        seq: i64,
        previous: i64,
        generation: i64,
    },
    /// Property 3: two client acquisitions of a row returned the same generation.
    GenerationReissued { row: i64, generation: i64 },
    /// Property 3: a client saw an acquisition the database has no trace of.
    AcquisitionMissing { row: i64, generation: i64 },
    /// Property 4.
    AppliedWriteMissing { row: i64, write_id: i64 },
    /// Property 4: a write the client saw refused is in the database.
    RefusedWriteApplied { row: i64, write_id: i64 },
    /// Property 4: resolving a publication's operation id disagreed with the database.
    ResolutionWrong {
        row: i64,
        write_id: i64,
        resolved_applied: bool,
    },
    /// Property 5.
    WriteAfterEpochAdvance {
        row: i64,
        write_id: i64,
        generation: i64,
        epoch: i64,
    },
}

impl Violation {
    /// A short stable name, for the report.
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::StaleWriteAccepted { .. } => "stale-write-accepted",
            Violation::DuplicatePublication { .. } => "duplicate-publication",
            Violation::GenerationNotIncreasing { .. } => "generation-not-increasing",
            Violation::GenerationReissued { .. } => "generation-reissued",
            Violation::AcquisitionMissing { .. } => "acquisition-missing",
            Violation::AppliedWriteMissing { .. } => "applied-write-missing",
            Violation::RefusedWriteApplied { .. } => "refused-write-applied",
            Violation::ResolutionWrong { .. } => "resolution-wrong",
            Violation::WriteAfterEpochAdvance { .. } => "write-after-epoch-advance",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::StaleWriteAccepted {
                row,
                seq,
                write_id,
                writer_generation,
                current_generation,
            } => write!(
                f,
                "row {row}: write {write_id} from generation {writer_generation} accepted \
                 (trace {seq}) after generation {current_generation} was acquired"
            ),
            Violation::DuplicatePublication {
                row,
                generation,
                write_ids,
            } => write!(
                f,
                "row {row}: generation {generation} published {} times (writes {write_ids:?})",
                write_ids.len()
            ),
            Violation::GenerationNotIncreasing {
                row,
                seq,
                previous,
                generation,
            } => write!(
                f,
                "row {row}: trace {seq} has generation {generation} after generation {previous}"
            ),
            Violation::GenerationReissued { row, generation } => write!(
                f,
                "row {row}: generation {generation} was acquired by two clients"
            ),
            Violation::AcquisitionMissing { row, generation } => write!(
                f,
                "row {row}: a client acquired generation {generation}, which the trace lacks"
            ),
            Violation::AppliedWriteMissing { row, write_id } => write!(
                f,
                "row {row}: write {write_id} was seen applied but is not in the database"
            ),
            Violation::RefusedWriteApplied { row, write_id } => write!(
                f,
                "row {row}: write {write_id} was seen refused but is in the database"
            ),
            Violation::WriteAfterEpochAdvance {
                row,
                write_id,
                generation,
                epoch,
            } => write!(
                f,
                "row {row}: write {write_id} of generation {generation}, acquired before \
                 the advance to epoch {epoch}, is in the database though it started after"
            ),
            Violation::ResolutionWrong {
                row,
                write_id,
                resolved_applied,
            } => write!(
                f,
                "row {row}: write {write_id}'s operation id resolved as {}, the database \
                 says otherwise",
                if *resolved_applied {
                    "applied"
                } else {
                    "not applied"
                }
            ),
        }
    }
}

/// Counts over the client's record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub operations: u64,
    /// Rows taken, by acquisition or by claim.
    pub acquisitions: u64,
    /// Of those, the rows taken by a claim.
    pub claimed: u64,
    pub writes_applied: u64,
    /// Retries answered "an earlier attempt with this operation id applied".
    pub writes_already_applied: u64,
    pub writes_refused: u64,
    /// Operation ids resolved after a failed publication and its retry.
    pub resolutions: u64,
    pub writes_failed: u64,
    pub stale_attempted: u64,
    pub stale_refused: u64,
    pub stale_accepted: u64,
    pub stale_failed: u64,
    /// Calls seen in effect (acquisitions, writes) whose effect a failover discarded.
    pub lost: u64,
    /// Epoch advances that returned.
    pub advances: u64,
}

/// The checker's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub counts: Counts,
    pub violations: Vec<Violation>,
}

/// Checks a run: the client's `calls` (any order) against the database's `trace`.
pub fn check(calls: &[Call], trace: &[TraceEntry]) -> Verdict {
    check_across(calls, trace, &[])
}

/// [`check`] for a run that went through `failovers`.
pub fn check_across(calls: &[Call], trace: &[TraceEntry], failovers: &[Failover]) -> Verdict {
    let failovers = Failovers(failovers);
    let mut violations = Vec::new();
    check_trace(trace, &mut violations);
    check_acquisitions(calls, trace, &failovers, &mut violations);
    check_writes(calls, trace, &failovers, &mut violations);
    check_epochs(calls, trace, &mut violations);
    Verdict {
        counts: count(calls, &failovers),
        violations,
    }
}

/// Property 5: the trace's writes against the epoch advances the client saw return.
fn check_epochs(calls: &[Call], trace: &[TraceEntry], violations: &mut Vec<Violation>) {
    let advances: Vec<&Call> = calls
        .iter()
        .filter(|c| c.op == Op::AdvanceEpoch && c.seen == Seen::Applied)
        .collect();
    if advances.is_empty() {
        return;
    }
    // When each lease's acquisition returned, by row and generation.
    let acquired: HashMap<(i64, i64), u64> = calls
        .iter()
        .filter(|c| c.op.is_acquisition() && c.seen == Seen::Applied)
        .map(|c| ((c.row, c.generation), c.end_us))
        .collect();
    // One logical write per write id: a publication retried with its operation id
    // keeps its write id, and only one of its attempts wrote it.
    let mut writes: HashMap<i64, Vec<&Call>> = HashMap::new();
    for call in calls.iter().filter(|c| c.op.is_write()) {
        if let Some(id) = call.write_id {
            writes.entry(id).or_default().push(call);
        }
    }
    for entry in trace.iter().filter(|e| e.is_write()) {
        let Some((id, attempts)) = entry
            .write_id
            .and_then(|id| writes.get(&id).map(|attempts| (id, attempts)))
        else {
            continue;
        };
        let call = attempts[0];
        let Some(&acquired_us) = acquired.get(&(call.row, call.generation)) else {
            continue;
        };
        // The attempt that saw the write applied wrote it; failing that, any attempt
        // whose answer was lost may have (one that found it already applied, or was
        // refused, wrote nothing). The write is late only if every such attempt is.
        let writers: Vec<&Call> = match attempts.iter().find(|c| c.seen == Seen::Applied) {
            Some(applied) => vec![*applied],
            None => attempts
                .iter()
                .copied()
                .filter(|c| c.seen == Seen::Failed)
                .collect(),
        };
        if writers.is_empty() {
            continue;
        }
        if let Some(advance) = advances
            .iter()
            .find(|a| acquired_us < a.start_us && writers.iter().all(|w| w.start_us > a.end_us))
        {
            violations.push(Violation::WriteAfterEpochAdvance {
                row: call.row,
                write_id: id,
                generation: call.generation,
                epoch: advance.generation,
            });
        }
    }
}

/// Properties 1, 2 and the trace's half of 3, in commit order per row.
fn check_trace(trace: &[TraceEntry], violations: &mut Vec<Violation>) {
    let mut ordered: Vec<&TraceEntry> = trace.iter().collect();
    ordered.sort_by_key(|e| e.seq);
    let mut current: HashMap<i64, i64> = HashMap::new();
    let mut publications: BTreeMap<(i64, i64), Vec<i64>> = BTreeMap::new();
    for entry in ordered {
        let generation = current.entry(entry.row).or_insert(0);
        let lowered = entry.generation < *generation;
        let not_raised = entry.is_acquisition()
            && (entry.generation <= entry.old_generation || entry.generation <= *generation);
        if lowered || not_raised {
            violations.push(Violation::GenerationNotIncreasing {
                row: entry.row,
                seq: entry.seq,
                previous: *generation,
                generation: entry.generation,
            });
        }
        *generation = (*generation).max(entry.generation);
        if !entry.is_write() {
            continue;
        }
        let (Some(write_id), Some(writer)) = (entry.write_id, entry.writer_generation) else {
            continue;
        };
        if writer < *generation {
            violations.push(Violation::StaleWriteAccepted {
                row: entry.row,
                seq: entry.seq,
                write_id,
                writer_generation: writer,
                current_generation: *generation,
            });
        }
        if entry.kind.as_deref() == Some("publish") {
            publications
                .entry((entry.row, writer))
                .or_default()
                .push(write_id);
        }
    }
    for ((row, generation), write_ids) in publications {
        if write_ids.len() > 1 {
            violations.push(Violation::DuplicatePublication {
                row,
                generation,
                write_ids,
            });
        }
    }
}

/// The client's half of property 3, for the acquisitions no failover discarded.
fn check_acquisitions(
    calls: &[Call],
    trace: &[TraceEntry],
    failovers: &Failovers<'_>,
    violations: &mut Vec<Violation>,
) {
    let traced: HashSet<(i64, i64)> = trace
        .iter()
        .filter(|e| e.is_acquisition())
        .map(|e| (e.row, e.generation))
        .collect();
    let mut seen = HashSet::new();
    let mut acquired: Vec<&Call> = calls
        .iter()
        .filter(|c| c.op.is_acquisition() && c.seen == Seen::Applied && !failovers.lost(c))
        .collect();
    acquired.sort_by_key(|c| (c.row, c.generation, c.start_us));
    for call in acquired {
        let key = (call.row, call.generation);
        if !seen.insert(key) {
            violations.push(Violation::GenerationReissued {
                row: call.row,
                generation: call.generation,
            });
        }
        if !traced.contains(&key) {
            violations.push(Violation::AcquisitionMissing {
                row: call.row,
                generation: call.generation,
            });
        }
    }
}

/// Property 4, for the calls no failover discarded.
fn check_writes(
    calls: &[Call],
    trace: &[TraceEntry],
    failovers: &Failovers<'_>,
    violations: &mut Vec<Violation>,
) {
    let traced: HashSet<(i64, i64, i64)> = trace
        .iter()
        .filter(|e| e.is_write())
        .filter_map(|e| Some((e.row, e.write_id?, e.writer_generation?)))
        .collect();
    // One logical write per write id: a publication retried with its operation id
    // keeps its write id, and so does the resolution of that id.
    let mut writes: BTreeMap<i64, Vec<&Call>> = BTreeMap::new();
    for call in calls {
        if let (true, Some(id)) = (call.op.is_write() || call.op == Op::Resolve, call.write_id) {
            writes.entry(id).or_default().push(call);
        }
    }
    for (write_id, attempts) in writes {
        let row = attempts[0].row;
        let present = traced.contains(&(row, write_id, attempts[0].generation));
        let seen_in_effect = attempts.iter().any(|c| {
            c.op.is_write()
                && matches!(c.seen, Seen::Applied | Seen::AlreadyApplied)
                && !failovers.lost(c)
        });
        let all_refused = attempts
            .iter()
            .filter(|c| c.op.is_write())
            .all(|c| c.seen == Seen::Refused);
        if seen_in_effect && !present {
            violations.push(Violation::AppliedWriteMissing { row, write_id });
        }
        if all_refused && present {
            violations.push(Violation::RefusedWriteApplied { row, write_id });
        }
        for resolution in attempts
            .iter()
            .filter(|c| c.op == Op::Resolve && !failovers.lost(c))
        {
            let applied = resolution.seen == Seen::Applied;
            if resolution.seen != Seen::Failed && applied != present {
                violations.push(Violation::ResolutionWrong {
                    row,
                    write_id,
                    resolved_applied: applied,
                });
            }
        }
    }
}

/// Counts, and stale writes by the client's own record: a write whose call started after
/// an acquisition of the same row later than its lease's (a higher generation in a
/// failover era no earlier) had returned.
fn count(calls: &[Call], failovers: &Failovers<'_>) -> Counts {
    let mut counts = Counts {
        operations: calls.len() as u64,
        ..Counts::default()
    };
    // Per row: when each acquisition returned, and the lease's place in the order.
    let mut acquired: HashMap<i64, Vec<(u64, Order)>> = HashMap::new();
    for call in calls {
        let in_effect = match call.seen {
            Seen::Applied => call.op.is_acquisition() || call.op.is_write(),
            Seen::AlreadyApplied => call.op.is_write(),
            _ => false,
        };
        if in_effect && failovers.lost(call) {
            counts.lost += 1;
        }
        if call.op.is_acquisition() && call.seen == Seen::Applied {
            counts.acquisitions += 1;
            if call.op == Op::Claim {
                counts.claimed += 1;
            }
            acquired
                .entry(call.row)
                .or_default()
                .push((call.end_us, (failovers.era(call.lease_us), call.generation)));
        }
    }
    for list in acquired.values_mut() {
        list.sort_unstable();
    }
    counts.resolutions = calls.iter().filter(|c| c.op == Op::Resolve).count() as u64;
    counts.advances = calls
        .iter()
        .filter(|c| c.op == Op::AdvanceEpoch && c.seen == Seen::Applied)
        .count() as u64;
    for call in calls.iter().filter(|c| c.op.is_write()) {
        match call.seen {
            Seen::Applied => counts.writes_applied += 1,
            Seen::AlreadyApplied => counts.writes_already_applied += 1,
            Seen::Refused => counts.writes_refused += 1,
            Seen::Failed => counts.writes_failed += 1,
        }
        let lease = (failovers.era(call.lease_us), call.generation);
        let superseded = acquired.get(&call.row).is_some_and(|list| {
            list.iter()
                .take_while(|(end, _)| *end <= call.start_us)
                .any(|(_, later)| *later > lease)
        });
        if superseded {
            counts.stale_attempted += 1;
            match call.seen {
                Seen::Applied => counts.stale_accepted += 1,
                // Nothing was written by this attempt.
                Seen::Refused | Seen::AlreadyApplied => counts.stale_refused += 1,
                Seen::Failed => counts.stale_failed += 1,
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace entry: `(seq, row, old generation, generation, old write, write,
    /// writer generation, kind)`.
    fn entry(
        seq: i64,
        row: i64,
        (old_generation, generation): (i64, i64),
        (old_write_id, write_id): (Option<i64>, Option<i64>),
        writer_generation: Option<i64>,
        kind: Option<&str>,
    ) -> TraceEntry {
        TraceEntry {
            seq,
            row,
            old_generation,
            generation,
            old_write_id,
            write_id,
            writer_generation,
            kind: kind.map(str::to_owned),
        }
    }

    fn acquisition(seq: i64, row: i64, from: i64, to: i64, last_write: Option<i64>) -> TraceEntry {
        entry(seq, row, (from, to), (last_write, last_write), None, None)
    }

    fn written(
        seq: i64,
        row: i64,
        generation: i64,
        (old, new): (Option<i64>, i64),
        writer: i64,
        kind: &str,
    ) -> TraceEntry {
        entry(
            seq,
            row,
            (generation, generation),
            (old, Some(new)),
            Some(writer),
            Some(kind),
        )
    }

    fn call(op: Op, row: i64, generation: i64, write_id: Option<i64>, at: u64, seen: Seen) -> Call {
        Call {
            worker: 0,
            row,
            op,
            generation,
            write_id,
            lease_us: at,
            start_us: at,
            end_us: at + 1,
            seen,
        }
    }

    /// A clean history on one row: generation 1 writes and publishes, generation 2
    /// takes over, generation 1's late write is refused, generation 2 publishes.
    fn clean() -> (Vec<Call>, Vec<TraceEntry>) {
        let calls = vec![
            call(Op::Acquire, 7, 1, None, 0, Seen::Applied),
            call(Op::Update, 7, 1, Some(1), 10, Seen::Applied),
            call(Op::Publish, 7, 1, Some(2), 20, Seen::Applied),
            call(Op::Acquire, 7, 2, None, 30, Seen::Applied),
            call(Op::Update, 7, 1, Some(3), 40, Seen::Refused),
            call(Op::PublishAndRelease, 7, 2, Some(4), 50, Seen::Applied),
        ];
        let trace = vec![
            acquisition(1, 7, 0, 1, None),
            written(2, 7, 1, (None, 1), 1, "update"),
            written(3, 7, 1, (Some(1), 2), 1, "publish"),
            acquisition(4, 7, 1, 2, Some(2)),
            written(5, 7, 2, (Some(2), 4), 2, "publish"),
        ];
        (calls, trace)
    }

    fn kinds(verdict: &Verdict) -> Vec<&'static str> {
        verdict.violations.iter().map(Violation::kind).collect()
    }

    #[test]
    fn clean_history_passes_and_counts_the_stale_write() {
        let (calls, trace) = clean();
        let verdict = check(&calls, &trace);
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(verdict.counts.operations, 6);
        assert_eq!(verdict.counts.acquisitions, 2);
        assert_eq!(
            (
                verdict.counts.stale_attempted,
                verdict.counts.stale_refused,
                verdict.counts.stale_accepted
            ),
            (1, 1, 0)
        );
    }

    /// The clean history, then an epoch advance (t 60-61); generation 2, acquired
    /// before it, writes at `write_at`, and generation 3, acquired after it, at 90.
    fn across_an_advance(write_at: u64, landed: bool) -> Verdict {
        let (mut calls, mut trace) = clean();
        calls.push(call(Op::AdvanceEpoch, -1, 5, None, 60, Seen::Applied));
        let seen = if landed { Seen::Applied } else { Seen::Refused };
        calls.push(call(Op::Update, 7, 2, Some(5), write_at, seen));
        calls.push(call(Op::Acquire, 7, 3, None, 80, Seen::Applied));
        calls.push(call(Op::Update, 7, 3, Some(6), 90, Seen::Applied));
        if landed {
            trace.push(written(6, 7, 2, (Some(4), 5), 2, "update"));
        }
        trace.push(acquisition(7, 7, 2, 3, Some(if landed { 5 } else { 4 })));
        trace.push(written(
            8,
            7,
            3,
            (Some(if landed { 5 } else { 4 }), 6),
            3,
            "update",
        ));
        check(&calls, &trace)
    }

    #[test]
    fn a_write_after_an_epoch_advance_by_an_older_lease_is_caught() {
        let refused = across_an_advance(70, false);
        assert_eq!(refused.violations, vec![]);
        let landed = across_an_advance(70, true);
        assert_eq!(kinds(&landed), vec!["write-after-epoch-advance"]);
        assert!(landed.violations[0].to_string().contains("write 5"));
        // Started before the advance returned: it may commit first.
        assert_eq!(across_an_advance(55, true).violations, vec![]);
    }

    /// A publication retried with its operation id keeps its write id: the attempt that
    /// wrote it is the one to judge against the advance. Its first attempt, begun
    /// before the advance, committed and lost its answer; the retry after the advance
    /// found it applied. Negative controls: a retry after the advance that wrote it
    /// itself, the first attempt's answer lost before it ran, is caught; so is a write
    /// whose every attempt began after the advance.
    #[test]
    fn a_retried_write_is_judged_by_the_attempt_that_wrote_it() {
        let history = |first: (u64, Seen), retry: (u64, Seen)| {
            let (mut calls, mut trace) = clean();
            calls.push(call(Op::AdvanceEpoch, -1, 5, None, 60, Seen::Applied));
            calls.push(call(Op::Update, 7, 2, Some(5), first.0, first.1));
            calls.push(call(Op::Update, 7, 2, Some(5), retry.0, retry.1));
            trace.push(written(6, 7, 2, (Some(4), 5), 2, "update"));
            check(&calls, &trace)
        };
        let committed_first = history((55, Seen::Failed), (70, Seen::AlreadyApplied));
        assert_eq!(committed_first.violations, vec![]);
        let written_by_retry = history((55, Seen::Failed), (70, Seen::Applied));
        assert_eq!(kinds(&written_by_retry), vec!["write-after-epoch-advance"]);
        let both_late = history((65, Seen::Failed), (70, Seen::AlreadyApplied));
        assert_eq!(kinds(&both_late), vec!["write-after-epoch-advance"]);
    }

    #[test]
    fn stale_write_after_a_later_acquisition_is_caught() {
        let (mut calls, mut trace) = clean();
        calls[4].seen = Seen::Applied;
        trace.insert(4, written(6, 7, 2, (Some(2), 3), 1, "update"));
        // Sequence order, not position in the list, is commit order.
        trace[4].seq = 45;
        trace[5].seq = 50;
        let verdict = check(&calls, &trace);
        assert_eq!(kinds(&verdict), vec!["stale-write-accepted"]);
        assert_eq!(verdict.counts.stale_accepted, 1);
        assert!(verdict.violations[0].to_string().contains("write 3"));
    }

    #[test]
    fn stale_generation_before_the_takeover_commits_is_not_a_violation() {
        // Generation 1 writes after generation 2's acquisition was *sent* but before it
        // committed: the trace orders it first, which is allowed.
        let (mut calls, mut trace) = clean();
        calls[4].seen = Seen::Applied;
        calls[4].start_us = 25;
        trace.push(written(35, 7, 1, (Some(2), 3), 1, "update"));
        trace[3].seq = 36;
        trace[4].seq = 37;
        trace[4].old_write_id = Some(3);
        let verdict = check(&calls, &trace);
        assert_eq!(verdict.violations, vec![]);
    }

    #[test]
    fn second_publication_of_a_generation_is_caught() {
        let (mut calls, mut trace) = clean();
        calls.push(call(Op::Publish, 7, 2, Some(5), 60, Seen::Applied));
        trace.push(written(6, 7, 2, (Some(4), 5), 2, "publish"));
        let verdict = check(&calls, &trace);
        assert_eq!(kinds(&verdict), vec!["duplicate-publication"]);
        assert_eq!(
            verdict.violations[0],
            Violation::DuplicatePublication {
                row: 7,
                generation: 2,
                write_ids: vec![4, 5]
            }
        );
    }

    #[test]
    fn publications_of_different_rows_or_generations_are_not_duplicates() {
        let (mut calls, mut trace) = clean();
        calls.push(call(Op::Acquire, 8, 1, None, 0, Seen::Applied));
        calls.push(call(Op::Publish, 8, 1, Some(9), 5, Seen::Applied));
        trace.push(acquisition(7, 8, 0, 1, None));
        trace.push(written(8, 8, 1, (None, 9), 1, "publish"));
        assert_eq!(check(&calls, &trace).violations, vec![]);
    }

    #[test]
    fn lowered_or_repeated_generation_is_caught() {
        // A restore wrote generation 1 back over generation 2.
        let (calls, mut trace) = clean();
        trace.push(entry(
            6,
            7,
            (2, 1),
            (Some(4), Some(2)),
            Some(1),
            Some("publish"),
        ));
        let verdict = check(&calls, &trace);
        assert_eq!(kinds(&verdict), vec!["generation-not-increasing"]);

        // An acquisition that installs a generation the row already had.
        let (calls, mut trace) = clean();
        trace[3] = acquisition(4, 7, 0, 1, Some(2));
        let verdict = check(&calls, &trace);
        assert!(kinds(&verdict).contains(&"generation-not-increasing"));
    }

    #[test]
    fn generation_handed_to_two_clients_is_caught() {
        let (mut calls, trace) = clean();
        calls.push(call(Op::Acquire, 7, 2, None, 70, Seen::Applied));
        assert_eq!(kinds(&check(&calls, &trace)), vec!["generation-reissued"]);
    }

    #[test]
    fn a_claim_counts_as_an_acquisition_of_its_row() {
        // Generation 2 taken by a claim: clean.
        let (mut calls, trace) = clean();
        calls[3].op = Op::Claim;
        let verdict = check(&calls, &trace);
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(
            (verdict.counts.acquisitions, verdict.counts.claimed),
            (2, 1)
        );
        // A claim handed the generation an acquisition had: caught.
        calls.push(call(Op::Claim, 7, 1, None, 70, Seen::Applied));
        assert_eq!(kinds(&check(&calls, &trace)), vec!["generation-reissued"]);
        // A claim the trace has no acquisition for: caught.
        calls.pop();
        calls.push(call(Op::Claim, 7, 3, None, 70, Seen::Applied));
        assert_eq!(kinds(&check(&calls, &trace)), vec!["acquisition-missing"]);
    }

    #[test]
    fn acquisition_without_a_trace_is_caught() {
        let (mut calls, trace) = clean();
        calls.push(call(Op::Acquire, 7, 3, None, 70, Seen::Applied));
        assert_eq!(kinds(&check(&calls, &trace)), vec!["acquisition-missing"]);
    }

    #[test]
    fn applied_write_missing_from_the_database_is_caught() {
        let (calls, mut trace) = clean();
        trace.remove(1);
        trace[1].old_write_id = None;
        assert_eq!(kinds(&check(&calls, &trace)), vec!["applied-write-missing"]);
    }

    #[test]
    fn refused_write_in_the_database_is_caught() {
        let (mut calls, trace) = clean();
        calls[2].seen = Seen::Refused;
        assert_eq!(kinds(&check(&calls, &trace)), vec!["refused-write-applied"]);
    }

    #[test]
    fn resolution_must_agree_with_the_database() {
        // Publication 2's acknowledgement was lost, the retry with its operation id
        // was answered "already applied", and the id resolved as applied: clean.
        let (mut calls, trace) = clean();
        calls[2].seen = Seen::Failed;
        calls.insert(
            3,
            call(Op::Publish, 7, 1, Some(2), 22, Seen::AlreadyApplied),
        );
        calls.insert(4, call(Op::Resolve, 7, 1, Some(2), 24, Seen::Applied));
        let verdict = check(&calls, &trace);
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(verdict.counts.writes_already_applied, 1);
        assert_eq!(verdict.counts.resolutions, 1);

        // The same id resolved as not applied, while the database has it.
        calls[4].seen = Seen::Refused;
        assert_eq!(kinds(&check(&calls, &trace)), vec!["resolution-wrong"]);

        // A retry answered "already applied" for a write that is not in the database.
        let (mut calls, mut trace) = clean();
        calls[2].seen = Seen::Failed;
        calls.insert(
            3,
            call(Op::Publish, 7, 1, Some(2), 22, Seen::AlreadyApplied),
        );
        trace.remove(2);
        trace[2].old_write_id = Some(1);
        assert_eq!(kinds(&check(&calls, &trace)), vec!["applied-write-missing"]);
    }

    #[test]
    fn failed_write_may_or_may_not_be_in_the_database() {
        let (mut calls, trace) = clean();
        calls[2].seen = Seen::Failed;
        calls.push(call(Op::Update, 7, 2, Some(10), 55, Seen::Failed));
        let verdict = check(&calls, &trace);
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(verdict.counts.writes_failed, 2);
    }

    // ---- Across failovers.

    /// Replication cut at 10, the primary killed at 30.
    const FAILOVER: [Failover; 1] = [Failover {
        cut_us: 10,
        kill_us: 30,
    }];

    /// A holds generation 1 of row 7; after the cut B takes generation 2 on the
    /// primary alone (lost); after the failover A writes, and the new primary accepts it
    /// (as it does without the timeline stamp). The trace is the new primary's.
    fn lost_takeover() -> (Vec<Call>, Vec<TraceEntry>) {
        let mut late = call(Op::Update, 7, 1, Some(1), 40, Seen::Applied);
        late.lease_us = 0;
        let calls = vec![
            call(Op::Acquire, 7, 1, None, 0, Seen::Applied),
            call(Op::Acquire, 7, 2, None, 15, Seen::Applied),
            late,
        ];
        let trace = vec![
            acquisition(1, 7, 0, 1, None),
            written(2, 7, 1, (None, 1), 1, "update"),
        ];
        (calls, trace)
    }

    #[test]
    fn a_write_after_a_lost_takeover_is_stale_accepted() {
        let (calls, trace) = lost_takeover();
        let verdict = check_across(&calls, &trace, &FAILOVER);
        // Not in the trace's order, which never saw the takeover: by the client's record.
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(
            (
                verdict.counts.stale_attempted,
                verdict.counts.stale_accepted
            ),
            (1, 1)
        );
        assert_eq!(verdict.counts.lost, 1, "B's acquisition");
        // Refused, as the stamp makes it: not accepted.
        let (mut calls, mut trace) = lost_takeover();
        calls[2].seen = Seen::Refused;
        trace.pop();
        let verdict = check_across(&calls, &trace, &FAILOVER);
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(
            (verdict.counts.stale_refused, verdict.counts.stale_accepted),
            (1, 0)
        );
    }

    #[test]
    fn only_a_failover_excuses_an_acquisition_missing_from_the_trace() {
        let (calls, trace) = lost_takeover();
        assert_eq!(kinds(&check(&calls, &trace)), vec!["acquisition-missing"]);
        // A call that ended after the kill ran on the new primary: not lost.
        let (mut calls, trace) = lost_takeover();
        calls[1].end_us = 31;
        assert_eq!(
            kinds(&check_across(&calls, &trace, &FAILOVER)),
            vec!["acquisition-missing"]
        );
    }

    #[test]
    fn a_generation_lost_may_be_issued_again_and_comes_later() {
        // After the failover, C takes row 7's generation 2 again on the new primary and
        // writes: neither a generation issued twice nor a stale write, although B's lost
        // generation 3 was acquired before.
        let (mut calls, mut trace) = lost_takeover();
        calls.pop();
        calls.push(call(Op::Acquire, 7, 3, None, 20, Seen::Applied));
        calls.push(call(Op::Acquire, 7, 2, None, 40, Seen::Applied));
        let mut write = call(Op::Update, 7, 2, Some(2), 50, Seen::Applied);
        write.lease_us = 40;
        calls.push(write);
        trace.pop();
        trace.push(acquisition(3, 7, 1, 2, None));
        trace.push(written(4, 7, 2, (None, 2), 2, "update"));
        let verdict = check_across(&calls, &trace, &FAILOVER);
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(verdict.counts.stale_attempted, 0);
        // Without the failover the same record is a generation issued twice, and the
        // write stale.
        let verdict = check(&calls, &trace);
        assert!(
            kinds(&verdict).contains(&"generation-reissued"),
            "{verdict:?}"
        );
        assert_eq!(verdict.counts.stale_accepted, 1);
    }

    #[test]
    fn a_write_lost_with_the_old_primary_is_not_missing() {
        let (mut calls, trace) = lost_takeover();
        calls.pop();
        let mut lost = call(Op::Update, 7, 1, Some(5), 12, Seen::Applied);
        lost.lease_us = 0;
        calls.push(lost.clone());
        let verdict = check_across(&calls, &trace, &FAILOVER);
        assert_eq!(verdict.violations, vec![]);
        assert_eq!(verdict.counts.lost, 2);
        // The same write before the cut was replicated: missing, it is a violation.
        lost.start_us = 5;
        lost.end_us = 6;
        *calls.last_mut().unwrap() = lost;
        assert_eq!(
            kinds(&check_across(&calls, &trace, &FAILOVER)),
            vec!["applied-write-missing"]
        );
    }

    #[test]
    fn a_resolution_on_the_lost_primary_is_not_held_against_the_new() {
        // A publication, applied on the primary alone, resolved there as applied; the
        // new primary has neither.
        let (mut calls, trace) = lost_takeover();
        calls.pop();
        calls.push(call(Op::Publish, 7, 1, Some(6), 12, Seen::Failed));
        calls.push(call(Op::Publish, 7, 1, Some(6), 14, Seen::AlreadyApplied));
        calls.push(call(Op::Resolve, 7, 1, Some(6), 16, Seen::Applied));
        assert_eq!(check_across(&calls, &trace, &FAILOVER).violations, vec![]);
        // Resolved after the failover, it must agree with the new primary.
        calls.push(call(Op::Resolve, 7, 1, Some(6), 40, Seen::Applied));
        assert_eq!(
            kinds(&check_across(&calls, &trace, &FAILOVER)),
            vec!["resolution-wrong"]
        );
    }
}
