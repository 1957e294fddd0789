//! A claim of one row of any key on PostgreSQL: one statement from a block the client
//! draws, a second before that block only when the first found no free row.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use fenced_guard::dialect::batch::{self, ClaimPart};
use fenced_guard::{Candidates, Comparison, Executor, Key, Lease, Postgres, Store, Value};

use crate::suite::{jobs, provision_range};
use crate::support::Place;
use crate::support::postgres::TestSchema;

const TTL: Duration = Duration::from_secs(60);
/// Rows enough for about forty blocks.
const ROWS: i64 = 5_000;

async fn store(place: &TestSchema) -> Store<Postgres> {
    let store = Store::new(place.connect().await, jobs(place));
    store.create_schema().await.unwrap();
    provision_range(&store, 1, ROWS).await;
    store
}

fn key(lease: &Lease) -> i64 {
    match lease.key() {
        Key::BigInt(key) => *key,
        other => panic!("a bigint key, not {other:?}"),
    }
}

/// The block each row is in, read before any is claimed: a claimed row's new version
/// goes wherever there is room, so its position afterwards says nothing of where the
/// claim found it.
async fn layout(store: &Store<Postgres>) -> HashMap<i64, i64> {
    let d = store.dialect();
    let sql = format!(
        "SELECT {}, (ctid::text::point)[0]::bigint FROM {}",
        store.table().key_column().quoted(d),
        store.table().name().quoted(d)
    );
    let client = store.backend().client().await.unwrap();
    client
        .query(&sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// The blocks `keys` were in, by `layout`.
fn blocks(layout: &HashMap<i64, i64>, keys: &[i64]) -> BTreeSet<i64> {
    keys.iter().map(|key| layout[key]).collect()
}

/// The only free row is the table's first, in block 0, before wherever a claim starts:
/// every claim of one row still takes it, through its second statement. Negative
/// control: the first statement alone, from block 1, finds nothing.
#[tokio::test]
async fn a_claim_of_one_row_takes_a_free_row_before_its_start() {
    let place = TestSchema::create("fenced_scale_", 1).await;
    let store = store(&place).await;
    let layout = layout(&store).await;
    assert!(
        layout[&1] == 0 && layout[&ROWS] > 1,
        "the table is too small to start past its first free row"
    );
    let held = store
        .claim(&Candidates::keys(2..=ROWS), usize::MAX, TTL)
        .await
        .unwrap();
    assert_eq!(held.len(), usize::try_from(ROWS - 1).unwrap());

    for round in 0..10 {
        let got = store.claim(&Candidates::any(), 1, TTL).await.unwrap();
        assert_eq!(
            got.iter().map(key).collect::<Vec<_>>(),
            [1],
            "round {round}"
        );
        assert_eq!(got[0].generation(), round + 1);
        assert!(store.release(&got[0]).await.unwrap().is_applied());
    }
    // With a filter, rendered for the claim.
    let unqueued = Candidates::any().is_null("Queue");
    let got = store.claim(&unqueued, 1, TTL).await.unwrap();
    assert_eq!(got.iter().map(key).collect::<Vec<_>>(), [1]);
    assert!(store.release(&got[0]).await.unwrap().is_applied());

    let from = batch::claim_one(store.table(), ClaimPart::FromStart, &[]);
    let params = [
        Value::from("(1,0)"),
        Value::Uuid(uuid::Uuid::new_v4()),
        Value::I64(60_000),
    ];
    let rows = store.backend().query_rows(&from, &params).await.unwrap();
    assert!(rows.is_empty(), "the first statement alone took {rows:?}");
    place.teardown().await;
}

/// Claims of one row start at blocks drawn across the table, so that many workers do
/// not all pass the same rows: twenty claims (each row kept) take rows of many blocks.
/// Negative control: the first statement from block 0 each time takes the rows of one.
#[tokio::test]
async fn claims_of_one_row_start_across_the_table() {
    let place = TestSchema::create("fenced_scale_", 1).await;
    let store = store(&place).await;
    let layout = layout(&store).await;
    let mut claimed = Vec::new();
    for _ in 0..20 {
        let got = store.claim(&Candidates::any(), 1, TTL).await.unwrap();
        claimed.extend(got.iter().map(key));
    }
    assert_eq!(claimed.len(), 20);
    let spread = blocks(&layout, &claimed);
    assert!(spread.len() >= 8, "twenty claims took rows of {spread:?}");

    let from = batch::claim_one(store.table(), ClaimPart::FromStart, &[]);
    let mut control = Vec::new();
    for _ in 0..20 {
        let params = [
            Value::from("(0,0)"),
            Value::Uuid(uuid::Uuid::new_v4()),
            Value::I64(60_000),
        ];
        for row in store.backend().query_rows(&from, &params).await.unwrap() {
            control.push(row[0].as_i64().expect("a bigint key"));
        }
    }
    assert_eq!(control.len(), 20);
    assert_eq!(blocks(&layout, &control).len(), 1, "{control:?}");
    place.teardown().await;
}

/// A claim of one row with a filter binds the filter's values after the start, owner
/// and ttl, and takes only rows that pass it.
#[tokio::test]
async fn a_claim_of_one_row_keeps_to_its_filter() {
    let place = TestSchema::create("fenced_scale_", 1).await;
    let store = store(&place).await;
    let d = store.dialect();
    store
        .backend()
        .execute(
            &format!(
                "UPDATE {} SET {} = 'reports' WHERE {} % 500 = 0",
                store.table().name().quoted(d),
                "\"Queue\"",
                store.table().key_column().quoted(d)
            ),
            &[],
        )
        .await
        .unwrap();
    let reports = Candidates::any().filter("Queue", Comparison::Eq, "reports");
    let mut taken = BTreeSet::new();
    for _ in 0..10 {
        let got = store.claim(&reports, 1, TTL).await.unwrap();
        assert_eq!(got.len(), 1);
        taken.insert(key(&got[0]));
    }
    assert_eq!(taken, (1..=10).map(|i| i * 500).collect());
    assert!(store.claim(&reports, 1, TTL).await.unwrap().is_empty());
    place.teardown().await;
}

/// Thirty-two claimers of one row, and eight workers acquiring random keys, race over a
/// table twice, the second time once every row has expired (each claim then meets
/// rows the others are taking, or have just taken since its snapshot): each generation
/// of each row goes to exactly one of them. A claim's `UPDATE` does not test its row
/// free again; this is what shows that its subquery's lock is enough. Negative control
/// (run by hand): without `FOR NO KEY UPDATE SKIP LOCKED`, claims take rows others
/// acquired, and the checker reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claimers_of_one_row_and_acquirers_take_each_generation_once() {
    use std::sync::{Arc, Mutex};

    use rand::rngs::StdRng;
    use rand::{Rng as _, SeedableRng as _};

    use crate::claims::{self, Claimed};
    use crate::suite::{expire_all, generations};

    const ROWS: i64 = 2_000;
    const CLAIMERS: usize = 32;
    const ACQUIRERS: usize = 8;
    let place = TestSchema::create("fenced_scale_", 16).await;
    let store = Store::new(place.connect().await, jobs(&place));
    store.create_schema().await.unwrap();
    provision_range(&store, 1, ROWS).await;
    let seed = rand::random::<u64>();
    let taken = Arc::new(Mutex::new(Vec::<Claimed>::new()));
    for round in 0..2_u64 {
        let mut tasks = Vec::new();
        for worker in 0..CLAIMERS + ACQUIRERS {
            let (store, taken) = (store.clone(), Arc::clone(&taken));
            let mut rng = StdRng::seed_from_u64(seed ^ (round << 32) ^ worker as u64);
            tasks.push(tokio::spawn(async move {
                let mut misses = 0;
                while misses < 50 {
                    let got = if worker < CLAIMERS {
                        store.claim(&Candidates::any(), 1, TTL).await.unwrap()
                    } else {
                        let key = rng.random_range(1..=ROWS);
                        store
                            .try_acquire(key, TTL)
                            .await
                            .unwrap()
                            .into_iter()
                            .collect()
                    };
                    if got.is_empty() {
                        if worker < CLAIMERS {
                            return;
                        }
                        misses += 1;
                        continue;
                    }
                    taken
                        .lock()
                        .unwrap()
                        .extend(got.iter().map(|lease| Claimed {
                            worker,
                            key: key(lease),
                            generation: lease.generation(),
                        }));
                }
            }));
        }
        for task in tasks {
            task.await.expect("a worker panicked");
        }
        let count = taken.lock().unwrap().len();
        assert_eq!(
            count,
            usize::try_from(ROWS).unwrap() * usize::try_from(round + 1).unwrap(),
            "round {round}: every row taken once (seed {seed})"
        );
        expire_all(&store).await;
    }
    let rows = generations(&store).await;
    let violations = claims::check(&taken.lock().unwrap(), &rows);
    assert!(
        violations.is_empty(),
        "seed {seed}: {}",
        claims::first_ten(&violations)
    );
    place.teardown().await;
}

/// A claim of one row on a caller's tokio-postgres client reads the table's size and
/// claims there; in the caller's transaction, rolled back, it leaves the row free.
#[tokio::test]
async fn a_claim_of_one_row_runs_on_a_callers_client() {
    use tokio_postgres::NoTls;

    use crate::support::postgres::url;

    let place = TestSchema::create("fenced_scale_", 1).await;
    let store = store(&place).await;
    let (mut client, connection) = tokio_postgres::connect(&url(), NoTls).await.unwrap();
    tokio::spawn(connection);

    let got = store
        .on(&client)
        .unwrap()
        .claim(&Candidates::any(), 1, TTL)
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    let row = store.inspect(got[0].key().clone()).await.unwrap();
    assert!(row.is_held() && row.is_of(&got[0]), "{row:?}");

    let tx = client.transaction().await.unwrap();
    let rolled_back = store
        .on(&tx)
        .unwrap()
        .claim(&Candidates::any(), 1, TTL)
        .await
        .unwrap();
    assert_eq!(rolled_back.len(), 1);
    tx.rollback().await.unwrap();
    let row = store.inspect(rolled_back[0].key().clone()).await.unwrap();
    assert!(!row.is_held(), "{row:?}");
    place.teardown().await;
}
