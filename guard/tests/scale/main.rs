//! Leases at scale on real databases: claiming free rows under 32 concurrent claimers,
//! batched renewal racing a steal, and the batch keeper failing each lease closed on its
//! own. SQLite always, PostgreSQL (which must be reachable: the tests fail, never skip,
//! otherwise), SQL Server at `FENCED_MSSQL_URL` (required when `CI` is set).
//!
//! Schedules are driven by the database's clock and by raw UPDATEs that move an expiry
//! into the past, never by sleeping and hoping; a wait that should end quickly is
//! bounded by `HANG` so that a broken keeper fails the test instead of hanging it.

#![allow(missing_docs, unreachable_pub)]
#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "mssql")),
    allow(dead_code)
)]

mod claims;
#[cfg(feature = "postgres")]
mod one_row;
mod suite;

// Each test binary compiles the shared fixtures on its own and uses only part of them.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

/// Generates one `#[tokio::test]` per test of the suite for a backend. `$setup` is an
/// async function of the number of connections each backend gets, returning
/// `Option<Place>`; `None` means the backend is not available here.
macro_rules! scale {
    ($setup:path) => {
        scale!(@ $setup;
            a_claim_takes_free_candidates_as_ordinary_leases,
            a_claim_checks_its_candidates_before_sending,
            a_key_repeated_across_statements_is_claimed_once,
            thirty_two_claimers_take_each_row_once_per_generation,
            negative_control_a_read_then_write_claim_is_caught,
            a_batch_renewal_refuses_exactly_the_stolen_lease,
            the_batch_keeper_revokes_exactly_the_stolen_lease,
            the_batch_keeper_fails_closed_at_the_deadline,
            the_batch_keeper_fails_closed_after_errors,
            the_batch_keeper_lets_released_and_stopped_leases_go,
        );
    };
    (@ $setup:path; $($name:ident,)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $name() {
            let Some(place) = $setup($crate::suite::connections(stringify!($name))).await
            else {
                return;
            };
            let place = std::sync::Arc::new(place);
            let run = tokio::spawn($crate::suite::$name(std::sync::Arc::clone(&place))).await;
            $crate::support::Place::teardown(&*place).await;
            if let Err(error) = run {
                std::panic::resume_unwind(error.into_panic());
            }
        }
    )*};
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use crate::support::sqlite::TempDatabase;

    async fn setup(_connections: usize) -> Option<TempDatabase> {
        Some(TempDatabase::new("scale.db"))
    }

    scale!(setup);
}

#[cfg(feature = "postgres")]
mod postgres {
    use crate::support::postgres::TestSchema;

    async fn setup(connections: usize) -> Option<TestSchema> {
        Some(TestSchema::create("fenced_scale_", connections).await)
    }

    scale!(setup);

    /// A batched renewal skips a row another transaction holds (here the fenced
    /// transaction of its own lease) and renews the others at once, so a batch keeper
    /// of fifty leases loses none of the other forty-nine to one transaction held for
    /// twice the ttl. Negative control: a statement that does not skip the row waits for
    /// it while the transaction is open.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_batched_renewal_skips_a_row_a_fenced_transaction_holds() {
        use std::time::Duration;

        use fenced_guard::{BatchKeeper, Candidates, Executor, Renewal, Store, Value};

        use crate::suite::{jobs, provision_range};
        use crate::support::Place;

        let place = TestSchema::create("fenced_scale_", 4).await;
        let store = Store::new(place.connect().await, jobs(&place));
        store.create_schema().await.unwrap();
        provision_range(&store, 1, 50).await;
        let ttl = Duration::from_secs(2);
        let leases = store.claim(&Candidates::any(), 50, ttl).await.unwrap();
        assert_eq!(leases.len(), 50);
        let held = &leases[7];
        let tx = store
            .transaction(held, Duration::from_secs(60))
            .await
            .unwrap()
            .expect("the lease holds");

        let renewed = tokio::time::timeout(Duration::from_secs(10), store.renew_many(&leases))
            .await
            .expect("the batched renewal waited for the locked row")
            .unwrap();
        for (i, renewal) in renewed.iter().enumerate() {
            let expected = if i == 7 {
                Renewal::Locked
            } else {
                Renewal::Applied
            };
            assert_eq!(*renewal, expected, "lease {i}");
        }

