//! Batched renewal: many leases of one store renewed in one statement per round (per
//! [batch](BatchKeeperBuilder::batch_size)), each lease's outcome separately.
//!
//! [`Store::renew_many`] renews a list of leases now. A [`BatchKeeper`] does what a
//! [`Keeper`](crate::Keeper) does for each of many leases, with one task and one
//! statement per round for up to 1,024 of them: a lease the batch's statement refused is
//! revoked and its work's token cancelled at once, exactly as a keeper does, and the
//! others go on; a lease whose renewal cannot complete before its
//! [local deadline](Lease::local_deadline) is revoked at that deadline. The statement
//! carries, for each lease, the conditions of [`Store::renew`] (key, generation, owner,
//! unexpired by the database's clock, current epoch), so a late renewal never revives.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use fenced_guard::{BatchKeeper, Candidates, FencedTable, KeyType, Sqlite, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let table = FencedTable::builder().key_type(KeyType::BigInt).build()?;
//! let store = Store::new(Sqlite::open(dir.path().join("jobs.db")).await?, table);
//! store.create_schema().await?;
//! for job in 1..=100_i64 {
//!     store.provision(job).await?;
//! }
//! let leases = store.claim(&Candidates::any(), 100, Duration::from_secs(30)).await?;
//!
//! // One task renews all hundred, in one statement every 10 s.
//! let keeper = BatchKeeper::start(&store)?;
//! let kept = leases
//!     .iter()
//!     .map(|lease| keeper.keep(lease))
//!     .collect::<Result<Vec<_>, _>>()?;
//! // Each lease has its own token and its own loss, as with a `Keeper`.
//! assert!(kept.iter().all(|k| k.loss().is_none() && !k.token().is_cancelled()));
//! keeper.stop().await;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```
//!
//! Everything the [keeper's documentation](crate::keeper) says it cannot do holds here
//! too: a paused process renews nothing, cancellation is cooperative, and the fence, not
//! the keeper, is what protects the row.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use crate::claim::{key_from, padded};
use crate::dialect::{Dialect, batch};
use crate::error::{Error, Result};
use crate::executor::{Backend, Executor};
use crate::keeper::{KeeperBuilder, Loss};
use crate::lease::{AsLease, Lease};
use crate::outcome::Renewal;
use crate::store::{Store, ttl_millis};
use crate::value::{Key, Value};
use crate::wait::saturating_add;

/// The default number of leases per renewal statement.
pub const DEFAULT_BATCH_SIZE: usize = 1024;

/// The default number of renewal statements a [`BatchKeeper`] has in flight at once.
pub const DEFAULT_IN_FLIGHT: usize = 4;

/// The most leases one renewal statement carries on `dialect`: four parameters per
/// lease, under each database's limit on parameters (PostgreSQL 65,535, SQLite 32,766,
/// SQL Server 2,100).
pub fn max_batch_size(dialect: Dialect) -> usize {
    match dialect {
        Dialect::Postgres => 8192,
        Dialect::Sqlite => 4096,
        Dialect::Mssql => 512,
    }
}

impl<E: Executor> Store<E> {
    /// Renews every lease of `leases` (each for its own ttl) in statements of
    /// [`DEFAULT_BATCH_SIZE`] leases (at most [`max_batch_size`]), sent one after the
    /// other, and returns one outcome per lease, in order. Each lease's renewal is the
    /// one [`renew`](Store::renew) makes:
    /// applied only while the lease still holds (same generation and owner, unexpired
    /// by the database's clock, current epoch), so a late renewal never revives; each
    /// applied lease's local deadline moves to its ttl after its statement was sent.
    ///
    /// [`Renewal::Refused`] has the causes listed for [`renew`](Store::renew); a lease
    /// revoked locally is refused without being sent. [`Renewal::Locked`] (PostgreSQL
    /// and SQL Server) is a lease whose row another transaction holds locked, its own
    /// fenced transaction most likely: skipped rather than waited for, so that the other
    /// leases of the statement are renewed at once; a [`BatchKeeper`] tries it again.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`] or [`Error::InvalidTtl`] for any lease (nothing is sent);
    /// [`Error::Config`] for a store in procedure mode (there is no batch procedure);
    /// any database error. After an error the leases of that statement and of those not
    /// sent yet are in doubt; the leases of the statements before it were renewed.
    pub async fn renew_many<L: AsLease>(&self, leases: &[L]) -> Result<Vec<Renewal>> {
        let span = crate::trace::heard(|| {
            tracing::debug_span!(
                "fenced",
                step = "renew_many",
                table = %self.table().name(),
                leases = leases.len(),
                renewed = tracing::field::Empty,
            )
        });
        let outcomes = self.renew_many_inner(leases).instrument(span.clone()).await;
        if let Ok(outcomes) = &outcomes {
            span.record(
                "renewed",
                outcomes.iter().filter(|o| o.is_applied()).count(),
            );
        }
        outcomes
    }

