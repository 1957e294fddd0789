//! The protocol, written once over an [`Executor`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::dialect::procedures::{MssqlProcedures, Procedure};
use crate::dialect::{self, Dialect, FencedSql, Statements};
use crate::error::{Error, Result};
use crate::executor::Executor;
use crate::executor::IntoExecutor;
use crate::lease::{AsLease, Lease, LeaseState};
use crate::operation::{OperationOutcome, Resolution, is_unique_violation};
use crate::outcome::Outcome;
use crate::table::{FencedTable, Identifier};
use crate::trace;
use crate::value::{Key, Value};
use crate::wait::Wait;

/// The longest lease accepted: `i32::MAX` milliseconds (about 24.8 days), the most SQL
/// Server's `DATEADD(millisecond, …)` takes.
pub const MAX_TTL: Duration = Duration::from_millis(i32::MAX as u64);

/// The fencing protocol for one table on one backend.
///
/// Every statement is a single autocommitted statement (except a write carrying an
/// operation id on SQLite, which is the write and its record in one `BEGIN IMMEDIATE`
/// transaction); the protocol's statements are
/// rendered once, when the store is made, and each shape of caller write (which columns)
/// once, when first used. Every validity check runs in the database,
/// against the database's clock.
///
/// # What a refusal means
///
/// [`Outcome::Refused`] means the statement matched no row. The database does not say
/// why, and neither does the store: several causes are possible for each operation (they
/// are listed on each method). A refusal never means that a driver, network or SQL error
/// happened: those are [`Error`]s. Conversely, an error does not prove that nothing
/// happened: a statement may commit and its acknowledgement be lost. A publication
/// retried after such a loss is refused (this generation already published), so a
/// refusal after an error is ambiguous; read the row (its published generation) to
/// tell, or better, give the write an operation id ([`publish_op`](Store::publish_op)
/// and the other `_op` methods) and [`resolve`](Store::resolve) it.
///
/// # Recovery epoch
///
/// Every acquisition stamps the row with the current recovery epoch, and every fenced
/// write and renewal requires the row's epoch to be the current one. After a restore
/// from backup or an asynchronous failover, [`advance_epoch`](Store::advance_epoch)
/// invalidates every lease issued before, even where a restored row matches one again.
///
/// On PostgreSQL the stamp also carries the server's timeline (unless the table was
/// built with [`stamp_timeline(false)`](crate::FencedTableBuilder::stamp_timeline)):
/// a promotion of a standby and a point-in-time restore raise it, and so end every
/// lease acquired before them with no call at all. What a timeline does not see still
/// needs [`advance_epoch`](Store::advance_epoch): a logical restore (`pg_dump`), a
/// restore onto a new cluster, a copy of the data directory started without archive
/// recovery (a disk snapshot), and every restore and failover on SQL Server and SQLite.
///
/// After a refusal, the work done under that lease must be discarded: acquiring a new
/// lease and publishing the old result under it would authorise old work under a new
/// ownership generation. Build again under the new lease. Log a refusal as "refused",
/// not as "another worker took over": that is only one of its causes.
#[derive(Clone, Debug)]
pub struct Store<B> {
    backend: B,
    // Shared, so that a view of the store on another executor (`Store::on`) costs no
    // rendering and no copy of the statements.
    table: Arc<FencedTable>,
    statements: Arc<Statements>,
    writes: Arc<Mutex<RenderedWrites>>,
    procedures: Option<Arc<Calls>>,
    claim_starts: Arc<crate::claim::start::Starts>,
}

/// How a store in procedure mode calls each procedure.
#[derive(Debug)]
struct Calls {
    procedures: MssqlProcedures,
    publish: String,
    publish_recorded: String,
    publish_and_release: String,
    publish_and_release_recorded: String,
}

/// Which statement a caller write is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum WriteKind {
    Update,
    Publish,
    PublishAndRelease,
    UpdateRecorded,
    PublishRecorded,
    PublishAndReleaseRecorded,
    UpdateLocking,
    PublishLocking,
    PublishAndReleaseLocking,
}

/// A fenced write of the lease's row that also takes a
/// [`DeferredTransaction`](crate::DeferredTransaction)'s lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockingWrite {
    Update,
    Publish,
    PublishAndRelease,
}

/// How many caller-write shapes a store keeps rendered before starting over.
const MAX_CACHED_WRITES: usize = 256;

/// The caller writes a store has rendered, found again by the column names exactly as
/// the caller gives them, so that a write of a shape seen before neither allocates nor
/// validates its names again: they were validated when it was rendered.
#[derive(Debug, Default)]
struct RenderedWrites {
    /// Keyed by [`shape_hash`]; a bucket holds the shapes whose hashes collide.
    by_hash: HashMap<u64, Vec<RenderedWrite>, BuildHasherDefault<ShapeHasher>>,
}

#[derive(Debug)]
struct RenderedWrite {
    kind: WriteKind,
    columns: Box<[Identifier]>,
    sql: Arc<str>,
}

impl RenderedWrites {
    fn find(&self, hash: u64, kind: WriteKind, assignments: &[(&str, Value)]) -> Option<&Arc<str>> {
        self.by_hash.get(&hash)?.iter().find_map(|w| {
            let same = w.kind == kind
                && w.columns.len() == assignments.len()
                && w.columns
                    .iter()
                    .zip(assignments)
                    .all(|(c, (name, _))| c.as_str() == *name);
            same.then_some(&w.sql)
        })
    }

    /// How many shapes are rendered. Counted only when one is added, which is rare.
    fn len(&self) -> usize {
        self.by_hash.values().map(Vec::len).sum()
    }

    fn insert(&mut self, hash: u64, write: RenderedWrite) {
        if self.len() >= MAX_CACHED_WRITES {
            self.by_hash.clear();
        }
        self.by_hash.entry(hash).or_default().push(write);
    }
}

/// The hash of a caller write's shape: its kind and its column names as given.
fn shape_hash(kind: WriteKind, assignments: &[(&str, Value)]) -> u64 {
    let mut hasher = ShapeHasher::default();
    kind.hash(&mut hasher);
    for (name, _) in assignments {
        name.hash(&mut hasher);
    }
    hasher.finish()
}

