//! The history workload: workers that acquire rows (one of them by claiming any free
//! rows, several at a time), pause past their ttl, get their connections cut, resume
//! and write; every call and its outcome recorded.
//!
//! Each write sets the application columns `WriterGeneration` (the writer's lease
//! generation), `WriteId` (unique per call) and `WriteKind` (`update` or `publish`). A
//! trigger on the fenced table copies every changed row image into a trace table in the
//! same statement, with a sequence number taken while the row is locked: per row, the
//! trace's order is the order in which the changes committed. The checker compares the
//! client's record with that trace.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fenced_guard::{
    Backend, Candidates, ColumnType, Dialect, FencedTable, FencedTableBuilder, Key, KeyType, Lease,
    OperationOutcome, Outcome, Store, Value,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use crate::gate::{AtWork, Gate};
use crate::proxy::{Fault, Proxy};

/// The fenced table of the workload, named `name`.
pub fn job_table(name: &str) -> FencedTable {
    job_table_builder(name)
        .build()
        .expect("valid workload table")
}

/// The builder of [`job_table`], for a run that declares more.
pub fn job_table_builder(name: &str) -> FencedTableBuilder {
    FencedTable::builder()
        .table(name)
        .key_column("JobId")
        .key_type(KeyType::BigInt)
        .column("Payload", ColumnType::Text)
        .column("WriterGeneration", ColumnType::BigInt)
        .column("WriteId", ColumnType::BigInt)
        .column("WriteKind", ColumnType::Text)
}

/// A fenced transaction on a connection of the application's own, beside the guard's
/// pool: the path an existing service uses ([`fenced_guard::Store::on`],
/// [`fenced_guard::Store::fence`]).
pub trait Caller<B>: Send {
    /// One update of `columns` through a fenced transaction the caller opens on this
    /// connection. With `autocommit_first`, a fence is first asked for with no
    /// transaction open, which must be refused; what it got is in the result.
    fn fenced_update<'a>(
        &'a mut self,
        store: &'a Store<B>,
        lease: &'a Lease,
        columns: &'a [(&'static str, Value)],
        autocommit_first: bool,
    ) -> CallerFuture<'a>;

    /// Whether a fence can even be asked for outside a transaction on this connection
    /// (on a tokio-postgres client it does not compile).
    fn can_try_autocommit(&self) -> bool;
}

/// What [`Caller::fenced_update`] returns.
pub type CallerFuture<'a> =
    Pin<Box<dyn Future<Output = fenced_guard::Result<CallerOutcome>> + Send + 'a>>;

/// The update's outcome, and what a fence asked for in autocommit got.
#[derive(Clone, Copy, Debug)]
pub struct CallerOutcome {
    pub outcome: Outcome,
    /// `Some(true)`: asked for in autocommit and refused; `Some(false)`: granted, which
    /// must never happen; `None`: not asked for.
    pub autocommit_refused: Option<bool>,
}

/// What the caller-connection updates of a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallerCounts {
    /// Workers that had a connection of their own.
    pub connections: u64,
    /// Of those, the ones on which a fence can be asked for outside a transaction.
    pub autocommit_capable: u64,
    /// Updates committed through a fenced transaction on a caller's connection.
    pub committed: u64,
    /// Fences asked for with no transaction open, and refused.
    pub autocommit_refused: u64,
    /// Fences asked for with no transaction open, and granted: a defect.
    pub autocommit_granted: u64,
}

/// What a worker's writes carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Through the guard: every write carries the fence.
    Fenced,
    /// The negative control: the same lease (acquire, renew, release through the
    /// guard), but writes that name only the key, as a lock without fencing does.
    Naive,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fenced => "fenced",
            Mode::Naive => "naive",
        }
    }
}

/// A call a worker made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Acquire,
    /// One row taken by a claim ([`Store::claim`]): a claim that took several rows is
    /// recorded once per row; one that took none (or failed) once, with row -1.
    Claim,
    Renew,
    Update,
    Publish,
    PublishAndRelease,
    Release,
    /// Asking the database whether a publication's operation id was applied; the
    /// call's `write_id` is the publication's.
    Resolve,
    /// An epoch advance ([`Store::advance_epoch`]), by the run's advancer: every lease
    /// acquired before it may write no more. Row -1; the generation is the new epoch.
    AdvanceEpoch,
}