    async fn renew_many_inner<L: AsLease>(&self, leases: &[L]) -> Result<Vec<Renewal>> {
        self.no_batch()?;
        let mut sent = Vec::with_capacity(leases.len());
        for (i, lease) in leases.iter().enumerate() {
            let lease = lease.as_lease();
            self.check_key(lease.key())?;
            ttl_millis(lease.ttl())?;
            if !lease.is_revoked() {
                sent.push((i, lease));
            }
        }
        let mut outcomes = vec![Renewal::Refused; leases.len()];
        let max = DEFAULT_BATCH_SIZE.min(max_batch_size(self.dialect()));
        for chunk in sent.chunks(max) {
            let size = padded(chunk.len(), max);
            let sql = batch::renew_batch(self.dialect(), self.table(), size);
            let chunk_leases: Vec<&Lease> = chunk.iter().map(|(_, lease)| *lease).collect();
            let sent_at = Instant::now();
            let renewed = self.renew_batch(&sql, size, &chunk_leases).await?;
            for (&(i, lease), renewal) in chunk.iter().zip(renewed) {
                if renewal.is_applied() {
                    lease.extend_local_deadline(saturating_add(sent_at, lease.ttl()));
                }
                outcomes[i] = renewal;
            }
        }
        Ok(outcomes)
    }

    /// Refuses a store in procedure mode.
    fn no_batch(&self) -> Result<()> {
        self.no_procedure("a batched renewal")
    }

    /// Runs `sql`, [`batch::renew_batch`] written for `size` leases, for `leases` (at
    /// most `size`, at least one; the rows past them repeat the first), and says for
    /// each lease whether its row was renewed, refused or skipped as locked. Checks
    /// nothing locally.
    async fn renew_batch(&self, sql: &str, size: usize, leases: &[&Lease]) -> Result<Vec<Renewal>> {
        let mut params = Vec::with_capacity(4 * size);
        for i in 0..size {
            let lease = leases.get(i).or(leases.first()).ok_or_else(|| {
                Error::Config("a batched renewal needs at least one lease".into())
            })?;
            params.push(Value::from(lease.key()));
            params.push(Value::I64(lease.generation()));
            params.push(Value::Uuid(lease.owner()));
            params.push(Value::I64(ttl_millis(lease.ttl())?));
        }
        let rows = self.backend().query_rows(sql, &params).await?;
        let key_type = self.table().key_type();
        let mut renewed: HashSet<(Key, i64, Uuid)> = HashSet::with_capacity(rows.len());
        let mut locked: HashSet<(Key, i64, Uuid)> = HashSet::new();
        for row in rows {
            let (Some(key), Some(generation), Some(owner)) = (
                row.first().and_then(|v| key_from(key_type, v)),
                row.get(1).and_then(Value::as_i64),
                row.get(2).and_then(Value::as_uuid),
            ) else {
                return Err(Error::UnexpectedResult(format!(
                    "a batched renewal returned {row:?}, expected a key, generation and owner"
                )));
            };
            // PostgreSQL's and SQL Server's statements say 0 for a row skipped as locked.
            if row.get(3).and_then(Value::as_i64) == Some(0) {
                locked.insert((key, generation, owner));
            } else {
                renewed.insert((key, generation, owner));
            }
        }
        Ok(leases
            .iter()
            .map(|l| {
                let lease = (l.key().clone(), l.generation(), l.owner());
                if renewed.contains(&lease) {
                    Renewal::Applied
                } else if locked.contains(&lease) {
                    Renewal::Locked
                } else {
                    Renewal::Refused
                }
            })
            .collect())
    }
}

