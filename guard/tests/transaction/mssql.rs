//! The schedules on SQL Server, at `FENCED_MSSQL_URL`; a waiter is seen blocked in
//! `sys.dm_exec_requests`, or on Babelfish, which has no such view, in PostgreSQL's
//! `pg_stat_activity` (its sessions are PostgreSQL backends, `@@SPID` their pid).

use std::time::Duration;

use fenced_guard::{Executor, Mssql, Value};

use crate::suite::Fixture;
use crate::support::mssql::TestSchema;

async fn setup() -> Option<TestSchema> {
    TestSchema::create("fenced_tx_", 2).await
}

impl Fixture for TestSchema {
    async fn marker(&self, waiter: &Mssql) -> Value {
        let spid = waiter
            .query_i64("SELECT CAST(@@SPID AS bigint)", &[])
            .await
            .expect("the waiter's session id")
            .expect("a session id");
        Value::I64(spid)
    }

    async fn until_blocked(&self, marker: &Value) {
        let sql = if crate::support::mssql::is_babelfish(self.admin()).await {
            "SELECT CAST(COUNT(*) AS bigint) FROM pg_catalog.pg_stat_activity \
             WHERE pid = @P1 AND wait_event_type = 'Lock'"
        } else {
            "SELECT CAST(COUNT(*) AS bigint) FROM sys.dm_exec_requests \
             WHERE session_id = @P1 AND blocking_session_id <> 0"
        };
        for _ in 0..3_000 {
            let waiting = self
                .admin()
                .query_i64(sql, std::slice::from_ref(marker))
                .await
                .expect("read the lock view");
            if waiting == Some(1) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the waiter never waited for the row lock");
    }
}

crate::transactions!(with_epoch_lock setup);