impl Op {
    /// `true` for the calls that take a row: an acquisition or a claim.
    pub fn is_acquisition(self) -> bool {
        matches!(self, Op::Acquire | Op::Claim)
    }

    /// `true` for the calls that write the application's columns.
    pub fn is_write(self) -> bool {
        matches!(self, Op::Update | Op::Publish | Op::PublishAndRelease)
    }
}

/// What the client saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Applied,
    Refused,
    /// A retry with an operation id that an earlier attempt had already applied: the
    /// write is in effect, and nothing was written now.
    AlreadyApplied,
    /// An error: the call may or may not have taken effect.
    Failed,
}

/// One recorded call. Times are microseconds since the run started, on the client's
/// monotonic clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub worker: usize,
    pub row: i64,
    pub op: Op,
    /// The lease's generation (for an acquisition: the one it installed, or 0 when none).
    pub generation: i64,
    pub write_id: Option<i64>,
    /// When the acquisition of the lease the call used (for an acquisition: the call
    /// itself) started.
    pub lease_us: u64,
    pub start_us: u64,
    pub end_us: u64,
    pub seen: Seen,
}

/// One row image in the database's trace, in commit order per row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    pub seq: i64,
    pub row: i64,
    pub old_generation: i64,
    pub generation: i64,
    pub old_write_id: Option<i64>,
    pub write_id: Option<i64>,
    pub writer_generation: Option<i64>,
    pub kind: Option<String>,
}

impl TraceEntry {
    /// The change was an acquisition: it moved the generation.
    pub fn is_acquisition(&self) -> bool {
        self.generation != self.old_generation
    }

    /// The change was a write of the application's columns.
    pub fn is_write(&self) -> bool {
        !self.is_acquisition() && self.write_id.is_some() && self.write_id != self.old_write_id
    }
}

/// The faults a run injected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Pauses past the ttl between acquiring and writing.
    pub pauses: u64,
    /// Connections cut before a statement reached the server.
    pub cuts_before_execute: u64,
    /// Connections cut after the server committed, before the reply arrived.
    pub cuts_after_commit: u64,
    /// Statements whose request was held back past the ttl.
    pub delays: u64,
}

impl Faults {
    pub fn total(&self) -> u64 {
        self.pauses + self.cuts_before_execute + self.cuts_after_commit + self.delays
    }

    fn add(&mut self, other: &Faults) {
        self.pauses += other.pauses;
        self.cuts_before_execute += other.cuts_before_execute;
        self.cuts_after_commit += other.cuts_after_commit;
        self.delays += other.delays;
    }
}

/// A database prepared for one run: the fenced table with its trace trigger.
pub trait Bench: Send + Sync + 'static {
    type Backend: Backend + Clone + fenced_guard::Lend;

    /// A backend name for the report.
    fn name(&self) -> &'static str;

    /// The fenced table.
    fn table(&self) -> FencedTable;

    /// Creates the fenced table and the trace trigger on it.
    fn prepare(&self) -> impl Future<Output = ()> + Send;

    /// A store with its own connections for one worker, and the proxy in front of
    /// them, if faults on the wire can be injected.
    fn worker(&self) -> impl Future<Output = (Store<Self::Backend>, Option<Proxy>)> + Send;

    /// A connection of the application's own for one worker, if the bench has one.
    /// Default: none.
    fn caller(&self) -> impl Future<Output = Option<Box<dyn Caller<Self::Backend>>>> + Send {
        async { None }
    }

    /// Readies a worker's store before the run's clock starts. Default: nothing.
    fn warm(&self, store: &Store<Self::Backend>) -> impl Future<Output = ()> + Send {
        let _ = store;
        async {}
    }

    /// The trace, ordered by sequence number.
    fn trace(&self) -> impl Future<Output = Vec<TraceEntry>> + Send;

    /// Drops what the bench created.
    fn teardown(&self) -> impl Future<Output = ()> + Send;
}