/// Settings for a [`BatchKeeper`]: the renewal fraction and retry interval of a
/// [`Keeper`](crate::Keeper) (applied to each lease's own ttl), the leases per statement
/// and the statements in flight. Made by [`BatchKeeper::builder`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchKeeperBuilder {
    intervals: KeeperBuilder,
    batch_size: usize,
    in_flight: usize,
}

impl Default for BatchKeeperBuilder {
    fn default() -> Self {
        BatchKeeperBuilder {
            intervals: KeeperBuilder::default(),
            batch_size: DEFAULT_BATCH_SIZE,
            in_flight: DEFAULT_IN_FLIGHT,
        }
    }
}

impl BatchKeeperBuilder {
    /// As [`KeeperBuilder::renew_fraction`], for each lease: default one third of its
    /// ttl. A round renews every lease due, and with it those due within half their
    /// renewal interval, so that leases taken at different times come to share rounds.
    pub fn renew_fraction(mut self, fraction: f64) -> Self {
        self.intervals = self.intervals.renew_fraction(fraction);
        self
    }

    /// As [`KeeperBuilder::retry_interval`]: the pause before a lease whose statement
    /// failed with an error is sent again.
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.intervals = self.intervals.retry_interval(interval);
        self
    }

    /// How many leases one statement renews, at least 1. Default
    /// [`DEFAULT_BATCH_SIZE`], and never more than [`max_batch_size`] for the store's
    /// database (a larger value is lowered to it).
    pub fn batch_size(mut self, leases: usize) -> Self {
        self.batch_size = leases;
        self
    }

    /// How many statements may be in flight at once, at least 1. Default
    /// [`DEFAULT_IN_FLIGHT`]. Each holds one of the store's pooled connections.
    pub fn in_flight(mut self, statements: usize) -> Self {
        self.in_flight = statements;
        self
    }

    /// Starts a batch keeper for `store`'s leases: one task, no lease yet.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a renew fraction not strictly between 0 and 1, a zero
    /// retry interval, batch size or statements in flight, or a store in procedure
    /// mode.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like [`tokio::spawn`].
    pub fn start<B>(&self, store: &Store<B>) -> Result<BatchKeeper>
    where
        B: Backend + Clone + Send + Sync + 'static,
    {
        store.no_batch()?;
        // The fraction and retry interval do not depend on the ttl: check them now.
        self.intervals.intervals(Duration::from_secs(3600))?;
        if self.batch_size == 0 || self.in_flight == 0 {
            return Err(Error::Config(
                "a batch keeper needs a batch size and statements in flight of at least 1".into(),
            ));
        }
        let counters = Arc::new(Counters::default());
        let stop = CancellationToken::new();
        let (register, registrations) = mpsc::unbounded_channel();
        let batch_size = self.batch_size.min(max_batch_size(store.dialect()));
        let round = Round {
            store: store.clone(),
            batch_size,
            in_flight: self.in_flight,
            counters: Arc::clone(&counters),
            entries: HashMap::new(),
            due: BTreeSet::new(),
            deadlines: BTreeSet::new(),
            ready: VecDeque::new(),
            flying: HashMap::new(),
            statements: HashMap::new(),
            widest_window: Duration::ZERO,
            next_id: 0,
        };
        let task = tokio::spawn(round.run(registrations, stop.clone()));
        Ok(BatchKeeper {
            settings: *self,
            counters,
            register,
            stop,
            task: Some(task),
        })
    }
}

