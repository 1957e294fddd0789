//! Lost acknowledgements on PostgreSQL, made real by the proxy: a publication whose
//! reply never arrives is an error (neither refused nor applied), and its operation id
//! tells what happened; a statement that never reached the server resolves as not
//! applied and can then be retried under the still-valid lease.

use std::time::Duration;

use fenced_guard::{
    Backend, Completion, Error, Lease, OperationOutcome, Outcome, Resolution, Store, Value, Work,
};
use uuid::Uuid;

use crate::history::Bench;
use crate::postgres::PgBench;
use crate::proxy::{Fault, Proxy};

/// Long enough that the lease outlives the test; expiry is never waited for here
/// except where the proxy's delay passes it on purpose.
const TTL: Duration = Duration::from_secs(60);

struct Setup {
    bench: PgBench,
    store: Store<fenced_guard::Postgres>,
    proxy: Proxy,
    direct: Store<fenced_guard::Postgres>,
}

/// A provisioned row, a store whose connection runs through a proxy, and one that
/// reaches the server directly to look at the row.
async fn setup() -> Setup {
    let bench = PgBench::setup().await;
    bench.prepare().await;
    let (store, proxy) = bench.worker().await;
    let proxy = proxy.expect("postgresql workers have a proxy");
    let direct = Store::new(bench.admin().clone(), bench.table());
    assert!(direct.provision(1i64).await.expect("provision"));
    Setup {
        bench,
        store,
        proxy,
        direct,
    }
}

async fn acquire(s: &Setup, ttl: Duration) -> Lease {
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
async fn published(s: &Setup) -> (i64, Option<String>) {
    let table = s.direct.table();
    let d = s.direct.dialect();
    let sql = format!(
        "SELECT {}, {} FROM {} WHERE {} = $1",
        table.published_column().quoted(d),
        fenced_guard::Identifier::new("Payload").unwrap().quoted(d),
        table.name().quoted(d),
        table.key_column().quoted(d)
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

/// Runs `body` and drops the schema whatever happens.
async fn with_setup<F, Fut>(body: F)
where
    F: FnOnce(std::sync::Arc<Setup>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let s = std::sync::Arc::new(setup().await);
    let run = tokio::spawn(body(std::sync::Arc::clone(&s))).await;
    s.bench.teardown().await;
    if let Err(error) = run {
        std::panic::resume_unwind(error.into_panic());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_acknowledgement_is_an_error_and_resolves_applied() {
    with_setup(|s| async move {
        let lease = acquire(&s, TTL).await;
        let op = Uuid::new_v4();

        s.proxy.arm(Fault::CutAfterCommit);
        let lost = s.store.publish_op(&lease, op, &columns("report")).await;
        assert_eq!(s.proxy.fired(), 1, "the cut happened on the publication");
        assert!(
            matches!(lost, Err(Error::Postgres(_))),
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
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_cut_before_the_server_resolves_not_applied_and_retries() {
    with_setup(|s| async move {
        let lease = acquire(&s, TTL).await;
        let op = Uuid::new_v4();

        s.proxy.arm(Fault::CutBeforeExecute);
        let lost = s.store.publish_op(&lease, op, &columns("report")).await;
        assert_eq!(s.proxy.fired(), 1, "the cut happened on the publication");
        assert!(
            matches!(lost, Err(Error::Postgres(_))),
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
    })
    .await;
}

/// The proxy holds the request back past the lease's ttl: the client sent it while the
/// lease was valid, the server receives it after expiry, and the database's clock
/// decides. The negative control: the same delay with a ttl that outlives it applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_delayed_past_expiry_is_refused_by_the_database_clock() {
    with_setup(|s| async move {
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
    })
    .await;
}

/// Runs a unit of work through the proxied store with `retries` publication retries,
/// arming `fault` for `times` statements once the work has the lease, so that it hits
/// the publication (and, for `times` above one, the attempts after it).
async fn work_with_fault(
    s: &Setup,
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
async fn published_once_despite(s: &Setup, fault: Fault) {
    let done = work_with_fault(s, 1, fault, 1).await;
    assert_eq!(s.proxy.fired(), 1, "the cut happened on the publication");
    assert!(
        matches!(done, Ok(Completion::Published { generation: 1 })),
        "{done:?}"
    );
    assert_eq!(published(s).await, (1, Some("report".to_owned())));
}

/// `Work` with publication retries settles a lost acknowledgement: the retry carries
/// the same operation id, finds the first attempt committed, and the work ends
/// published, once. Negative control: without retries the same fault is an error,
/// although the server did publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_with_publication_retries_settles_a_lost_acknowledgement() {
    with_setup(|s| async move {
        published_once_despite(&s, Fault::CutAfterCommit).await;

        let done = work_with_fault(&s, 0, Fault::CutAfterCommit, 1).await;
        assert_eq!(s.proxy.fired(), 2);
        assert!(matches!(done, Err(Error::Postgres(_))), "{done:?}");
        assert_eq!(published(&s).await, (2, Some("report".to_owned())));
    })
    .await;
}

/// A publication that never reached the server is sent again and applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_with_publication_retries_sends_a_cut_publication_again() {
    with_setup(|s| async move {
        published_once_despite(&s, Fault::CutBeforeExecute).await;
    })
    .await;
}

/// When every attempt fails, the error names the operation id, which then resolves;
/// the row was released after the work, so the next lease is the next generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_whose_every_publication_attempt_fails_names_its_operation_id() {
    with_setup(|s| async move {
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
        assert!(matches!(*source, Error::Postgres(_)), "{source:?}");
        assert_eq!(s.store.resolve(op).await.unwrap(), Resolution::NotApplied);
        assert_eq!(published(&s).await, (0, None));
        let next = acquire(&s, TTL).await;
        assert_eq!(next.generation(), 2, "the row was released after the work");
    })
    .await;
}