/// FNV-1a (64-bit). A shape is a few short names chosen by the application's code, for
/// which SipHash's setup and finish cost more than the hashing itself; nothing here
/// needs a keyed hash.
struct ShapeHasher(u64);

impl Default for ShapeHasher {
    fn default() -> Self {
        ShapeHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for ShapeHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// What a caller write runs.
enum CallerWrite<'a> {
    /// A rendered statement.
    Statement(Arc<str>),
    /// A procedure call (a store in procedure mode).
    Procedure(&'a Calls),
}

impl<B: Executor> Store<B> {
    /// A store for `table` on `backend`.
    pub fn new(backend: B, table: FencedTable) -> Self {
        let statements = Statements::render(backend.dialect(), &table);
        Store {
            backend,
            table: Arc::new(table),
            statements: Arc::new(statements),
            writes: Arc::default(),
            procedures: None,
            claim_starts: Arc::default(),
        }
    }

    /// Makes this store run the protocol through the stored procedures of
    /// [`MssqlProcedures`] (install them first, with its scripts), for a deployment
    /// whose application role may execute them but not write the tables.
    ///
    /// In this mode provision, acquisition, renewal, release, the publications (with or
    /// without an operation id) and the epoch advance call their procedures; reads
    /// ([`resolve`](Store::resolve), [`current_epoch`](Store::current_epoch)) stay
    /// `SELECT`s. A publication must assign exactly the table's declared application
    /// columns, in any order, since the procedure sets them all. [`update`](Store::update),
    /// [`update_op`](Store::update_op), [`execute_fenced`](Store::execute_fenced) and
    /// fenced transactions have no procedure and fail with [`Error::Config`].
    ///
    /// # Errors
    ///
    /// [`Error::Config`] on a backend other than SQL Server;
    /// [`Error::InvalidIdentifier`] when a procedure name would be too long.
    pub fn through_procedures(mut self) -> Result<Self> {
        if self.dialect() != Dialect::Mssql {
            return Err(Error::Config(format!(
                "stored procedures are generated for sql server, not {}",
                self.dialect()
            )));
        }
        let procedures = MssqlProcedures::new(&self.table)?;
        let statements = Arc::make_mut(&mut self.statements);
        statements.provision = procedures.call(Procedure::Provision, false);
        statements.acquire = procedures.call(Procedure::Acquire, false);
        statements.renew = procedures.call(Procedure::Renew, false);
        statements.release = procedures.call(Procedure::Release, false);
        statements.advance_epoch = procedures.call(Procedure::AdvanceEpoch, false);
        self.procedures = Some(Arc::new(Calls {
            publish: procedures.call(Procedure::Publish, false),
            publish_recorded: procedures.call(Procedure::Publish, true),
            publish_and_release: procedures.call(Procedure::PublishAndRelease, false),
            publish_and_release_recorded: procedures.call(Procedure::PublishAndRelease, true),
            procedures,
        }));
        Ok(self)
    }

    /// `true` when the store runs through stored procedures
    /// ([`through_procedures`](Store::through_procedures)).
    pub fn uses_procedures(&self) -> bool {
        self.procedures.is_some()
    }

    /// The procedures this store calls, in procedure mode.
    pub fn procedures(&self) -> Option<&MssqlProcedures> {
        self.procedures.as_deref().map(|calls| &calls.procedures)
    }

    /// Rows changed by a protocol statement, or by its procedure (which reports them
    /// as its result row).
    async fn rows(&self, sql: &str, params: &[Value]) -> Result<u64> {
        if self.procedures.is_some() {
            let rows = self.backend.query_i64(sql, params).await?.unwrap_or(0);
            Ok(u64::try_from(rows).unwrap_or(0))
        } else {
            self.backend.execute(sql, params).await
        }
    }

    pub(crate) fn no_procedure(&self, what: &str) -> Result<()> {
        if self.procedures.is_some() {
            return Err(Error::Config(format!(
                "{what} has no stored procedure; a store running through procedures cannot send it"
            )));
        }
        Ok(())
    }

    /// The caller's values in the declared column order, for a publication procedure.
    fn procedure_values(&self, assignments: &[(&str, Value)]) -> Result<Vec<Value>> {
        let declared = self.table.columns();
        let mut values = Vec::with_capacity(declared.len());
        for column in declared {
            let mut given = assignments.iter().filter(|(n, _)| column.name().same_as(n));
            match (given.next(), given.next()) {
                (Some((_, v)), None) => values.push(v.clone()),
                _ => {
                    return Err(Error::Config(format!(
                        "a publication through procedures assigns every declared column once; \
                         column {} is missing or repeated",
                        column.name()
                    )));
                }
            }
        }
        if assignments.len() != declared.len() {
            return Err(Error::Config(
                "a publication through procedures assigns only the declared columns".into(),
            ));
        }
        Ok(values)
    }

    /// This store's protocol on a connection, transaction or pool of the caller's
    /// ([`crate::connection`]): the same statements, rendered once for the store, run
    /// there instead of on the store's own executor. Cheap: nothing is rendered or
    /// copied, and nothing is sent.
    ///
    /// ```no_run
    /// # #[cfg(feature = "postgres")]
    /// # async fn run(store: &fenced_guard::Store<fenced_guard::Postgres>, client: &mut fenced_guard::tokio_postgres::Client, lease: &fenced_guard::Lease) -> Result<(), Box<dyn std::error::Error>> {
    /// use fenced_guard::Value;
    ///
    /// let mut tx = client.transaction().await?;
    /// // The lease's row is checked and locked until `tx` ends.
    /// let Some(fenced) = store.on(&mut tx)?.fence(lease).await? else {
    ///     return Ok(()); // the lease is gone: `tx` rolls back when dropped
    /// };
    /// fenced
    ///     .execute(
    ///         "INSERT INTO report_line (report, line) VALUES ($1, $2)",
    ///         &[Value::from(lease.key()), Value::from("total: 3")],
    ///     )
    ///     .await?;
    /// fenced.store().publish(lease, &[]).await?;
    /// drop(fenced);
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the connection's database is not the store's dialect.
    pub fn on<C: IntoExecutor>(&self, connection: C) -> Result<Store<C::Executor>> {
        let executor = connection.into_executor();
        if executor.dialect() != self.dialect() {
            return Err(Error::Config(format!(
                "this store renders {} statements; the connection given is {}",
                self.dialect(),
                executor.dialect()
            )));
        }
        Ok(self.with_executor(executor))
    }

    /// This store on `executor`, sharing everything else.
    pub(crate) fn with_executor<E>(&self, executor: E) -> Store<E> {
        Store {
            backend: executor,
            table: Arc::clone(&self.table),
            statements: Arc::clone(&self.statements),
            writes: Arc::clone(&self.writes),
            procedures: self.procedures.clone(),
            claim_starts: Arc::clone(&self.claim_starts),
        }
    }

    /// The executor, given up.
    pub(crate) fn into_executor(self) -> B {
        self.backend
    }

    pub(crate) fn statements(&self) -> &Statements {
        &self.statements
    }

    /// Where this store's claims of one row start, shared by its clones and views.
    pub(crate) fn claim_starts(&self) -> &crate::claim::start::Starts {
        &self.claim_starts
    }

    /// The backend, for example to run raw statements.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The fenced table.
    pub fn table(&self) -> &FencedTable {
        &self.table
    }

    /// The table, shared: what a memo of the table's readings holds on to.
    pub(crate) fn shared_table(&self) -> &Arc<FencedTable> {
        &self.table
    }

    /// The backend's dialect.
    pub fn dialect(&self) -> Dialect {
        self.backend.dialect()
    }

    /// Creates, each if it does not exist, the fenced table, the epoch table (and its
    /// row, with epoch 1) and the outcomes table; their schemas, if any, must exist.
    /// Existing tables, and an existing epoch, are left as they are.
    ///
    /// # Errors
    ///
    /// Any database error.
    pub async fn create_schema(&self) -> Result<()> {
        self.backend
            .execute_batch(&self.statements.create_schema)
            .await
    }

    /// Inserts the row for `key` with generation 0 if it does not exist yet. Never
    /// touches an existing row: its generation is never reset. Returns `true` when the
    /// row was created, `false` when it already existed.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`] for a key of the wrong type; any database error, including a
    /// missing table.
    pub async fn provision(&self, key: impl Into<Key>) -> Result<bool> {
        let key = key.into();
        let span = trace::step("provision", &self.table, &key, None);
        trace::traced(span, async {
            self.check_key(&key)?;
            let rows = self.rows(&self.statements.provision, &[key.into()]).await?;
            Ok(rows > 0)
        })
        .await
    }

    /// One attempt to acquire the row for `key` for `ttl`: bumps the generation and
    /// installs a new random owner, if the row is free (never leased, released, or
    /// expired by the database's clock).
    ///
    /// `None` means the row is held by an unexpired lease. It never means an error.
    /// A refused acquisition reads the row once more, to tell a held row from a
    /// missing one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTtl`] for a ttl under 1 ms or above [`MAX_TTL`]; [`Error::KeyType`];
    /// [`Error::NotProvisioned`] when the table has no row for `key` (a mistyped key
    /// must not look held forever); any database error, including a missing table.
    pub async fn try_acquire(&self, key: impl Into<Key>, ttl: Duration) -> Result<Option<Lease>> {
        let key = key.into();
        let span = trace::step("try_acquire", &self.table, &key, None);
        trace::traced(span, async {
            self.check_key(&key)?;
            let ttl_ms = ttl_millis(ttl)?;
            let owner = Uuid::new_v4();
            let acquired_at = Instant::now();
            let row = self
                .backend
                .query_row(
                    &self.statements.acquire,
                    &[Value::from(&key), Value::Uuid(owner), Value::I64(ttl_ms)],
                )
                .await?;
            let Some(row) = row else {
                self.inspect_row(&key).await?;
                return Ok(None);
            };
            let (Some(generation), epoch) = (
                row.first().and_then(Value::as_i64),
                row.get(1).and_then(Value::as_i64),
            ) else {
                return Err(Error::UnexpectedResult(format!(
                    "acquisition returned {row:?}, expected the new generation"
                )));
            };
            Ok(Some(
                Lease::from_parts(key, owner, generation, ttl, acquired_at).with_epoch(epoch),
            ))
        })
        .await
    }

    /// Acquires the row for `key`, retrying with jittered exponential backoff until
    /// `wait`'s deadline. `None` when the deadline passed without acquiring: the row
    /// stayed held.
    ///
    /// # Errors
    ///
    /// [`Error::Cancelled`] as soon as `cancel` is cancelled (checked before each attempt
    /// and during each backoff); every error of [`try_acquire`](Store::try_acquire),
    /// which ends the wait at once.
    pub async fn acquire(
        &self,
        key: impl Into<Key>,
        ttl: Duration,
        wait: &Wait,
        cancel: &CancellationToken,
    ) -> Result<Option<Lease>> {
        let key = key.into();
        let mut attempt = 0u32;
        loop {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            if let Some(lease) = self.try_acquire(key.clone(), ttl).await? {
                return Ok(Some(lease));
            }
            let now = Instant::now();
            if now >= wait.deadline() {
                return Ok(None);
            }
            let pause = wait.sleep_for(attempt, now);
            attempt = attempt.saturating_add(1);
            tokio::select! {
                () = cancel.cancelled() => return Err(Error::Cancelled),
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// The lease state of the row for `key`, read in one statement by the database's
    /// clock: its holder, generation, expiry, published generation and epochs. For
    /// diagnostics and operations: a decision to write must still go through the
    /// fence, since the row may change the moment after it was read.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`]; [`Error::NotProvisioned`] when the table has no row for
    /// `key`; any database error.
    pub async fn inspect(&self, key: impl Into<Key>) -> Result<LeaseState> {
        let key = key.into();
        self.check_key(&key)?;
        self.inspect_row(&key).await
    }

    async fn inspect_row(&self, key: &Key) -> Result<LeaseState> {
        let row = self
            .backend
            .query_row(&self.statements.inspect, &[Value::from(key)])
            .await?
            .ok_or_else(|| Error::NotProvisioned {
                table: self.table.name().to_string(),
                key: key.clone(),
            })?;
        let unexpected = || Error::UnexpectedResult(format!("the row's lease read as {row:?}"));
        let int = |i: usize| row.get(i).and_then(Value::as_i64);
        let optional_int = |i: usize| match row.get(i) {
            Some(Value::Null) => Ok(None),
            Some(Value::I64(v)) => Ok(Some(*v)),
            _ => Err(unexpected()),
        };
        let holder = match row.first() {
            Some(Value::Null) => None,
            Some(owner) => Some(owner.as_uuid().ok_or_else(unexpected)?),
            None => return Err(unexpected()),
        };
        Ok(LeaseState {
            holder,
            generation: int(1).ok_or_else(unexpected)?,
            published_generation: int(2).ok_or_else(unexpected)?,
            epoch: int(3).ok_or_else(unexpected)?,
            expires_at_ms: optional_int(4)?,
            now_ms: int(5).ok_or_else(unexpected)?,
            current_epoch: optional_int(6)?,
        })
    }

    /// Extends the lease to `now + ttl` (the lease's own ttl), only while it still holds:
    /// same generation and owner, and not yet expired by the database's clock. A late
    /// renewal never revives a lease.
    ///
    /// `Refused` means: the lease expired, or it was released, or a successor acquired
    /// the row, or the recovery epoch was advanced since it was acquired, or the lease was revoked locally (then nothing was sent). In every case
    /// the caller no longer holds the row and must stop.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`]; any database error.
    pub async fn renew(&self, lease: &impl AsLease) -> Result<Outcome> {
        let lease = lease.as_lease();
        let span = trace::step("renew", &self.table, lease.key(), Some(lease.generation()));
        trace::traced(span, async {
            self.check_key(lease.key())?;
            if lease.is_revoked() {
                return Ok(Outcome::Refused);
            }
            let ttl_ms = ttl_millis(lease.ttl())?;
            let sent_at = Instant::now();
            let [key, generation, owner] = lease_params(lease);
            let params = [key, generation, owner, Value::I64(ttl_ms)];
            let outcome = Outcome::from_rows(self.rows(&self.statements.renew, &params).await?);
            if outcome.is_applied() {
                lease.extend_local_deadline(crate::wait::saturating_add(sent_at, lease.ttl()));
            }
            Ok(outcome)
        })
        .await
    }

    /// A fenced update of the caller's own columns (`(column, value)` pairs; names
    /// validated and quoted, values bound), applied only while the lease holds.
    ///
    /// `Refused` means: the lease expired, or it was released, or a successor acquired
    /// the row, or the recovery epoch was advanced since it was acquired, or the lease was revoked locally (then nothing was sent). It does not say
    /// which.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for no assignments; [`Error::InvalidIdentifier`] or
    /// [`Error::ProtectedColumn`] for a bad column name; [`Error::KeyType`]; any database
    /// error, including a column that does not exist.
    pub async fn update(
        &self,
        lease: &impl AsLease,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        let lease = lease.as_lease();
        let span = trace::step("update", &self.table, lease.key(), Some(lease.generation()));
        trace::traced(span, async {
            self.no_procedure("a fenced update")?;
            if assignments.is_empty() {
                return Err(Error::Config("an update needs at least one column".into()));
            }
            let sql = self.write_sql(WriteKind::Update, assignments)?;
            self.check_key(lease.key())?;
            if lease.is_revoked() {
                return Ok(Outcome::Refused);
            }
            self.run_fenced(lease, &sql, assignments.iter().map(|(_, v)| v.clone()))
                .await
        })
        .await
    }

    /// The article's publication: writes the caller's columns and sets the published
    /// generation to the lease's generation, only while the lease holds and only once per
    /// generation.
    ///
    /// `Refused` means: the lease expired, or it was released, or a successor acquired
    /// the row, or the recovery epoch was advanced since it was acquired, or **this generation already published** (which is also what a retry
    /// sees after a publication whose acknowledgement was lost), or the lease was revoked
    /// locally (then nothing was sent). It does not say which: log "publication refused",
    /// not "another worker took over".
    ///
    /// # Errors
    ///
    /// As for [`update`](Store::update), except that no caller columns is allowed.
    pub async fn publish(
        &self,
        lease: &impl AsLease,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        let lease = lease.as_lease();
        let span = trace::step(
            "publish",
            &self.table,
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, async {
            self.publish_inner(lease.as_lease(), assignments, false)
                .await
        })
        .await
    }

    /// [`publish`](Store::publish) and [`release`](Store::release) in one statement: on
    /// success the row is published by this generation and free for the next owner.
    ///
    /// `Refused` means the same as for [`publish`](Store::publish); nothing was written
    /// and the lease was not released (it will expire, or call
    /// [`release`](Store::release)).
    ///
    /// # Errors
    ///
    /// As for [`publish`](Store::publish).
    pub async fn publish_and_release(
        &self,
        lease: &impl AsLease,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        let lease = lease.as_lease();
        let span = trace::step(
            "publish_and_release",
            &self.table,
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, async {
            let outcome = self.publish_inner(lease, assignments, true).await?;
            if outcome.is_applied() {
                lease.mark_released();
            }
            Ok(outcome)
        })
        .await
    }

    /// Gives the row back: clears owner and expiry where generation and owner still
    /// match. There is no expiry check, so a release after expiry but before any
    /// successor still frees the row. The generation is kept. A revoked lease is still
    /// released.
    ///
    /// `Refused` means: a successor acquired the row (its owner and generation are left
    /// untouched), or this lease was already released, or the row is gone.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`]; any database error.
    pub async fn release(&self, lease: &impl AsLease) -> Result<Outcome> {
        let lease = lease.as_lease();
        let span = trace::step(
            "release",
            &self.table,
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, async {
            self.check_key(lease.key())?;
            let rows = self
                .rows(&self.statements.release, &lease_params(lease))
                .await?;
            let outcome = Outcome::from_rows(rows);
            if outcome.is_applied() {
                lease.mark_released();
            }
            Ok(outcome)
        })
        .await
    }

    /// Runs the caller's own statement that already carries the fence (see
    /// [`FencedSql`] for the convention): binds `params` as `1..=n` and the lease's key,
    /// generation and owner as `n + 1`, `n + 2`, `n + 3`.
    ///
    /// `Refused` means the statement matched no row: the fence refused it (expired,
    /// released, superseded, or for a publication, already published), or the caller's
    /// own conditions matched nothing, or the lease was revoked locally (then nothing was
    /// sent).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when `sql` was made for another table, takes another number
    /// of values or was written for another database only ([`FencedSql::only`]);
    /// [`Error::KeyType`]; any database error.
    pub async fn execute_fenced(
        &self,
        lease: &impl AsLease,
        sql: &FencedSql,
        params: &[Value],
    ) -> Result<Outcome> {
        let lease = lease.as_lease();
        let span = trace::step(
            "execute_fenced",
            &self.table,
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, async {
            self.no_procedure("caller sql")?;
            let text = sql.check_use(&self.table, self.dialect(), params.len())?;
            self.check_key(lease.key())?;
            if lease.is_revoked() {
                return Ok(Outcome::Refused);
            }
            self.run_fenced(lease, text, params.iter().cloned()).await
        })
        .await
    }

    /// [`update`](Store::update) carrying operation id `op`: the outcome is recorded in
    /// the outcomes table atomically with the write (see [`crate::operation`]).
    ///
    /// [`OperationOutcome::Refused`] has the causes listed for
    /// [`update`](Store::update); [`OperationOutcome::AlreadyApplied`] means an earlier
    /// attempt with `op` applied and nothing was written now.
    ///
    /// After an [`Error`] the write may or may not have committed: call
    /// [`resolve`](Store::resolve), or retry with the same `op` (always safe).
    ///
    /// # Errors
    ///
    /// As for [`update`](Store::update); [`Error::OperationReused`] when `op` was
    /// applied to another key (nothing is written: an operation id belongs to one key).
    pub async fn update_op(
        &self,
        lease: &impl AsLease,
        op: Uuid,
        assignments: &[(&str, Value)],
    ) -> Result<OperationOutcome> {
        let lease = lease.as_lease();
        let span = trace::step(
            "update_op",
            &self.table,
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, async {
            self.no_procedure("a fenced update")?;
            if assignments.is_empty() {
                return Err(Error::Config("an update needs at least one column".into()));
            }
            let sql = self.write_sql(WriteKind::UpdateRecorded, assignments)?;
            self.check_key(lease.key())?;
            if lease.is_revoked() {
                return Ok(OperationOutcome::Refused);
            }
            let values = assignments.iter().map(|(_, v)| v.clone()).collect();
            self.run_recorded(lease, op, &sql, values).await
        })
        .await
    }

    /// [`publish`](Store::publish) carrying operation id `op`, recorded atomically with
    /// the publication. A retry of an applied publication with the same `op` answers
    /// [`OperationOutcome::AlreadyApplied`] and never publishes twice.
    ///
    /// [`OperationOutcome::Refused`] has the causes listed for
    /// [`publish`](Store::publish), except that a retry of this same operation is
    /// recognised and answered `AlreadyApplied` instead.
    ///
    /// # Errors
    ///
    /// As for [`publish`](Store::publish); [`Error::OperationReused`] when `op` was
    /// applied to another key. After an error, the publication may or may
    /// not have committed: [`resolve`](Store::resolve) `op` to know.
    pub async fn publish_op(
        &self,
        lease: &impl AsLease,
        op: Uuid,
        assignments: &[(&str, Value)],
    ) -> Result<OperationOutcome> {
        let lease = lease.as_lease();
        let span = trace::step(
            "publish_op",
            &self.table,
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, async {
            self.publish_recorded(lease.as_lease(), op, assignments, false)
                .await
        })
        .await
    }

    /// [`publish_and_release`](Store::publish_and_release) carrying operation id `op`,
    /// as [`publish_op`](Store::publish_op).
    ///
    /// # Errors
    ///
    /// As for [`publish_op`](Store::publish_op).
    pub async fn publish_and_release_op(
        &self,
        lease: &impl AsLease,
        op: Uuid,
        assignments: &[(&str, Value)],
    ) -> Result<OperationOutcome> {
        let lease = lease.as_lease();
        let span = trace::step(
            "publish_and_release_op",
            &self.table,
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, async {
            let outcome = self.publish_recorded(lease, op, assignments, true).await?;
            if outcome.is_in_effect() {
                lease.mark_released();
            }
            Ok(outcome)
        })
        .await
    }

    /// Whether operation id `op` was applied, read from the outcomes table. See
    /// [`Resolution`] for when [`Resolution::NotApplied`] is final and what makes a
    /// retry safe.
    ///
    /// # Errors
    ///
    /// Any database error, including a missing outcomes table.
    pub async fn resolve(&self, op: Uuid) -> Result<Resolution> {
        let generation = self
            .backend
            .query_i64(&self.statements.resolve_operation, &[Value::Uuid(op)])
            .await?;
        Ok(match generation {
            Some(generation) => Resolution::Applied { generation },
            None => Resolution::NotApplied,
        })
    }

    /// [`resolve`](Store::resolve), for a write to `lease`'s key: an id applied to
    /// another key is [`Error::OperationReused`].
    pub(crate) async fn resolve_on(&self, op: Uuid, lease: &Lease) -> Result<Resolution> {
        let row = self
            .backend
            .query_row(
                &self.statements.resolve_operation_on_key,
                &[Value::Uuid(op), Value::from(lease.key())],
            )
            .await?;
        match row.as_deref() {
            None => Ok(Resolution::NotApplied),
            Some([Value::I64(generation), Value::I64(1)]) => Ok(Resolution::Applied {
                generation: *generation,
            }),
            Some([Value::I64(_), Value::I64(0)]) => Err(Error::OperationReused { op }),
            Some(other) => Err(Error::UnexpectedResult(format!(
                "an operation's record read as {other:?}"
            ))),
        }
    }

    /// The current recovery epoch, which every acquisition stamps on its row and every
    /// fenced write requires: the epoch table's value, as
    /// [`advance_epoch`](Store::advance_epoch) returns it. On PostgreSQL the row's
    /// stamp also carries the server's timeline, which this value does not show
    /// ([`dialect::split_stamp`](crate::dialect::split_stamp) takes a stamp apart).
    ///
    /// # Errors
    ///
    /// [`Error::UnexpectedResult`] when the epoch table has no row (run
    /// [`create_schema`](Store::create_schema)); any database error.
    pub async fn current_epoch(&self) -> Result<i64> {
        self.backend
            .query_i64(&self.statements.current_epoch, &[])
            .await?
            .ok_or_else(|| Error::UnexpectedResult("the epoch table has no row".into()))
    }

    /// Advances the recovery epoch, for use after a restore from backup or an
    /// asynchronous failover: afterwards no lease issued before can renew or write, even
    /// where a restored row's generation and owner match it again, and every row is
    /// free to acquire. Returns the new epoch.
    ///
    /// On PostgreSQL a promotion and a point-in-time restore need no call: the server's
    /// timeline, stamped with the epoch, does this by itself (see
    /// [the recovery epoch](Store#recovery-epoch)). A logical restore, a restore onto a
    /// new cluster or a disk snapshot started as is do need it.
    ///
    /// The new epoch is the greatest of the current epoch + 1 and the database's clock
    /// in milliseconds since the Unix epoch, so it exceeds every epoch issued before even
    /// when the epoch table itself was restored to an older value, as long as the
    /// database's clock has moved on since that epoch was issued (by a millisecond: a
    /// restore takes far longer) and has not gone back. When it may have gone back (a
    /// failover to a server with another clock), use
    /// [`advance_epoch_past`](Store::advance_epoch_past).
    ///
    /// The procedure after a restore or failover: stop nothing, restore, then call this
    /// once before the database is used again (writes made by old leases between the
    /// restore and this call are the restore's own risk: keep the database closed to
    /// the application until it is done). Log the epoch it returns.
    ///
    /// # Errors
    ///
    /// [`Error::UnexpectedResult`] when the epoch table has no row; any database error.
    pub async fn advance_epoch(&self) -> Result<i64> {
        self.advance_epoch_past(0).await
    }

    /// [`advance_epoch`](Store::advance_epoch), to at least `floor` + 1: give the
    /// highest epoch ever logged (for example from the values this method returned) when
    /// neither the epoch table nor the database's clock can be trusted to exceed it.
    ///
    /// # Errors
    ///
    /// As for [`advance_epoch`](Store::advance_epoch); [`Error::Config`] for a floor of
    /// the greatest epoch or above: `i64::MAX`, or on PostgreSQL with the timeline
    /// stamped 9,223,372,036,853 ([`dialect::max_epoch`](crate::dialect::max_epoch)),
    /// so that the epoch and the timeline fit one `bigint`. Nothing is sent then.
    pub async fn advance_epoch_past(&self, floor: i64) -> Result<i64> {
        let max = dialect::max_epoch(self.dialect(), &self.table);
        let floor = floor.checked_add(1).filter(|f| *f <= max).ok_or_else(|| {
            Error::Config(format!(
                "the epoch floor must be below {max}, the greatest epoch table {} holds on {}",
                self.table.name(),
                self.dialect()
            ))
        })?;
        let epoch = self
            .backend
            .query_i64(&self.statements.advance_epoch, &[Value::I64(floor)])
            .await?
            .ok_or_else(|| Error::UnexpectedResult("the epoch table has no row".into()))?;
        tracing::warn!(table = %self.table.name(), epoch, "recovery epoch advanced");
        Ok(epoch)
    }

    async fn publish_recorded(
        &self,
        lease: &Lease,
        op: Uuid,
        assignments: &[(&str, Value)],
        release: bool,
    ) -> Result<OperationOutcome> {
        let kind = if release {
            WriteKind::PublishAndReleaseRecorded
        } else {
            WriteKind::PublishRecorded
        };
        let Some(write) = self.admit_publication(lease, kind, assignments)? else {
            return Ok(OperationOutcome::Refused);
        };
        match write {
            CallerWrite::Procedure(calls) => {
                let values = self.procedure_values(assignments)?;
                let sql = if release {
                    &calls.publish_and_release_recorded
                } else {
                    &calls.publish_recorded
                };
                self.run_recorded(lease, op, sql, values).await
            }
            CallerWrite::Statement(sql) => {
                let values = assignments.iter().map(|(_, v)| v.clone()).collect();
                self.run_recorded(lease, op, &sql, values).await
            }
        }
    }

    pub(crate) async fn run_recorded(
        &self,
        lease: &Lease,
        op: Uuid,
        sql: &str,
        values: Vec<Value>,
    ) -> Result<OperationOutcome> {
        let mut params = values;
        params.extend(lease_params(lease));
        params.push(Value::Uuid(op));
        let result = match self.dialect() {
            Dialect::Sqlite => {
                let record = [
                    Value::Uuid(op),
                    Value::from(lease.key()),
                    Value::I64(lease.generation()),
                ];
                self.backend
                    .execute_then_record(sql, &params, &self.statements.record_operation, &record)
                    .await
            }
            Dialect::Postgres => self.rows(sql, &params).await,
            // The recorded write is a batch that ends with its own count (see
            // `dialect::update_recorded`), as a procedure does.
            Dialect::Mssql => self
                .backend
                .query_i64(sql, &params)
                .await
                .map(|rows| rows.map_or(0, |rows| u64::try_from(rows).unwrap_or(0))),
        };
        let rows = match result {
            Ok(rows) => rows,
            // Another attempt with the same id committed first: its record proves it.
            Err(error) if is_unique_violation(&error) => match self.resolve_on(op, lease).await? {
                Resolution::Applied { generation } => {
                    return Ok(OperationOutcome::AlreadyApplied { generation });
                }
                Resolution::NotApplied => return Err(error),
            },
            Err(error) => return Err(error),
        };
        if rows > 0 {
            return Ok(OperationOutcome::Applied);
        }
        // Refused: either the fence, or this id is already recorded (which the write's
        // own `NOT EXISTS` turns into no row). Records are never erased, so reading one
        // now proves an earlier attempt applied.
        match self.resolve_on(op, lease).await? {
            Resolution::Applied { generation } => {
                Ok(OperationOutcome::AlreadyApplied { generation })
            }
            Resolution::NotApplied => {
                tracing::debug!(
                    table = %self.table.name(),
                    key = %lease.key(),
                    generation = lease.generation(),
                    operation = %op,
                    "fenced write refused"
                );
                Ok(OperationOutcome::Refused)
            }
        }
    }

    async fn publish_inner(
        &self,
        lease: &Lease,
        assignments: &[(&str, Value)],
        release: bool,
    ) -> Result<Outcome> {
        let kind = if release {
            WriteKind::PublishAndRelease
        } else {
            WriteKind::Publish
        };
        let Some(write) = self.admit_publication(lease, kind, assignments)? else {
            return Ok(Outcome::Refused);
        };
        match write {
            CallerWrite::Procedure(calls) => {
                let values = self.procedure_values(assignments)?;
                let sql = if release {
                    &calls.publish_and_release
                } else {
                    &calls.publish
                };
                self.run_fenced(lease, sql, values.into_iter()).await
            }
            CallerWrite::Statement(sql) => {
                self.run_fenced(lease, &sql, assignments.iter().map(|(_, v)| v.clone()))
                    .await
            }
        }
    }

    /// [`update`](Store::update), [`publish`](Store::publish) or
    /// [`publish_and_release`](Store::publish_and_release), each with the epoch's row
    /// held shared until the transaction ends ([`dialect::update_locking`]): the write
    /// that locks a deferred transaction's lease. The same checks, the same outcome.
    pub(crate) async fn write_locking(
        &self,
        lease: &Lease,
        write: LockingWrite,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        self.no_procedure("a deferred transaction")?;
        let kind = match write {
            LockingWrite::Update if assignments.is_empty() => {
                return Err(Error::Config("an update needs at least one column".into()));
            }
            LockingWrite::Update => WriteKind::UpdateLocking,
            LockingWrite::Publish => WriteKind::PublishLocking,
            LockingWrite::PublishAndRelease => WriteKind::PublishAndReleaseLocking,
        };
        let sql = self.write_sql(kind, assignments)?;
        self.check_key(lease.key())?;
        if lease.is_revoked() {
            return Ok(Outcome::Refused);
        }
        let outcome = self
            .run_fenced(lease, &sql, assignments.iter().map(|(_, v)| v.clone()))
            .await?;
        if outcome.is_applied() && write == LockingWrite::PublishAndRelease {
            lease.mark_released();
        }
        Ok(outcome)
    }

    async fn run_fenced(
        &self,
        lease: &Lease,
        sql: &str,
        caller: impl Iterator<Item = Value>,
    ) -> Result<Outcome> {
        let fence = lease_params(lease);
        let mut params: Vec<Value> = Vec::with_capacity(caller.size_hint().0 + fence.len());
        params.extend(caller);
        params.extend(fence);
        let rows = self.rows(sql, &params).await?;
        let outcome = Outcome::from_rows(rows);
        if outcome.is_refused() {
            tracing::debug!(
                table = %self.table.name(),
                key = %lease.key(),
                generation = lease.generation(),
                "fenced write refused"
            );
        }
        Ok(outcome)
    }

    /// The checks a publication makes before its statement, in this order: the columns
    /// (finding the statement), the key's type, and the lease not revoked (`None`: the
    /// publication is refused without a statement).
    fn admit_publication(
        &self,
        lease: &Lease,
        kind: WriteKind,
        assignments: &[(&str, Value)],
    ) -> Result<Option<CallerWrite<'_>>> {
        let write = self.caller_write(kind, assignments)?;
        self.check_key(lease.key())?;
        Ok((!lease.is_revoked()).then_some(write))
    }

    /// What a caller write of `kind` over `assignments` runs: in procedure mode the
    /// procedure (the columns validated), otherwise the statement ([`write_sql`]).
    ///
    /// [`write_sql`]: Store::write_sql
    fn caller_write(
        &self,
        kind: WriteKind,
        assignments: &[(&str, Value)],
    ) -> Result<CallerWrite<'_>> {
        match &self.procedures {
            Some(calls) => {
                self.caller_columns(assignments)?;
                Ok(CallerWrite::Procedure(calls))
            }
            None => Ok(CallerWrite::Statement(self.write_sql(kind, assignments)?)),
        }
    }

    /// The statement for a caller write of `kind` over `assignments`' columns, rendered
    /// once per shape (after validating the column names) and then found again by the
    /// names as given.
    fn write_sql(&self, kind: WriteKind, assignments: &[(&str, Value)]) -> Result<Arc<str>> {
        let hash = shape_hash(kind, assignments);
        let mut writes = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sql) = writes.find(hash, kind, assignments) {
            return Ok(Arc::clone(sql));
        }
        let columns = self.caller_columns(assignments)?;
        let refs: Vec<&Identifier> = columns.iter().collect();
        let d = self.dialect();
        let sql: Arc<str> = match kind {
            WriteKind::Update => dialect::update(d, &self.table, &refs),
            WriteKind::Publish => dialect::publish(d, &self.table, &refs, false),
            WriteKind::PublishAndRelease => dialect::publish(d, &self.table, &refs, true),
            WriteKind::UpdateRecorded => dialect::update_recorded(d, &self.table, &refs),
            WriteKind::PublishRecorded => dialect::publish_recorded(d, &self.table, &refs, false),
            WriteKind::PublishAndReleaseRecorded => {
                dialect::publish_recorded(d, &self.table, &refs, true)
            }
            WriteKind::UpdateLocking => dialect::update_locking(d, &self.table, &refs),
            WriteKind::PublishLocking => dialect::publish_locking(d, &self.table, &refs, false),
            WriteKind::PublishAndReleaseLocking => {
                dialect::publish_locking(d, &self.table, &refs, true)
            }
        }
        .into();
        writes.insert(
            hash,
            RenderedWrite {
                kind,
                columns: columns.into_boxed_slice(),
                sql: Arc::clone(&sql),
            },
        );
        Ok(sql)
    }

    fn caller_columns(&self, assignments: &[(&str, Value)]) -> Result<Vec<Identifier>> {
        assignments
            .iter()
            .map(|(name, _)| {
                let id = Identifier::new(name)?;
                if self.table.is_protocol_column(name) {
                    return Err(Error::ProtectedColumn {
                        column: (*name).to_owned(),
                    });
                }
                Ok(id)
            })
            .collect()
    }

    pub(crate) fn check_key(&self, key: &Key) -> Result<()> {
        if key.key_type() != self.table.key_type() {
            return Err(Error::KeyType {
                expected: self.table.key_type(),
                found: key.key_type(),
            });
        }
        // SQL Server compares strings with trailing spaces padded away in every
        // collation: `k` and `k ` would be one row there and two elsewhere.
        if let (Dialect::Mssql, Key::Text(text)) = (self.dialect(), key)
            && text.ends_with(' ')
        {
            return Err(Error::Config(format!(
                "text key {text:?} ends with a space: SQL Server ignores trailing spaces \
                 when it compares keys, so it would name the same row as the key without them"
            )));
        }
        Ok(())
    }
}

/// The fence's parameters: key, generation, owner. An array, not a `Vec`: a release
/// binds exactly these, and the other statements append them to their own.
fn lease_params(lease: &Lease) -> [Value; 3] {
    [
        Value::from(lease.key()),
        Value::I64(lease.generation()),
        Value::Uuid(lease.owner()),
    ]
}

/// `ttl` in whole milliseconds, or [`Error::InvalidTtl`] outside 1 ms to [`MAX_TTL`].
pub(crate) fn ttl_millis(ttl: Duration) -> Result<i64> {
    if ttl < Duration::from_millis(1) || ttl > MAX_TTL {
        return Err(Error::InvalidTtl { ttl });
    }
    i64::try_from(ttl.as_millis()).map_err(|_| Error::InvalidTtl { ttl })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_bounds() {
        assert!(matches!(
            ttl_millis(Duration::ZERO),
            Err(Error::InvalidTtl { .. })
        ));
        assert!(matches!(
            ttl_millis(Duration::from_micros(999)),
            Err(Error::InvalidTtl { .. })
        ));
        assert_eq!(ttl_millis(Duration::from_millis(1)).unwrap(), 1);
        assert_eq!(ttl_millis(MAX_TTL).unwrap(), i64::from(i32::MAX));
        assert!(matches!(
            ttl_millis(MAX_TTL + Duration::from_millis(1)),
            Err(Error::InvalidTtl { .. })
        ));
    }

    fn rendered(kind: WriteKind, names: &[&str], sql: &str) -> RenderedWrite {
        RenderedWrite {
            kind,
            columns: names.iter().map(|n| Identifier::new(n).unwrap()).collect(),
            sql: sql.into(),
        }
    }

    fn given(names: &[&'static str]) -> Vec<(&'static str, Value)> {
        names.iter().map(|n| (*n, Value::Null)).collect()
    }

    #[test]
    fn a_rendered_write_is_found_only_by_its_kind_and_exact_names() {
        let mut writes = RenderedWrites::default();
        let ab = given(&["A", "B"]);
        let hash = shape_hash(WriteKind::Publish, &ab);
        writes.insert(
            hash,
            rendered(WriteKind::Publish, &["A", "B"], "publish A, B"),
        );
        assert_eq!(
            writes.find(hash, WriteKind::Publish, &ab).map(|s| &**s),
            Some("publish A, B")
        );
        // Each differs from the stored shape in one way, and is looked up under the
        // stored shape's hash, as if the hashes collided: only the comparison tells.
        for (kind, names) in [
            (WriteKind::Update, &["A", "B"][..]),
            (WriteKind::Publish, &["B", "A"]),
            (WriteKind::Publish, &["A"]),
            (WriteKind::Publish, &["A", "B", "C"]),
            (WriteKind::Publish, &["a", "B"]),
        ] {
            assert!(
                writes.find(hash, kind, &given(names)).is_none(),
                "{kind:?} {names:?} found the statement for Publish [A, B]"
            );
        }
    }

    #[test]
    fn the_shape_hasher_is_fnv_1a() {
        // The published FNV-1a 64-bit test vectors.
        let fnv = |bytes: &[u8]| {
            let mut h = ShapeHasher::default();
            h.write(bytes);
            h.finish()
        };
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn shapes_that_differ_hash_apart() {
        let ab = shape_hash(WriteKind::Publish, &given(&["A", "B"]));
        assert_eq!(ab, shape_hash(WriteKind::Publish, &given(&["A", "B"])));
        assert_ne!(ab, shape_hash(WriteKind::Publish, &given(&["B", "A"])));
        assert_ne!(
            ab,
            shape_hash(WriteKind::PublishAndRelease, &given(&["A", "B"]))
        );
        // Without the names' boundaries, ["AB"] and ["A", "B"] would collide.
        assert_ne!(ab, shape_hash(WriteKind::Publish, &given(&["AB"])));
    }

    #[test]
    fn the_rendered_writes_start_over_when_full() {
        let mut writes = RenderedWrites::default();
        for i in 0..MAX_CACHED_WRITES {
            writes.insert(i as u64, rendered(WriteKind::Update, &["A"], "update"));
        }
        assert_eq!(writes.len(), MAX_CACHED_WRITES);
        assert!(writes.find(0, WriteKind::Update, &given(&["A"])).is_some());
        writes.insert(u64::MAX, rendered(WriteKind::Update, &["A"], "update"));
        assert_eq!(writes.len(), 1);
        assert!(writes.find(0, WriteKind::Update, &given(&["A"])).is_none());
        assert!(
            writes
                .find(u64::MAX, WriteKind::Update, &given(&["A"]))
                .is_some()
        );
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_write_shape_is_rendered_once_and_a_bad_name_never_cached() {
        let dir = tempfile::tempdir().unwrap();
        let table = FencedTable::builder()
            .column("Payload", crate::table::ColumnType::Text)
            .build()
            .unwrap();
        let store = Store::new(
            crate::Sqlite::open(dir.path().join("w.db")).await.unwrap(),
            table,
        );
        let payload = [("Payload", Value::from("x"))];
        let first = store.write_sql(WriteKind::Publish, &payload).unwrap();
        let again = store.write_sql(WriteKind::Publish, &payload).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "rendered again");
        assert!(first.contains(r#""Payload" = ?1"#), "{first}");

        for _ in 0..2 {
            let protected = [("Generation", Value::from(1_i64))];
            assert!(matches!(
                store.write_sql(WriteKind::Publish, &protected),
                Err(Error::ProtectedColumn { .. })
            ));
            let invalid = [("Pay load", Value::from("x"))];
            assert!(store.write_sql(WriteKind::Publish, &invalid).is_err());
        }
        let writes = store.writes.lock().unwrap();
        assert_eq!(writes.len(), 1, "only the valid shape is kept");
    }
}