/// Renews many leases of one store in the background, one statement per round for up
/// to [`batch_size`](BatchKeeperBuilder::batch_size) of them, and fails closed for each
/// lease separately: a lease refused by the batch, or not renewed before its local
/// deadline, is revoked and its work's [`CancellationToken`] cancelled, the others go
/// on. See the [module documentation](crate::renewal).
///
/// Stopping or dropping the keeper ends every renewal; like a [`Keeper`](crate::Keeper)
/// it neither revokes nor releases the leases, which stay valid until their expiry.
#[derive(Debug)]
pub struct BatchKeeper {
    settings: BatchKeeperBuilder,
    counters: Arc<Counters>,
    register: mpsc::UnboundedSender<Registration>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Counters {
    statements: AtomicU64,
    kept: AtomicUsize,
}

/// What a kept lease shares with its [`KeptLease`].
#[derive(Debug, Default)]
struct Shared {
    loss: OnceLock<Loss>,
    lost: CancellationToken,
    /// Set when the [`KeptLease`] is stopped or dropped: renew it no more.
    stopped: AtomicBool,
}

#[derive(Debug)]
struct Registration {
    lease: Lease,
    token: CancellationToken,
    shared: Arc<Shared>,
    renew: Duration,
    retry: Duration,
}

impl BatchKeeper {
    /// Starts a batch keeper with the default settings (each lease renewed every third
    /// of its ttl, up to 1,024 per statement).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a store in procedure mode.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like [`tokio::spawn`].
    pub fn start<B>(store: &Store<B>) -> Result<BatchKeeper>
    where
        B: Backend + Clone + Send + Sync + 'static,
    {
        BatchKeeperBuilder::default().start(store)
    }

    /// Settings for a batch keeper.
    pub fn builder() -> BatchKeeperBuilder {
        BatchKeeperBuilder::default()
    }

    /// Keeps `lease` (a lease of the keeper's store) with a new cancellation token.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the renewal interval of the lease's ttl is zero, or the
    /// keeper's task is gone. A key of the wrong type or an invalid ttl is reported as
    /// a [`Loss::Errors`] of the lease, as a [`Keeper`](crate::Keeper) does.
    pub fn keep(&self, lease: &Lease) -> Result<KeptLease> {
        self.keep_with(lease, CancellationToken::new())
    }

    /// Keeps `lease`, cancelling `token` when authority over it is lost.
    ///
    /// # Errors
    ///
    /// As for [`keep`](BatchKeeper::keep).
    pub fn keep_with(&self, lease: &Lease, token: CancellationToken) -> Result<KeptLease> {
        let (renew, retry) = self.settings.intervals.intervals(lease.ttl())?;
        let shared = Arc::new(Shared::default());
        self.register
            .send(Registration {
                lease: lease.clone(),
                token: token.clone(),
                shared: Arc::clone(&shared),
                renew,
                retry,
            })
            .map_err(|_| Error::Config("the batch keeper's task has ended".into()))?;
        Ok(KeptLease {
            lease: lease.clone(),
            token,
            shared,
        })
    }

    /// How many leases the keeper renews now (those lost, released or stopped are
    /// counted until the keeper next looks at them).
    pub fn kept(&self) -> usize {
        self.counters.kept.load(Ordering::Relaxed)
    }

    /// How many renewal statements the keeper has sent so far.
    pub fn statements_sent(&self) -> u64 {
        self.counters.statements.load(Ordering::Relaxed)
    }

    /// Ends every renewal and waits for the task to finish. No lease is revoked or
    /// released.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take()
            && let Err(error) = task.await
            && error.is_panic()
        {
            std::panic::resume_unwind(error.into_panic());
        }
    }
}

impl Drop for BatchKeeper {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One lease kept by a [`BatchKeeper`]: its token and, once lost, why. Dropping or
/// [stopping](KeptLease::stop) it ends the lease's renewals without revoking it;
/// releasing the lease ends them too, without a loss.
#[derive(Debug)]
pub struct KeptLease {
    lease: Lease,
    token: CancellationToken,
    shared: Arc<Shared>,
}

impl KeptLease {
    /// The lease kept (a clone sharing its revocation and deadline).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The token cancelled when authority is lost: hand it to the work.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Why authority was lost, once it was.
    pub fn loss(&self) -> Option<Loss> {
        self.shared.loss.get().cloned()
    }