        let keeper = BatchKeeper::start(&store).unwrap();
        let kept: Vec<_> = leases.iter().map(|l| keeper.keep(l).unwrap()).collect();
        tokio::time::sleep(2 * ttl).await;
        for (i, (lease, kept)) in leases.iter().zip(&kept).enumerate() {
            if i == 7 {
                continue;
            }
            assert!(kept.loss().is_none(), "lease {i}: {:?}", kept.loss());
            let row = store.inspect(lease.key().clone()).await.unwrap();
            assert!(row.is_of(lease) && row.is_held(), "lease {i}: {row:?}");
        }

        // Negative control: an UPDATE of the held row that does not skip it waits.
        let d = store.dialect();
        let waits = format!(
            "UPDATE {} SET {expiry} = {expiry} WHERE {} = $1",
            store.table().name().quoted(d),
            store.table().key_column().quoted(d),
            expiry = store.table().expiry_column().quoted(d),
        );
        let other = place.connect().await;
        let waited = tokio::time::timeout(
            Duration::from_secs(2),
            other.execute(&waits, &[Value::from(held.key())]),
        )
        .await;
        assert!(
            waited.is_err(),
            "the negative control did not wait: {waited:?}"
        );
        tx.commit().await.unwrap();
        keeper.stop().await;
        place.teardown().await;
    }

    /// A claim inside a caller's own transaction keeps its rows locked until that
    /// transaction ends: a claim from another connection meanwhile skips them and takes
    /// others. A batched renewal runs on the caller's connection too.
    #[tokio::test]
    async fn a_claim_in_the_callers_transaction_holds_its_rows_until_commit() {
        use std::time::Duration;

        use fenced_guard::{Candidates, Store};
        use tokio_postgres::NoTls;

        use crate::suite::{jobs, provision_range};
        use crate::support::Place;
        use crate::support::postgres::url;

        let place = TestSchema::create("fenced_scale_", 1).await;
        let store = Store::new(place.connect().await, jobs(&place));
        store.create_schema().await.unwrap();
        provision_range(&store, 1, 4).await;
        let (mut client, connection) = tokio_postgres::connect(&url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        let ttl = Duration::from_secs(30);

        let tx = client.transaction().await.unwrap();
        let mine = store
            .on(&tx)
            .unwrap()
            .claim(&Candidates::keys([1_i64, 2]), 2, ttl)
            .await
            .unwrap();
        assert_eq!(mine.len(), 2);
        // Locked by the open transaction, not yet committed: skipped, not waited for.
        let others = store.claim(&Candidates::any(), 4, ttl).await.unwrap();
        let mut taken: Vec<String> = others.iter().map(|l| l.key().to_string()).collect();
        taken.sort();
        assert_eq!(taken, ["3", "4"]);
        let renewed = store.on(&tx).unwrap().renew_many(&mine).await.unwrap();
        assert!(renewed.iter().all(|o| o.is_applied()));
        tx.commit().await.unwrap();
        assert!(
            store
                .claim(&Candidates::any(), 4, ttl)
                .await
                .unwrap()
                .is_empty(),
            "every row is held"
        );
        place.teardown().await;
    }

    /// The plans of the statements over many rows use the key's index on a table large
    /// enough that a scan would cost more.
    mod plans {
        use fenced_guard::dialect::batch::ClaimPart;
        use fenced_guard::{Executor, Postgres, Store, dialect};

        use crate::suite::{jobs, provision_range};
        use crate::support::Place;
        use crate::support::postgres::TestSchema;

        /// A store on 20,000 rows, analyzed, so that a scan would cost more than the
        /// key's index.
        async fn analyzed() -> (TestSchema, Store<Postgres>) {
            let place = TestSchema::create("fenced_scale_", 1).await;
            let store = Store::new(place.connect().await, jobs(&place));
            store.create_schema().await.unwrap();
            provision_range(&store, 1, 20_000).await;
            let table = store.table().name().quoted(store.dialect());
            place
                .admin()
                .execute_batch(&format!("ANALYZE {table}"))
                .await
                .unwrap();
            (place, store)
        }

        /// Makes the store's connection plan every prepared statement generically, as
        /// it does after a few runs of one whose custom plan costs no less.
        async fn generic_plans(store: &Store<Postgres>) {
            let client = store.backend().client().await.unwrap();
            client
                .batch_execute("SET plan_cache_mode = force_generic_plan")
                .await
                .unwrap();
        }

        /// The plan of `sql` for these parameter values, as `EXPLAIN EXECUTE` shows it.
        async fn plan(store: &Store<Postgres>, name: &str, sql: &str, values: &str) -> String {
            let client = store.backend().client().await.unwrap();
            client
                .batch_execute(&format!("PREPARE {name} AS {sql}"))
                .await
                .unwrap();
            let plan = client
                .simple_query(&format!("EXPLAIN EXECUTE {name}({values})"))
                .await
                .unwrap()
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            client
                .batch_execute(&format!("DEALLOCATE {name}"))
                .await
                .unwrap();
            plan
        }

        #[tokio::test]
        async fn renewal_and_keyed_claims_use_the_key_index() {
            let (place, store) = analyzed().await;
            let owner = "'00000000-0000-0000-0000-000000000001'";
            let d = store.dialect();
            let renewal = dialect::batch::renew_batch(d, store.table(), 2);
            let claim = dialect::batch::claim(d, store.table(), 2, &[]);
            let acquire = dialect::acquire(d, store.table());
            for (what, sql, values) in [
                (
                    "renewal",
                    renewal,
                    format!("7, 1, {owner}, 1000, 8, 1, {owner}, 1000"),
                ),
                ("claim", claim, format!("2, {owner}, 1000, 7, 8")),
                ("acquisition", acquire, format!("7, {owner}, 1000")),
            ] {
                let plan = plan(&store, "fenced_plan", &sql, &values).await;
                assert!(
                    plan.contains("Index Scan using") && plan.contains("_pkey"),
                    "{what} does not use the key's index:\n{plan}"
                );
                assert!(
                    !plan.contains("Seq Scan on \"Job\""),
                    "{what} scans the table:\n{plan}"
                );
            }
            place.teardown().await;
        }

        /// A claim of any free rows, prepared and run often enough to take a generic
        /// plan, which cannot know its limit, looks from a block of the table on (a TID
        /// range scan) and finds the rows it chose by key: an index condition on the
        /// key's index, no join. Negative control: the claim's earlier shape, the chosen
        /// rows joined with the table in a `WITH`, joins them there (a hash join over the
        /// whole table, or a merge join walking the key's index up to them).
        #[tokio::test]
        async fn a_claims_generic_plan_finds_its_rows_by_key() {
            let (place, store) = analyzed().await;
            let table = store.table().name().quoted(store.dialect());
            let claim = dialect::batch::claim(store.dialect(), store.table(), 0, &[]);
            // The earlier shape, rebuilt from the claim's own parts.
            let part = |after: &str, before: &str| -> String {
                let rest = claim.split_once(after).expect(after).1;
                rest.split_once(before).expect(before).0.to_owned()
            };
            let update = part(" AS s) ", " WHERE fenced_row.");
            let epoch = part("WITH ", ", fenced_start AS");
            let key = format!(
                "fenced_row.{}",
                store.table().key_column().quoted(store.dialect())
            );
            let free = part(
                "fenced_free.ctid >= (SELECT s FROM fenced_start) AND ",
                " LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED) AS fenced_from",
            );
            let (row_free, returned) = claim
                .rsplit_once(")) AND ")
                .expect("the row's own check")
                .1
                .split_once(" RETURNING ")
                .expect("RETURNING");
            let earlier = format!(
                "WITH {epoch}, fenced_claim AS (SELECT fenced_free.{} AS k FROM {table} AS fenced_free \
                 WHERE {free} LIMIT $1 FOR UPDATE SKIP LOCKED) {update} FROM fenced_claim \
                 WHERE {key} = fenced_claim.k AND {row_free} RETURNING {returned}",
                store.table().key_column().quoted(store.dialect()),
            );
            let owner = "'00000000-0000-0000-0000-000000000001'";
            let values = format!("1, {owner}, 1000");
            generic_plans(&store).await;
            let shape = plan(&store, "fenced_claim_now", &claim, &values).await;
            assert!(
                shape.contains("= ANY") && !shape.contains(" Join "),
                "the claim joins its chosen rows:\n{shape}"
            );
            assert!(
                shape.contains("Tid Range Scan") && !shape.contains("Seq Scan"),
                "the claim does not look from a block of the table on:\n{shape}"
            );
            let control = plan(&store, "fenced_claim_before", &earlier, &values).await;
            assert!(
                control.contains(" Join "),
                "the earlier claim's generic plan joins no rows: the test could not tell\n{control}"
            );
            place.teardown().await;
        }

        /// A claim of one row, in a generic plan, looks from its block on (a TID range
        /// scan) and updates its row found by key. Negative control: without its start
        /// the same statement scans the table from its first block.
        #[tokio::test]
        async fn a_claim_of_one_rows_generic_plan_looks_from_its_block() {
            let (place, store) = analyzed().await;
            generic_plans(&store).await;
            let values = "'(3,0)', '00000000-0000-0000-0000-000000000001', 1000";
            for part in [ClaimPart::FromStart, ClaimPart::BeforeStart] {
                let claim = dialect::batch::claim_one(store.table(), part, &[]);
                let name = format!("fenced_claim_one_{part:?}").to_lowercase();
                let shape = plan(&store, &name, &claim, values).await;
                assert!(
                    shape.contains("Tid Range Scan") && !shape.contains("Seq Scan"),
                    "{part:?} does not look from its block:\n{shape}"
                );
                assert!(
                    shape.contains("Index Scan using") && shape.contains("_pkey"),
                    "{part:?} does not find its row by key:\n{shape}"
                );
            }
            let claim = dialect::batch::claim_one(store.table(), ClaimPart::FromStart, &[]);
            // The parameter stays, unused, so that the statement prepares alike.
            let unstarted = claim.replace(
                "fenced_free.ctid >= $1::text::tid AND ",
                "$1::text IS NOT NULL AND ",
            );
            assert_ne!(unstarted, claim);
            let control = plan(&store, "fenced_claim_one_control", &unstarted, values).await;
            assert!(
                control.contains("Seq Scan"),
                "without its start the claim scans no table: the test could not tell\n{control}"
            );
            place.teardown().await;
        }
    }
}

