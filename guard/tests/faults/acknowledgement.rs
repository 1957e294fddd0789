//! Lost acknowledgements on PostgreSQL and SQL Server, made real by the proxy: a
//! publication whose reply never arrives is an error (neither refused nor applied), and
//! its operation id tells what happened; a statement that never reached the server
//! resolves as not applied and can then be retried under the still-valid lease. And
//! one fault that is a lock, not the wire: an acquisition that waited on the row.
//!
//! Written once over a [`Wired`] bench; `on_postgres` and `on_mssql` run them.

use std::sync::Arc;
use std::time::Duration;

use fenced_guard::{
    Completion, Error, Executor, Lease, OperationOutcome, Outcome, Resolution, Store, Value, Work,
};
use uuid::Uuid;

use crate::history::Bench;
use crate::proxy::{Fault, Proxy};

/// A bench whose workers reach the server through a proxy, and that has a connection
/// of its own that does not.
pub trait Wired: Bench {
    /// The administrative connection (no proxy).
    fn direct(&self) -> Self::Backend;
}

#[cfg(feature = "postgres")]
impl Wired for crate::postgres::PgBench {
    fn direct(&self) -> fenced_guard::Postgres {
        self.admin().clone()
    }
}

#[cfg(feature = "mssql")]
impl Wired for crate::mssql::MssqlBench {
    fn direct(&self) -> fenced_guard::Mssql {
        self.admin().clone()
    }
}

/// The driver's error for a connection that broke mid-statement: the answer is
/// unknown, so the statement may have committed.
fn is_lost_connection(error: &Error) -> bool {
    let driver = match error {
        #[cfg(feature = "postgres")]
        Error::Postgres(_) => true,
        #[cfg(feature = "mssql")]
        Error::Mssql(_) => true,
        _ => false,
    };
    driver && error.may_have_committed()
}

/// Long enough that the lease outlives the test; expiry is never waited for here
/// except where the proxy's delay passes it on purpose.
const TTL: Duration = Duration::from_secs(60);

pub struct Setup<B: Wired> {
    bench: B,
    store: Store<B::Backend>,
    proxy: Proxy,
    direct: Store<B::Backend>,
}

/// A provisioned row, a store whose connection runs through a proxy, and one that
/// reaches the server directly to look at the row. The fenced table is made without
/// the history's trace trigger: these tests read the row itself (tables with triggers
/// are the conformance suite's).
async fn setup<B: Wired>(bench: B) -> Setup<B> {
    let direct = Store::new(bench.direct(), bench.table());
    direct
        .create_schema()
        .await
        .expect("create the fenced table");
    let (store, proxy) = bench.worker().await;
    let proxy = proxy.expect("the bench's workers have a proxy");
    assert!(direct.provision(1i64).await.expect("provision"));
    Setup {
        bench,
        store,
        proxy,
        direct,
    }
}

async fn acquire<B: Wired>(s: &Setup<B>, ttl: Duration) -> Lease {
    s.store
        .try_acquire(1i64, ttl)
        .await
        .expect("acquire through the proxy")
        .expect("the row is free")
}