/// How a run is shaped.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub mode: Mode,
    pub workers: usize,
    /// How many of the workers (the first ones) take rows by claiming any free rows,
    /// several at a time, instead of acquiring one row they chose.
    pub claimers: usize,
    pub rows: i64,
    pub ttl: Duration,
    pub duration: Duration,
    pub seed: u64,
    /// Per step, the chance of a pause past the ttl.
    pub pause: f64,
    /// Per call, the chance of a fault on the wire (where there is a proxy).
    pub wire: f64,
    /// Per update of a fenced run, the chance that it goes through a fenced transaction
    /// ([`Store::transaction`]) instead of one fenced statement.
    pub transactions: f64,
    /// Per update of a fenced run, the chance that it goes through a fenced transaction
    /// on the worker's own connection ([`Bench::caller`]), where the bench has one.
    pub caller_connections: f64,
    /// Per such update, the chance that the worker first asks for a fence with no
    /// transaction open.
    pub autocommit_attempts: f64,
    /// How often an advancer, beside the workers, advances the recovery epoch; `None`:
    /// never.
    pub advance_every: Option<Duration>,
}

/// What a run recorded.
#[derive(Debug, Default)]
pub struct Recorded {
    pub calls: Vec<Call>,
    pub faults: Faults,
    /// Updates committed through a fenced transaction.
    pub transactions: u64,
    pub caller: CallerCounts,
}

/// Longest any single call may take before it is recorded as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How often, with a proxy in front of the workers, a publication with an operation
/// id has its first attempt cut after commit, on top of the wire's random faults.
const PUBLICATION_CUT_AFTER_COMMIT: f64 = 0.2;

struct Recorder {
    start: Instant,
    calls: Mutex<Vec<Call>>,
    next_write: AtomicI64,
    pauses: AtomicU64,
    delays: AtomicU64,
    transactions: AtomicU64,
    caller: Mutex<CallerCounts>,
}

