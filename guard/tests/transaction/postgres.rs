//! The schedules on PostgreSQL; a waiter is seen waiting in `pg_stat_activity`.

use std::time::Duration;

use fenced_guard::{Executor, Postgres, Value};

use crate::suite::Fixture;
use crate::support::postgres::TestSchema;

/// Two connections per backend: a fenced transaction holds one.
async fn setup() -> Option<TestSchema> {
    Some(TestSchema::create("fenced_tx_", 2).await)
}

impl Fixture for TestSchema {
    async fn marker(&self, waiter: &Postgres) -> Value {
        let row = waiter
            .query_row("SELECT pg_backend_pid()", &[])
            .await
            .expect("the waiter's process id");
        row.and_then(|row| row.into_iter().next())
            .expect("a process id")
    }

    async fn until_blocked(&self, marker: &Value) {
        let sql = "SELECT CAST(count(*) AS bigint) FROM pg_stat_activity \
                   WHERE pid = $1 AND wait_event_type = 'Lock'";
        // Bounded: a waiter that never blocks fails the test rather than hanging it.
        for _ in 0..3_000 {
            let waiting = self
                .admin()
                .query_i64(sql, std::slice::from_ref(marker))
                .await
                .expect("read pg_stat_activity");
            if waiting == Some(1) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the waiter never waited for the row lock");
    }
}

crate::transactions!(with_epoch_lock setup);