    /// Waits until authority is lost and says why: the lease is then revoked and the
    /// work's token cancelled. Never completes while renewals succeed, nor once the
    /// lease was released or the keeper stopped.
    pub async fn lost(&self) -> Loss {
        self.shared.lost.cancelled().await;
        self.loss().unwrap_or(Loss::Refused)
    }

    /// Ends this lease's renewals and returns why authority was lost, if it was. The
    /// lease is neither revoked nor released.
    pub fn stop(self) -> Option<Loss> {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.loss()
    }
}

impl Drop for KeptLease {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
    }
}

/// A lease as the keeper's task holds it.
struct Entry {
    lease: Lease,
    token: CancellationToken,
    shared: Arc<Shared>,
    renew: Duration,
    retry: Duration,
    /// When it is next due, while it waits in `Round::due`; `None` while its renewal is
    /// queued or in flight.
    due: Option<Instant>,
    /// Its local deadline as filed in `Round::deadlines`.
    deadline: Instant,
    /// Renewals failed with an error since the last that reached a verdict.
    attempts: u32,
    last: Option<Arc<Error>>,
}

/// What the keeper's task works with.
struct Round<B> {
    store: Store<B>,
    batch_size: usize,
    in_flight: usize,
    counters: Arc<Counters>,
    entries: HashMap<u64, Entry>,
    /// Leases waiting for their next renewal, by when it is due.
    due: BTreeSet<(Instant, u64)>,
    /// Every lease, by its local deadline.
    deadlines: BTreeSet<(Instant, u64)>,
    /// Leases gathered for a round and not sent yet.
    ready: VecDeque<u64>,
    /// The leases of each statement in flight.
    flying: HashMap<tokio::task::Id, Vec<u64>>,
    /// The statement for each padded batch size, rendered once.
    statements: HashMap<usize, Arc<str>>,
    /// The widest gathering window (half a renewal interval) of any lease kept.
    widest_window: Duration,
    next_id: u64,
}

/// A statement's answer: when it was sent, and which of its leases it renewed.
type Answer = (Instant, Result<Vec<Renewal>>);