impl Recorder {
    fn micros(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// When `lease`'s acquisition started, on the run's clock.
    fn lease_us(&self, lease: &Lease) -> u64 {
        let since = lease.acquired_at().saturating_duration_since(self.start);
        u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
    }
}

/// Provisions the rows, runs the workers until the duration has passed, and returns
/// what they recorded. Each worker's choices come from its own RNG seeded with
/// `seed + worker`; the interleaving is the scheduler's.
pub async fn run<T: Bench>(bench: &T, settings: &Settings) -> Recorded {
    run_gated(bench, settings, None).await
}

/// [`run`], each worker passing `gate` before every call; the run's clock is the
/// gate's, and it ends early when the gate is [finished](Gate::finish).
pub async fn run_gated<T: Bench>(
    bench: &T,
    settings: &Settings,
    gate: Option<Arc<Gate>>,
) -> Recorded {
    bench.prepare().await;
    let (setup, _proxy) = bench.worker().await;
    for row in 0..settings.rows {
        setup.provision(row).await.expect("provision a row");
    }
    // The advancer's connection is warm too.
    if settings.advance_every.is_some() {
        bench.warm(&setup).await;
    }
    let recorder = Arc::new(Recorder {
        start: gate.as_ref().map_or_else(Instant::now, |g| g.origin()),
        calls: Mutex::new(Vec::new()),
        next_write: AtomicI64::new(1),
        pauses: AtomicU64::new(0),
        delays: AtomicU64::new(0),
        transactions: AtomicU64::new(0),
        caller: Mutex::new(CallerCounts::default()),
    });
    // Every worker is connected (and, where the bench warms its connections, warm)
    // before the run's clock starts.
    let mut workers = Vec::new();
    for _ in 0..settings.workers {
        let (store, proxy) = bench.worker().await;
        bench.warm(&store).await;
        let caller = if settings.mode == Mode::Fenced && settings.caller_connections > 0.0 {
            bench.caller().await
        } else {
            None
        };
        workers.push((store, proxy, caller));
    }
    for (_, _, caller) in &workers {
        if let Some(caller) = caller {
            let mut counts = recorder.caller.lock().unwrap();
            counts.connections += 1;
            counts.autocommit_capable += u64::from(caller.can_try_autocommit());
        }
    }
    let deadline = Instant::now() + settings.duration;
    let advancer = settings.advance_every.map(|every| {
        let (store, recorder) = (setup.clone(), Arc::clone(&recorder));
        tokio::spawn(advance_until(store, recorder, every, deadline))
    });
    let mut tasks = Vec::new();
    for (index, (store, proxy, caller)) in workers.into_iter().enumerate() {
        let recorder = Arc::clone(&recorder);
        let settings = *settings;
        let gate = gate.clone();
        tasks.push(tokio::spawn(async move {
            let mut worker = Worker {
                index,
                store,
                proxy,
                caller,
                gate,
                recorder,
                settings,
                rng: StdRng::seed_from_u64(settings.seed.wrapping_add(index as u64)),
                cuts_before: 0,
                cuts_after: 0,
                operation: None,
                next_cut: None,
            };
            worker.run(deadline).await;
            Faults {
                pauses: 0,
                cuts_before_execute: worker.cuts_before,
                cuts_after_commit: worker.cuts_after,
                delays: 0,
            }
        }));
    }
    let mut faults = Faults::default();
    for task in tasks {
        faults.add(&task.await.expect("a worker panicked"));
    }
    if let Some(advancer) = advancer {
        advancer.await.expect("the advancer panicked");
    }
    faults.pauses = recorder.pauses.load(Ordering::SeqCst);
    faults.delays = recorder.delays.load(Ordering::SeqCst);
    let calls = std::mem::take(&mut *recorder.calls.lock().unwrap());
    Recorded {
        calls,
        faults,
        transactions: recorder.transactions.load(Ordering::SeqCst),
        caller: *recorder.caller.lock().unwrap(),
    }
}

/// Advances the epoch every `every` until `deadline`, each advance recorded.
async fn advance_until<B: Backend>(
    store: Store<B>,
    recorder: Arc<Recorder>,
    every: Duration,
    deadline: Instant,
) {
    loop {
        tokio::time::sleep(every).await;
        if Instant::now() >= deadline {
            return;
        }
        let start_us = recorder.micros();
        let advanced = tokio::time::timeout(CALL_TIMEOUT, store.advance_epoch()).await;
        let end_us = recorder.micros();
        let (seen, epoch) = match advanced {
            Ok(Ok(epoch)) => (Seen::Applied, epoch),
            _ => (Seen::Failed, 0),
        };
        recorder.calls.lock().unwrap().push(Call {
            worker: usize::MAX,
            row: -1,
            op: Op::AdvanceEpoch,
            generation: epoch,
            write_id: None,
            lease_us: start_us,
            start_us,
            end_us,
            seen,
        });
    }
}

struct Worker<B: Backend + Clone + fenced_guard::Lend> {
    index: usize,
    store: Store<B>,
    proxy: Option<Proxy>,
    /// The worker's own connection, where the bench has one.
    caller: Option<Box<dyn Caller<B>>>,
    gate: Option<Arc<Gate>>,
    recorder: Arc<Recorder>,
    settings: Settings,
    rng: StdRng,
    cuts_before: u64,
    cuts_after: u64,
    /// The operation id of the publication in progress, if it carries one.
    operation: Option<Uuid>,
    /// A cut the next call takes instead of drawing its wire fault.
    next_cut: Option<Fault>,
}

/// A wire fault prepared for one call.
enum Wire {
    None,
    Cut(Fault),
    Delay,
}

impl<B: Backend + Clone + fenced_guard::Lend> Worker<B> {
    /// Whether the run goes on: before the deadline, and the gate not finished.
    fn goes_on(&self, deadline: Instant) -> bool {
        Instant::now() < deadline && !self.gate.as_ref().is_some_and(|g| g.is_finished())
    }

    /// Tells the gate, if any, the lease this worker works under now.
    fn at_work(&self, lease: Option<(i64, &Lease)>) {
        if let Some(gate) = &self.gate {
            gate.set_at_work(
                self.index,
                lease.map(|(row, lease)| AtWork {
                    row,
                    generation: lease.generation(),
                    owner: lease.owner(),
                }),
            );
        }
    }