fn columns(payload: &str) -> [(&'static str, Value); 1] {
    [("Payload", Value::from(payload))]
}

/// `(published generation, payload)` as the server has them.
async fn published<B: Wired>(s: &Setup<B>) -> (i64, Option<String>) {
    let table = s.direct.table();
    let d = s.direct.dialect();
    let sql = format!(
        "SELECT {}, {} FROM {} WHERE {} = {}",
        table.published_column().quoted(d),
        fenced_guard::Identifier::new("Payload").unwrap().quoted(d),
        table.name().quoted(d),
        table.key_column().quoted(d),
        d.placeholder(1)
    );
    let row = s
        .direct
        .backend()
        .query_row(&sql, &[Value::I64(1)])
        .await
        .expect("read the row")
        .expect("the row exists");
    (
        row[0].as_i64().expect("published generation"),
        row[1].as_str().map(str::to_owned),
    )
}

/// Runs `body` on a fresh setup of `bench` (none: the backend's tests do not run here)
/// and drops the schema whatever happens.
pub async fn with_setup<B, F, Fut>(bench: Option<B>, body: F)
where
    B: Wired,
    F: FnOnce(Arc<Setup<B>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let Some(bench) = bench else { return };
    let s = Arc::new(setup(bench).await);
    let run = tokio::spawn(body(Arc::clone(&s))).await;
    s.bench.teardown().await;
    if let Err(error) = run {
        std::panic::resume_unwind(error.into_panic());
    }
}

/// The tests, for a backend whose bench `$setup` makes (an `Option`: `None` when the
/// backend's tests do not run here). Each runs on [`crate::block_on`]'s runtime, whose
/// large stacks a debug build of `Work` on SQL Server needs.
macro_rules! acknowledgement_tests {
    ($setup:expr) => {
        use crate::acknowledgement::*;

        #[test]
        fn lost_acknowledgement_is_an_error_and_resolves_applied() {
            crate::block_on(async { with_setup($setup, lost_acknowledgement).await });
        }

        #[test]
        fn statement_cut_before_the_server_resolves_not_applied_and_retries() {
            crate::block_on(async { with_setup($setup, cut_before_the_server).await });
        }

        /// The proxy holds the request back past the lease's ttl: the client sent it
        /// while the lease was valid, the server receives it after expiry, and the
        /// database's clock decides. The negative control: the same delay with a ttl
        /// that outlives it applies.
        #[test]
        fn write_delayed_past_expiry_is_refused_by_the_database_clock() {
            crate::block_on(async { with_setup($setup, delayed_past_expiry).await });
        }

        /// `Work` with publication retries settles a lost acknowledgement: the retry
        /// carries the same operation id, finds the first attempt committed, and the
        /// work ends published, once. Negative control: without retries the same fault
        /// is an error, although the server did publish.
        #[test]
        fn work_with_publication_retries_settles_a_lost_acknowledgement() {
            crate::block_on(async {
                with_setup($setup, retries_settle_a_lost_acknowledgement).await
            });
        }

        /// A publication that never reached the server is sent again and applies.
        #[test]
        fn work_with_publication_retries_sends_a_cut_publication_again() {
            crate::block_on(async {
                with_setup($setup, |s| async move {
                    published_once_despite(&s, Fault::CutBeforeExecute).await;
                })
                .await
            });
        }

        /// An acquisition that waited on the row's lock while another transaction
        /// raised the generation reports the generation it installed, not the one it
        /// computed before the wait.
        #[test]
        fn acquisition_after_a_lock_wait_reports_the_generation_it_installed() {
            crate::block_on(async { with_setup($setup, acquisition_after_a_lock_wait).await });
        }

        /// When every attempt fails, the error names the operation id, which then
        /// resolves; the row was released after the work, so the next lease is the next
        /// generation.
        #[test]
        fn work_whose_every_publication_attempt_fails_names_its_operation_id() {
            crate::block_on(async { with_setup($setup, every_attempt_fails).await });
        }

        /// A fenced transaction that recorded an operation id, whose commit was
        /// acknowledged to nobody: the id resolves applied, and a retry with it finds
        /// it applied and writes nothing. Negative control: the same lost commit with no
        /// record leaves nothing that tells whether it landed.
        #[test]
        fn a_fenced_transactions_lost_commit_resolves_by_its_operation_id() {
            crate::block_on(async { with_setup($setup, lost_commit_of_a_transaction).await });
        }
    };
}

#[cfg(feature = "postgres")]
mod on_postgres {
    acknowledgement_tests!(Some(crate::postgres::PgBench::setup().await));
}

#[cfg(feature = "mssql")]
mod on_mssql {
    acknowledgement_tests!(crate::mssql::MssqlBench::setup().await);
}

pub async fn lost_acknowledgement<B: Wired>(s: Arc<Setup<B>>) {
    {
        let lease = acquire(&s, TTL).await;
        let op = Uuid::new_v4();

        s.proxy.arm(Fault::CutAfterCommit);
        let lost = s.store.publish_op(&lease, op, &columns("report")).await;
        assert_eq!(s.proxy.fired(), 1, "the cut happened on the publication");
        assert!(
            lost.as_ref().is_err_and(is_lost_connection),
            "a lost acknowledgement is an error, not refused and not applied: {lost:?}"
        );

        // The server committed it: the operation id says so, and so does the row.
        assert_eq!(
            s.store
                .resolve(op)
                .await
                .expect("resolve through the proxy"),
            Resolution::Applied {
                generation: lease.generation()
            }
        );
        assert_eq!(
            published(&s).await,
            (lease.generation(), Some("report".to_owned()))
        );

        // Retrying the applied publication does not apply it twice: with the same
        // operation id it is recognised, and a plain retry is refused by the
        // publish-once predicate (which alone could not say why).
        assert_eq!(
            s.store
                .publish_op(&lease, op, &columns("again"))
                .await
                .unwrap(),
            OperationOutcome::AlreadyApplied {
                generation: lease.generation()
            }
        );
        assert_eq!(
            s.store.publish(&lease, &columns("again")).await.unwrap(),
            Outcome::Refused
        );
        assert_eq!(
            published(&s).await,
            (lease.generation(), Some("report".to_owned()))
        );
    }
}

pub async fn cut_before_the_server<B: Wired>(s: Arc<Setup<B>>) {
    {
        let lease = acquire(&s, TTL).await;
        let op = Uuid::new_v4();

        s.proxy.arm(Fault::CutBeforeExecute);
        let lost = s.store.publish_op(&lease, op, &columns("report")).await;
        assert_eq!(s.proxy.fired(), 1, "the cut happened on the publication");
        assert!(
            lost.as_ref().is_err_and(is_lost_connection),
            "a cut connection is an error, not refused and not applied: {lost:?}"
        );

        // The connection that carried the attempt is closed and the statement never
        // reached the server: not applied, and final.
        assert_eq!(s.store.resolve(op).await.unwrap(), Resolution::NotApplied);
        assert_eq!(published(&s).await, (0, None));

        // Safe to retry under the still-valid lease; it applies once.
        assert_eq!(
            s.store
                .publish_op(&lease, op, &columns("report"))
                .await
                .unwrap(),
            OperationOutcome::Applied
        );
        assert_eq!(
            s.store.resolve(op).await.unwrap(),
            Resolution::Applied {
                generation: lease.generation()
            }
        );
        assert_eq!(
            published(&s).await,
            (lease.generation(), Some("report".to_owned()))
        );
    }
}

pub async fn delayed_past_expiry<B: Wired>(s: Arc<Setup<B>>) {
    {
        let ttl = Duration::from_millis(300);
        let delay = Duration::from_millis(600);
        // Warm the connection and its prepared statements, so that only the delay
        // stands between the call and the server.
        let lease = acquire(&s, ttl).await;
        assert_eq!(
            s.store.update(&lease, &columns("warm")).await.unwrap(),
            Outcome::Applied
        );
        assert_eq!(s.store.release(&lease).await.unwrap(), Outcome::Applied);

        let lease = acquire(&s, ttl).await;
        s.proxy.set_delay(delay);
        let late = s.store.update(&lease, &columns("late")).await.unwrap();
        s.proxy.set_delay(Duration::ZERO);
        assert_eq!(late, Outcome::Refused);
        assert_eq!(s.store.release(&lease).await.unwrap(), Outcome::Applied);

        let lease = acquire(&s, TTL).await;
        s.proxy.set_delay(delay);
        let slow = s.store.update(&lease, &columns("slow")).await.unwrap();
        s.proxy.set_delay(Duration::ZERO);
        assert_eq!(slow, Outcome::Applied, "negative control");
    }
}

/// Runs a unit of work through the proxied store with `retries` publication retries,
/// arming `fault` for `times` statements once the work has the lease, so that it hits
/// the publication (and, for `times` above one, the attempts after it).
async fn work_with_fault<B: Wired>(
    s: &Setup<B>,
    retries: u32,
    fault: Fault,
    times: u32,
) -> fenced_guard::Result<Completion<std::convert::Infallible>> {
    Work::new(&s.store)
        .ttl(TTL)
        .publication_retries(retries)
        .run(1i64, |_lease, _stop| async move {
            s.proxy.arm_for(fault, times);
            Ok(vec![("Payload", Value::from("report"))])
        })
        .await
}

/// Runs a unit of work with one publication retry and `fault` on the publication's
/// first attempt, and checks that the work ended published, once.
pub async fn published_once_despite<B: Wired>(s: &Setup<B>, fault: Fault) {
    let done = work_with_fault(s, 1, fault, 1).await;
    assert_eq!(s.proxy.fired(), 1, "the cut happened on the publication");
    assert!(
        matches!(done, Ok(Completion::Published { generation: 1 })),
        "{done:?}"
    );
    assert_eq!(published(s).await, (1, Some("report".to_owned())));
}

pub async fn retries_settle_a_lost_acknowledgement<B: Wired>(s: Arc<Setup<B>>) {
    {
        published_once_despite(&s, Fault::CutAfterCommit).await;

        let done = work_with_fault(&s, 0, Fault::CutAfterCommit, 1).await;
        assert_eq!(s.proxy.fired(), 2);
        assert!(done.as_ref().is_err_and(is_lost_connection), "{done:?}");
        assert_eq!(published(&s).await, (2, Some("report".to_owned())));
    }
}

/// The row's generation as the server has it.
async fn generation_of_row<B: Wired>(s: &Setup<B>) -> i64 {
    let table = s.direct.table();
    let d = s.direct.dialect();
    let sql = format!(
        "SELECT {} FROM {} WHERE {} = {}",
        table.generation_column().quoted(d),
        table.name().quoted(d),
        table.key_column().quoted(d),
        d.placeholder(1)
    );
    let row = s
        .direct
        .backend()
        .query_row(&sql, &[Value::I64(1)])
        .await
        .expect("read the row")
        .expect("the row exists");
    row[0].as_i64().expect("the generation")
}

/// Another transaction raises the row's generation (leaving it free) and holds its
/// lock; the acquisition starts, finds the row free in its snapshot and waits; the
/// other transaction commits; the acquisition goes on with the committed row. The
/// lease must carry the generation the row now holds. The wait is checked: the
/// acquisition has not returned while the lock was held.
pub async fn acquisition_after_a_lock_wait<B: Wired>(s: Arc<Setup<B>>) {
    // Warm the acquiring connection (Babelfish parses a statement slowly the first
    // time on a connection), so that it reaches the row while the lock is held.
    let warm = acquire(&s, TTL).await;
    assert_eq!(s.store.release(&warm).await.unwrap(), Outcome::Applied);
    let before = generation_of_row(&s).await;
    let (holder, _holder_proxy) = s.bench.worker().await;
    let table = s.direct.table();
    let d = s.direct.dialect();
    let begin = match d {
        fenced_guard::Dialect::Mssql => "BEGIN TRANSACTION",
        _ => "BEGIN",
    };
    let generation = table.generation_column().quoted(d);
    // One connection in the holder's pool: the transaction stays on it between
    // batches.
    holder
        .backend()
        .execute_batch(&format!(
            "{begin}; UPDATE {} SET {generation} = {generation} + 1 WHERE {} = 1",
            table.name().quoted(d),
            table.key_column().quoted(d),
        ))
        .await
        .expect("raise the generation in an open transaction");
    let store = s.store.clone();
    let acquiring = tokio::spawn(async move { store.try_acquire(1i64, TTL).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !acquiring.is_finished(),
        "the acquisition waited for the row's lock"
    );
    holder
        .backend()
        .execute_batch("COMMIT")
        .await
        .expect("commit the other transaction");
    let lease = acquiring
        .await
        .expect("the acquisition task")
        .expect("acquire after the wait")
        .expect("the row was free after the commit");
    let row = generation_of_row(&s).await;
    assert_eq!(
        row,
        before + 2,
        "the other transaction's raise and the acquisition's"
    );
    assert_eq!(
        lease.generation(),
        row,
        "the lease must carry the generation its acquisition installed (Babelfish 4.2 \
         computes OUTPUT inserted.* before a lock wait: the acquisition there reports the \
         generation of the transaction it waited for)"
    );
    // The lease is real: its fenced writes apply.
    assert_eq!(
        s.store
            .update(&lease, &columns("after the wait"))
            .await
            .unwrap(),
        Outcome::Applied
    );
}

pub async fn every_attempt_fails<B: Wired>(s: Arc<Setup<B>>) {
    {
        let done = work_with_fault(&s, 2, Fault::CutBeforeExecute, 3).await;
        assert_eq!(s.proxy.fired(), 3, "one cut per attempt");
        let Err(Error::PublicationUnsettled {
            op,
            attempts,
            source,
        }) = done
        else {
            panic!("expected an unsettled publication: {done:?}");
        };
        assert_eq!(attempts, 3);
        assert!(is_lost_connection(&source), "{source:?}");
        assert_eq!(s.store.resolve(op).await.unwrap(), Resolution::NotApplied);
        assert_eq!(published(&s).await, (0, None));
        let next = acquire(&s, TTL).await;
        assert_eq!(next.generation(), 2, "the row was released after the work");
    }
}

pub async fn lost_commit_of_a_transaction<B: Wired>(s: Arc<Setup<B>>)
where
    B::Backend: fenced_guard::Lend,
{
    let lease = acquire(&s, TTL).await;
    let op = Uuid::new_v4();
    let tx = s.store.transaction(&lease, TTL).await.unwrap().unwrap();
    assert_eq!(tx.record(op).await.unwrap(), OperationOutcome::Applied);
    let written = tx.store().update(&lease, &columns("report")).await;
    assert_eq!(written.unwrap(), Outcome::Applied);
    s.proxy.arm(Fault::CutAfterCommit);
    let lost = tx.commit().await;
    assert_eq!(s.proxy.fired(), 1, "the cut happened on the commit");
    assert!(
        lost.as_ref().is_err_and(is_lost_connection),
        "a lost commit is an error that may have committed: {lost:?}"
    );

    // The server committed: the operation id says so, and so does the row.
    assert_eq!(
        s.direct.resolve(op).await.unwrap(),
        Resolution::Applied {
            generation: lease.generation()
        }
    );
    assert_eq!(published(&s).await.1.as_deref(), Some("report"));

    // A retry with the same id finds it applied, and rolls back before writing.
    let retry = s.store.transaction(&lease, TTL).await.unwrap().unwrap();
    assert_eq!(
        retry.record(op).await.unwrap(),
        OperationOutcome::AlreadyApplied {
            generation: lease.generation()
        }
    );
    retry.rollback().await.unwrap();
    assert_eq!(published(&s).await.1.as_deref(), Some("report"));

    // Negative control: the same lost commit with no record.
    let unrecorded = Uuid::new_v4();
    let tx = s.store.transaction(&lease, TTL).await.unwrap().unwrap();
    let written = tx.store().update(&lease, &columns("unrecorded")).await;
    assert_eq!(written.unwrap(), Outcome::Applied);
    s.proxy.arm(Fault::CutAfterCommit);
    let lost = tx.commit().await;
    assert!(lost.as_ref().is_err_and(is_lost_connection), "{lost:?}");
    assert_eq!(published(&s).await.1.as_deref(), Some("unrecorded"));
    assert_eq!(
        s.direct.resolve(unrecorded).await.unwrap(),
        Resolution::NotApplied,
        "the control landed, and nothing can tell"
    );
}