#[cfg(feature = "mssql")]
mod mssql {
    use fenced_guard::MssqlOptions;

    use crate::support::mssql::{TestSchema, WARM_UP};

    /// Connections warmed (`WARM_UP`) and opened before the test, as the keeper's tests
    /// do on the TDS server; at most 8, since each is a server process there.
    async fn setup(connections: usize) -> Option<TestSchema> {
        let warm = MssqlOptions::default().on_connect(WARM_UP);
        TestSchema::create_with("fenced_scale_", connections.min(8), warm).await
    }

    scale!(setup);

    /// A store running through stored procedures has no procedure for a claim or a
    /// batched renewal: each says so before sending anything.
    #[tokio::test]
    async fn claims_and_batches_refuse_procedure_mode() {
        use fenced_guard::{BatchKeeper, Candidates, Error, Store};

        use crate::suite::jobs;
        use crate::support::Place;

        let Some(place) = setup(1).await else { return };
        let store = Store::new(place.connect().await, jobs(&place))
            .through_procedures()
            .unwrap();
        let ttl = std::time::Duration::from_secs(30);
        let config = |what: &str, result: Result<(), Error>| match result {
            Err(Error::Config(message)) => assert!(message.contains("procedure"), "{message}"),
            other => panic!("{what}: expected a configuration error, got {other:?}"),
        };
        config(
            "claim",
            store.claim(&Candidates::any(), 1, ttl).await.map(drop),
        );
        let none: [fenced_guard::Lease; 0] = [];
        config("renew_many", store.renew_many(&none).await.map(drop));
        config("batch keeper", BatchKeeper::start(&store).map(drop));
        place.teardown().await;
    }
}