    async fn run(&mut self, deadline: Instant) {
        if self.index < self.settings.claimers {
            return self.claim_and_work(deadline).await;
        }
        while self.goes_on(deadline) {
            let row = self.rng.random_range(0..self.settings.rows);
            let Some(lease) = self.acquire(row).await else {
                let idle = self.rng.random_range(2..15);
                tokio::time::sleep(Duration::from_millis(idle)).await;
                continue;
            };
            self.work(row, &lease).await;
        }
    }

    /// Claims one or more free rows (any of the table, or among the whole key list),
    /// then works under each lease in turn: the later ones may expire meanwhile, and
    /// their writes must then be refused.
    async fn claim_and_work(&mut self, deadline: Instant) {
        while self.goes_on(deadline) {
            let leases = self.claim().await;
            if leases.is_empty() {
                let idle = self.rng.random_range(2..15);
                tokio::time::sleep(Duration::from_millis(idle)).await;
                continue;
            }
            for lease in &leases {
                let row = match lease.key() {
                    Key::BigInt(row) => *row,
                    other => panic!("the workload's keys are bigint, not {other:?}"),
                };
                self.work(row, lease).await;
            }
        }
    }

    async fn claim(&mut self) -> Vec<Lease> {
        let rows = self.settings.rows;
        let limit = self
            .rng
            .random_range(1..=usize::try_from(rows).unwrap_or(1));
        let candidates = if self.rng.random_bool(0.5) {
            Candidates::any()
        } else {
            Candidates::keys(0..rows)
        };
        let wire = self.pick_wire();
        let gate = self.gate.clone();
        let _pass = pass(gate.as_deref(), self.index).await;
        let start_us = self.recorder.micros();
        let store = self.store.clone();
        let result = self
            .with_wire(wire, store.claim(&candidates, limit, self.settings.ttl))
            .await;
        let end_us = self.recorder.micros();
        let (seen, leases) = match result {
            Some(Ok(leases)) if leases.is_empty() => (Seen::Refused, leases),
            Some(Ok(leases)) => (Seen::Applied, leases),
            _ => (Seen::Failed, Vec::new()),
        };
        if leases.is_empty() {
            self.record(Call {
                worker: self.index,
                row: -1,
                op: Op::Claim,
                generation: 0,
                write_id: None,
                lease_us: start_us,
                start_us,
                end_us,
                seen,
            });
        }
        for lease in &leases {
            let Key::BigInt(row) = lease.key() else {
                panic!("the workload's keys are bigint, not {:?}", lease.key());
            };
            self.record(Call {
                worker: self.index,
                row: *row,
                op: Op::Claim,
                generation: lease.generation(),
                write_id: None,
                lease_us: start_us,
                start_us,
                end_us,
                seen,
            });
        }
        leases
    }

    /// Some updates, maybe a renewal, a publication, a release; any refusal ends the
    /// work under this lease (its result is discarded, as the guard's docs say).
    async fn work(&mut self, row: i64, lease: &Lease) {
        self.at_work(Some((row, lease)));
        let steps = self.rng.random_range(1..=3);
        for _ in 0..steps {
            self.maybe_pause().await;
            if self.rng.random_bool(0.25) {
                let seen = self.call(row, Op::Renew, lease, None).await;
                if seen == Seen::Refused {
                    return self.release(row, lease).await;
                }
            }
            let id = self.recorder.next_write.fetch_add(1, Ordering::SeqCst);
            let seen = self.call(row, Op::Update, lease, Some(id)).await;
            if seen == Seen::Refused {
                return self.release(row, lease).await;
            }
            let work = self.rng.random_range(1..10);
            tokio::time::sleep(Duration::from_millis(work)).await;
        }
        self.at_work(None);
        self.maybe_pause().await;
        let op = if self.rng.random_bool(0.5) {
            Op::PublishAndRelease
        } else {
            Op::Publish
        };
        let id = self.recorder.next_write.fetch_add(1, Ordering::SeqCst);
        let seen = match self.settings.mode {
            Mode::Fenced => self.publish_with_operation_id(row, op, lease, id).await,
            Mode::Naive => {
                let seen = self.call(row, op, lease, Some(id)).await;
                if seen == Seen::Failed {
                    // The acknowledgement may have been lost: publish again, as a
                    // caller without operation ids would.
                    let id = self.recorder.next_write.fetch_add(1, Ordering::SeqCst);
                    self.call(row, op, lease, Some(id)).await
                } else {
                    seen
                }
            }
        };
        if !(op == Op::PublishAndRelease && seen == Seen::Applied) {
            self.release(row, lease).await;
        }
    }