impl<B> Round<B>
where
    B: Backend + Clone + Send + Sync + 'static,
{
    async fn run(
        mut self,
        mut registrations: mpsc::UnboundedReceiver<Registration>,
        stop: CancellationToken,
    ) {
        let mut statements: JoinSet<Answer> = JoinSet::new();
        loop {
            self.launch(&mut statements);
            let far = saturating_add(Instant::now(), Duration::from_secs(3600));
            let wake = [self.due.first(), self.deadlines.first()]
                .into_iter()
                .flatten()
                .map(|(at, _)| *at)
                .min()
                .unwrap_or(far);
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                registration = registrations.recv() => match registration {
                    Some(registration) => self.register(registration),
                    None => return,
                },
                Some(answer) = statements.join_next_with_id(), if !statements.is_empty() => {
                    self.settle(answer);
                }
                () = tokio::time::sleep_until(wake.into()) => {}
            }
            let now = Instant::now();
            self.expire(now);
            self.gather(now);
        }
    }

    fn register(&mut self, r: Registration) {
        let id = self.next_id;
        self.next_id += 1;
        let deadline = r.lease.local_deadline();
        // Due `renew` after the last renewal was sent, as a keeper's: the local deadline
        // is that instant plus the ttl.
        let due = deadline
            .checked_sub(r.lease.ttl().saturating_sub(r.renew))
            .unwrap_or_else(Instant::now);
        let invalid = self
            .store
            .check_key(r.lease.key())
            .and_then(|()| ttl_millis(r.lease.ttl()).map(drop))
            .err();
        if invalid.is_none() {
            self.widest_window = self.widest_window.max(r.renew / 2);
        }
        self.entries.insert(
            id,
            Entry {
                lease: r.lease,
                token: r.token,
                shared: r.shared,
                renew: r.renew,
                retry: r.retry,
                due: Some(due),
                deadline,
                attempts: 0,
                last: None,
            },
        );
        self.due.insert((due, id));
        self.deadlines.insert((deadline, id));
        self.counters.kept.fetch_add(1, Ordering::Relaxed);
        if let Some(error) = invalid {
            // Retrying cannot fix these.
            self.lose(
                id,
                Loss::Errors {
                    attempts: 1,
                    last: Arc::new(error),
                },
            );
        }
    }

    /// Moves every lease due now into the round, and with them those due within half
    /// their renewal interval, so that leases come to share rounds.
    fn gather(&mut self, now: Instant) {
        if self.due.first().is_none_or(|(at, _)| *at > now) {
            return;
        }
        let horizon = saturating_add(now, self.widest_window);
        let taken: Vec<(Instant, u64)> = self
            .due
            .iter()
            .take_while(|(at, _)| *at <= horizon)
            .filter(|(at, id)| {
                self.entries
                    .get(id)
                    .is_some_and(|e| at.saturating_duration_since(now) <= e.renew / 2)
            })
            .copied()
            .collect();
        for (at, id) in taken {
            self.due.remove(&(at, id));
            let Some(entry) = self.entries.get_mut(&id) else {
                continue;
            };
            entry.due = None;
            if entry.shared.stopped.load(Ordering::SeqCst) || entry.lease.is_released() {
                self.remove(id);
            } else if entry.lease.is_revoked() {
                // Revoked by someone else: the renewal would be refused without a round
                // trip, as `Store::renew` refuses it.
                self.lose(id, Loss::Refused);
            } else {
                self.ready.push_back(id);
            }
        }
    }

    /// Sends the gathered leases, a batch per statement, while statements may be sent.
    fn launch(&mut self, statements: &mut JoinSet<Answer>) {
        while statements.len() < self.in_flight && !self.ready.is_empty() {
            let mut ids = Vec::new();
            let mut leases = Vec::new();
            while ids.len() < self.batch_size {
                let Some(id) = self.ready.pop_front() else {
                    break;
                };
                if let Some(entry) = self.entries.get(&id) {
                    ids.push(id);
                    leases.push(entry.lease.clone());
                }
            }
            if ids.is_empty() {
                return;
            }
            let size = padded(ids.len(), self.batch_size);
            let store = self.store.clone();
            let sql = Arc::clone(self.statements.entry(size).or_insert_with(|| {
                batch::renew_batch(store.dialect(), store.table(), size).into()
            }));
            self.counters.statements.fetch_add(1, Ordering::Relaxed);
            let handle = statements.spawn(async move {
                let leases: Vec<&Lease> = leases.iter().collect();
                let sent_at = Instant::now();
                (sent_at, store.renew_batch(&sql, size, &leases).await)
            });
            self.flying.insert(handle.id(), ids);
        }
    }

    /// A statement's answer, lease by lease.
    fn settle(
        &mut self,
        answer: std::result::Result<(tokio::task::Id, Answer), tokio::task::JoinError>,
    ) {
        let (task, result) = match answer {
            Ok((task, (sent_at, result))) => (task, result.map(|r| (sent_at, r))),
            Err(error) => {
                let task = error.id();
                (task, Err(Error::Task(error)))
            }
        };
        let ids = self.flying.remove(&task).unwrap_or_default();
        let now = Instant::now();
        match result {
            Ok((sent_at, renewed)) => {
                for (id, renewal) in ids.into_iter().zip(renewed) {
                    let Some(entry) = self.entries.get_mut(&id) else {
                        continue; // lost at its deadline meanwhile
                    };
                    if renewal == Renewal::Locked {
                        // Its row is held (by its own fenced transaction, most likely):
                        // no error, and no refusal; the deadline decides, as ever.
                        let due = saturating_add(now, entry.retry);
                        self.reschedule(id, due);
                    } else if renewal.is_applied() {
                        let ttl = entry.lease.ttl();
                        entry
                            .lease
                            .extend_local_deadline(saturating_add(sent_at, ttl));
                        entry.attempts = 0;
                        entry.last = None;
                        let due = saturating_add(sent_at, entry.renew);
                        self.reschedule(id, due);
                    } else if entry.lease.is_released() {
                        // Given back meanwhile: the lease's end, not a loss.
                        self.remove(id);
                    } else {
                        self.lose(id, Loss::Refused);
                    }
                }
            }
            Err(error) => {
                tracing::debug!(
                    table = %self.store.table().name(),
                    leases = ids.len(),
                    error = &error as &dyn std::error::Error,
                    "batched lease renewal failed"
                );
                let error = Arc::new(error);
                for id in ids {
                    let Some(entry) = self.entries.get_mut(&id) else {
                        continue;
                    };
                    entry.attempts = entry.attempts.saturating_add(1);
                    entry.last = Some(Arc::clone(&error));
                    // The deadline, not the retry, decides when the lease fails closed.
                    let due = saturating_add(now, entry.retry);
                    self.reschedule(id, due);
                }
            }
        }
    }

    /// Files a lease as waiting, due at `due`, with its local deadline as it is now.
    fn reschedule(&mut self, id: u64, due: Instant) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        entry.due = Some(due);
        self.due.insert((due, id));
        let deadline = entry.lease.local_deadline();
        if deadline != entry.deadline {
            self.deadlines.remove(&(entry.deadline, id));
            entry.deadline = deadline;
            self.deadlines.insert((deadline, id));
        }
    }

    /// Fails closed every lease whose local deadline has come.
    fn expire(&mut self, now: Instant) {
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                return;
            }
            self.deadlines.remove(&(deadline, id));
            let Some(entry) = self.entries.get_mut(&id) else {
                continue;
            };
            // A clone of the lease may have been renewed elsewhere meanwhile.
            let current = entry.lease.local_deadline();
            if current > now {
                entry.deadline = current;
                self.deadlines.insert((current, id));
                continue;
            }
            if entry.shared.stopped.load(Ordering::SeqCst) || entry.lease.is_released() {
                self.remove(id);
                continue;
            }
            // Errors since the last success make the loss theirs, whether a retry is
            // waiting or in flight; otherwise the renewal was too slow.
            let loss = match &entry.last {
                Some(last) => Loss::Errors {
                    attempts: entry.attempts,
                    last: Arc::clone(last),
                },
                None => Loss::Deadline,
            };
            self.lose(id, loss);
        }
    }

    /// Forgets a lease without a loss.
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        if let Some(due) = entry.due {
            self.due.remove(&(due, id));
        }
        self.deadlines.remove(&(entry.deadline, id));
        self.counters.kept.fetch_sub(1, Ordering::Relaxed);
        Some(entry)
    }

    /// Fails a lease closed, as a [`Keeper`](crate::Keeper) does: revokes it, then
    /// records why, cancels the work's token and wakes whoever waits for the loss.
    fn lose(&mut self, id: u64, loss: Loss) {
        let Some(entry) = self.remove(id) else {
            return;
        };
        entry.lease.revoke();
        tracing::warn!(
            table = %self.store.table().name(),
            key = %entry.lease.key(),
            generation = entry.lease.generation(),
            error = &loss as &dyn std::error::Error,
            "lease lost; the work is cancelled and every write through the lease is refused"
        );
        let _ = entry.shared.loss.set(loss);
        entry.token.cancel();
        entry.shared.lost.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_fits_each_database_parameter_limit() {
        for (dialect, limit) in [
            (Dialect::Postgres, 65_535),
            (Dialect::Sqlite, 32_766),
            (Dialect::Mssql, 2_100),
        ] {
            assert!(4 * max_batch_size(dialect) <= limit, "{dialect}");
        }
        assert!(DEFAULT_BATCH_SIZE <= max_batch_size(Dialect::Postgres));
    }
}