    /// A publication with an operation id; after an error, one retry with the same id
    /// (always safe), and then the id resolved, which the checker compares with the
    /// database. The retry carries the same write id: it is the same logical write.
    async fn publish_with_operation_id(
        &mut self,
        row: i64,
        op: Op,
        lease: &Lease,
        id: i64,
    ) -> Seen {
        self.operation = Some(Uuid::new_v4());
        // Only a publication whose first attempt was cut after commit, and whose retry
        // then returned, is resolved; at the wire's own rate a run on a slow server
        // could go without one, and the run would prove nothing of `resolve`.
        if self.proxy.is_some() && self.rng.random_bool(PUBLICATION_CUT_AFTER_COMMIT) {
            self.next_cut = Some(Fault::CutAfterCommit);
        }
        let mut seen = self.call(row, op, lease, Some(id)).await;
        if seen == Seen::Failed {
            seen = self.call(row, op, lease, Some(id)).await;
            if seen != Seen::Failed {
                // Every attempt has returned and the cut ones' connections are
                // closed: the resolution is final.
                self.call(row, Op::Resolve, lease, Some(id)).await;
            }
        }
        self.operation = None;
        seen
    }

    async fn release(&mut self, row: i64, lease: &Lease) {
        self.at_work(None);
        let _ = self.call(row, Op::Release, lease, None).await;
    }

    async fn maybe_pause(&mut self) {
        if self.rng.random_bool(self.settings.pause) {
            let ttl = self.settings.ttl;
            let extra = self.rng.random_range(ttl / 4..ttl);
            self.recorder.pauses.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(ttl + extra).await;
        }
    }

    fn pick_wire(&mut self) -> Wire {
        if let Some(fault) = self.next_cut.take() {
            return Wire::Cut(fault);
        }
        if self.proxy.is_none() || !self.rng.random_bool(self.settings.wire) {
            return Wire::None;
        }
        match self.rng.random_range(0..3) {
            0 => Wire::Cut(Fault::CutBeforeExecute),
            1 => Wire::Cut(Fault::CutAfterCommit),
            _ => Wire::Delay,
        }
    }

    async fn acquire(&mut self, row: i64) -> Option<Lease> {
        let wire = self.pick_wire();
        let gate = self.gate.clone();
        let _pass = pass(gate.as_deref(), self.index).await;
        let start_us = self.recorder.micros();
        let store = self.store.clone();
        let result = self
            .with_wire(wire, store.try_acquire(row, self.settings.ttl))
            .await;
        let end_us = self.recorder.micros();
        let (seen, lease) = match result {
            Some(Ok(Some(lease))) => (Seen::Applied, Some(lease)),
            Some(Ok(None)) => (Seen::Refused, None),
            _ => (Seen::Failed, None),
        };
        self.record(Call {
            worker: self.index,
            row,
            op: Op::Acquire,
            generation: lease.as_ref().map_or(0, Lease::generation),
            write_id: None,
            lease_us: start_us,
            start_us,
            end_us,
            seen,
        });
        lease
    }

    /// Runs `future` under the prepared wire fault and the call timeout; `None` when
    /// the timeout passed.
    async fn with_wire<T>(&mut self, wire: Wire, future: impl Future<Output = T>) -> Option<T> {
        let proxy = self.proxy.as_ref();
        match (&wire, proxy) {
            (Wire::Cut(fault), Some(proxy)) => proxy.arm(*fault),
            (Wire::Delay, Some(proxy)) => {
                self.recorder.delays.fetch_add(1, Ordering::SeqCst);
                proxy.set_delay(self.settings.ttl + self.settings.ttl / 2);
            }
            _ => {}
        }
        let result = tokio::time::timeout(CALL_TIMEOUT, future).await.ok();
        if let Some(proxy) = proxy {
            proxy.set_delay(Duration::ZERO);
            if let Wire::Cut(fault) = wire
                && proxy.disarm().is_none()
            {
                match fault {
                    Fault::CutBeforeExecute => self.cuts_before += 1,
                    Fault::CutAfterCommit => self.cuts_after += 1,
                }
            }
        }
        result
    }

    /// One protocol call with the lease, recorded.
    async fn call(&mut self, row: i64, op: Op, lease: &Lease, write_id: Option<i64>) -> Seen {
        let wire = self.pick_wire();
        let gate = self.gate.clone();
        let _pass = pass(gate.as_deref(), self.index).await;
        let start_us = self.recorder.micros();
        // A second handle on the same pool, so the call can borrow it while the wire
        // fault is managed.
        let store = self.store.clone();
        let mode = self.settings.mode;
        let worker = self.index;
        let operation = self.operation;
        let in_transaction = op == Op::Update
            && mode == Mode::Fenced
            && self.rng.random_bool(self.settings.transactions);
        // On the worker's own connection, taken for the call and put back after.
        let mut caller = (op == Op::Update
            && mode == Mode::Fenced
            && self.rng.random_bool(self.settings.caller_connections))
        .then(|| self.caller.take())
        .flatten();
        let autocommit_first = caller.as_ref().is_some_and(|c| c.can_try_autocommit())
            && self.rng.random_bool(self.settings.autocommit_attempts);
        let timeout = 4 * self.settings.ttl;
        let recorder = Arc::clone(&self.recorder);
        let result = self
            .with_wire(wire, async {
                let outcome = match op {
                    Op::Renew => store.renew(lease).await?,
                    Op::Release => store.release(lease).await?,
                    Op::Resolve => {
                        let op = operation.expect("a resolution has an operation id");
                        return Ok(if store.resolve(op).await?.is_applied() {
                            Seen::Applied
                        } else {
                            Seen::Refused
                        });
                    }
                    Op::Update | Op::Publish | Op::PublishAndRelease => {
                        let id = write_id.expect("a write has an id");
                        let columns = columns(op, lease.generation(), worker, id);
                        if let Some(operation) = operation {
                            return recorded(&store, op, lease, operation, &columns).await;
                        }
                        if let Some(caller) = caller.as_mut() {
                            let seen = caller
                                .fenced_update(&store, lease, &columns, autocommit_first)
                                .await?;
                            let mut counts = recorder.caller.lock().unwrap();
                            match seen.autocommit_refused {
                                Some(true) => counts.autocommit_refused += 1,
                                Some(false) => counts.autocommit_granted += 1,
                                None => {}
                            }
                            if seen.outcome.is_applied() {
                                counts.committed += 1;
                            }
                            seen.outcome
                        } else if in_transaction {
                            let outcome =
                                in_fenced_transaction(&store, lease, timeout, &columns).await?;
                            if outcome.is_applied() {
                                recorder.transactions.fetch_add(1, Ordering::SeqCst);
                            }
                            outcome
                        } else {
                            write(&store, mode, op, lease, &columns).await?
                        }
                    }
                    Op::Acquire | Op::Claim | Op::AdvanceEpoch => {
                        unreachable!("acquisitions and advances are recorded where made")
                    }
                };
                Ok::<_, fenced_guard::Error>(if outcome.is_applied() {
                    Seen::Applied
                } else {
                    Seen::Refused
                })
            })
            .await;
        let end_us = self.recorder.micros();
        if caller.is_some() {
            self.caller = caller;
        }
        let seen = match result {
            Some(Ok(seen)) => seen,
            _ => Seen::Failed,
        };
        self.record(Call {
            worker: self.index,
            row,
            op,
            generation: lease.generation(),
            write_id,
            lease_us: self.recorder.lease_us(lease),
            start_us,
            end_us,
            seen,
        });
        seen
    }

    fn record(&self, call: Call) {
        self.recorder.calls.lock().unwrap().push(call);
    }
}

/// Waits at `gate`, if any, before a call of `worker`; the guard is kept for the call.
async fn pass(gate: Option<&Gate>, worker: usize) -> Option<tokio::sync::RwLockReadGuard<'_, ()>> {
    match gate {
        Some(gate) => Some(gate.pass(worker).await),
        None => None,
    }
}

/// The application's columns of a write.
pub fn columns(op: Op, generation: i64, worker: usize, id: i64) -> [(&'static str, Value); 4] {
    let kind = if op == Op::Update {
        "update"
    } else {
        "publish"
    };
    [
        (
            "Payload",
            Value::from(format!(
                "worker {worker}, generation {generation}, write {id}"
            )),
        ),
        ("WriterGeneration", Value::I64(generation)),
        ("WriteId", Value::I64(id)),
        ("WriteKind", Value::from(kind)),
    ]
}

/// A fenced publication carrying operation id `operation`.
async fn recorded<B: Backend>(
    store: &Store<B>,
    op: Op,
    lease: &Lease,
    operation: Uuid,
    columns: &[(&str, Value)],
) -> fenced_guard::Result<Seen> {
    let outcome = if op == Op::PublishAndRelease {
        store
            .publish_and_release_op(lease, operation, columns)
            .await?
    } else {
        store.publish_op(lease, operation, columns).await?
    };
    Ok(match outcome {
        OperationOutcome::Applied => Seen::Applied,
        OperationOutcome::AlreadyApplied { .. } => Seen::AlreadyApplied,
        _ => Seen::Refused,
    })
}

/// An update inside a fenced transaction on a lent connection of the worker's pool:
/// checked and locked, written, committed; refused when the lease no longer holds.
async fn in_fenced_transaction<B: Backend + fenced_guard::Lend>(
    store: &Store<B>,
    lease: &Lease,
    timeout: Duration,
    columns: &[(&str, Value)],
) -> fenced_guard::Result<Outcome> {
    let Some(tx) = store.transaction(lease, timeout).await? else {
        return Ok(Outcome::Refused);
    };
    let outcome = tx.store().update(lease, columns).await?;
    if outcome.is_applied() {
        tx.commit().await?;
    } else {
        tx.rollback().await?;
    }
    Ok(outcome)
}

/// A write of the application's columns, fenced or naive.
pub async fn write<B: Backend>(
    store: &Store<B>,
    mode: Mode,
    op: Op,
    lease: &Lease,
    columns: &[(&str, Value)],
) -> fenced_guard::Result<Outcome> {
    match mode {
        Mode::Fenced => match op {
            Op::Update => store.update(lease, columns).await,
            Op::Publish => store.publish(lease, columns).await,
            _ => store.publish_and_release(lease, columns).await,
        },
        Mode::Naive => {
            let sql = naive_write(store.dialect(), store.table(), op);
            let mut params: Vec<Value> = columns.iter().map(|(_, v)| v.clone()).collect();
            params.push(Value::from(lease.key()));
            let rows = store.backend().execute(&sql, &params).await?;
            Ok(Outcome::from_rows(rows))
        }
    }
}

/// The negative control's write: the key alone decides which row, as a lock without
/// fencing leaves it. A publication sets the published generation without checking it.
/// Parameters: `Payload`, `WriterGeneration`, `WriteId`, `WriteKind`, the key.
pub fn naive_write(d: Dialect, table: &FencedTable, op: Op) -> String {
    let col = |name: &str| fenced_guard::Identifier::new(name).unwrap().quoted(d);
    let mut set = vec![
        format!("{} = {}", col("Payload"), d.placeholder(1)),
        format!("{} = {}", col("WriterGeneration"), d.placeholder(2)),
        format!("{} = {}", col("WriteId"), d.placeholder(3)),
        format!("{} = {}", col("WriteKind"), d.placeholder(4)),
    ];
    if op != Op::Update {
        set.push(format!(
            "{} = {}",
            table.published_column().quoted(d),
            d.placeholder(2)
        ));
    }
    if op == Op::PublishAndRelease {
        set.push(format!("{} = NULL", table.owner_column().quoted(d)));
        set.push(format!("{} = NULL", table.expiry_column().quoted(d)));
    }
    format!(
        "UPDATE {} SET {} WHERE {} = {}",
        table.name().quoted(d),
        set.join(", "),
        table.key_column().quoted(d),
        d.placeholder(5)
    )
}
