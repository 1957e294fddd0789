//! Defence in depth: every statement a `Fenced` sends that can write checks the lease
//! itself, so a stale holder's statement lands nowhere even where the transaction check
//! was fooled. The schedule is "A holds the lease and has a `Fenced`, A's lock ends, A's
//! lease expires, B acquires, then A writes".

use fenced_guard::{Dialect, Error, Executor, InTransaction, Key, Store, Value};
use uuid::Uuid;

use crate::protocol::{TTL, lines, not_in_transaction, reports, superseded};
use crate::support::Place;
use crate::support::lines::{create_lines_table, insert_line, lines_table};

/// An executor that claims to run inside a transaction and does not: each statement
/// commits on its own on a pool. What a custom executor written carelessly, or a
/// transaction check that failed, would hand [`Store::fence`]: its lock ends with the
/// check-and-lock statement.
pub struct Autocommit<B>(pub B);

impl<B: Executor + Sync> Executor for Autocommit<B> {
    fn dialect(&self) -> Dialect {
        self.0.dialect()
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> fenced_guard::Result<u64> {
        self.0.execute(sql, params).await
    }

    async fn query_row(
        &self,
        sql: &str,
        params: &[Value],
    ) -> fenced_guard::Result<Option<Vec<Value>>> {
        self.0.query_row(sql, params).await
    }

    async fn query_rows(
        &self,
        sql: &str,
        params: &[Value],
    ) -> fenced_guard::Result<Vec<Vec<Value>>> {
        self.0.query_rows(sql, params).await
    }

    async fn execute_batch(&self, sql: &str) -> fenced_guard::Result<()> {
        self.0.execute_batch(sql).await
    }
}

impl<B: Executor + Sync> InTransaction for Autocommit<B> {}

fn quoted(d: Dialect, name: &str) -> String {
    fenced_guard::Identifier::new(name).unwrap().quoted(d)
}

/// Every way A's statement could write the lines table, each as `(sql, returns rows)`:
/// an insert, an insert read back, an update, a delete, and an insert led by a `WITH`
/// clause of its own. Each binds the report's key as parameter 1 and a line as 2.
fn writes<E: Executor>(place: &impl Place, store: &Store<E>) -> Vec<(String, bool)> {
    let d = store.dialect();
    let lines = lines_table(place, store);
    let (report, line) = (quoted(d, "Report"), quoted(d, "Line"));
    let (p1, p2) = (d.placeholder(1), d.placeholder(2));
    vec![
        (insert_line(place, store), false),
        (
            format!("INSERT INTO {lines} ({report}, {line}) VALUES ({p1}, {p2}) RETURNING {line}"),
            true,
        ),
        (
            format!("UPDATE {lines} SET {line} = {p2} WHERE {report} = {p1}"),
            false,
        ),
        (
            format!("DELETE FROM {lines} WHERE {report} = {p1} AND {line} <> {p2}"),
            false,
        ),
        (
            format!(
                "WITH x (n) AS (SELECT 1) INSERT INTO {lines} ({report}, {line}) \
                 SELECT {p1}, {p2} FROM x"
            ),
            false,
        ),
    ]
}

/// The lines of `key`, in order: what must not change after B acquired.
async fn contents<E: Executor>(place: &impl Place, store: &Store<E>, key: &Key) -> Vec<String> {
    let d = store.dialect();
    let sql = format!(
        "SELECT {line} FROM {} WHERE {} = {} ORDER BY {line}",
        lines_table(place, store),
        quoted(d, "Report"),
        d.placeholder(1),
        line = quoted(d, "Line"),
    );
    store
        .backend()
        .query_rows(&sql, &[Value::from(key)])
        .await
        .unwrap()
        .into_iter()
        .map(|row| match &row[0] {
            Value::Text(t) => t.clone(),
            other => panic!("a line of text, not {other:?}"),
        })
        .collect()
}

/// A `Fenced` made on an [`Autocommit`] executor over the guard's own pool, so no
/// transaction holds A's lock. While A's lease holds, each of its writes lands; once B
/// acquired, each is refused, through `execute` and `query_row` alike, and the lines
/// are as A left them. Negative control: the same statements through the executor
/// itself, with no `Fenced`, land.
pub async fn every_stale_statement_is_refused_with_no_transaction<P: Place>(place: &P) {
    let own = Store::new(place.connect().await, reports(place));
    own.create_schema().await.unwrap();
    create_lines_table(place, &own).await;
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();
    let a = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();

    let careless = Store::new(Autocommit(place.connect().await), reports(place));
    let fenced = careless
        .fence(&a)
        .await
        .expect("the check-and-lock statement runs")
        .expect("A's lease holds");
    let line = |text: &str| [Value::from(&key), Value::from(text)];
    let statements = writes(place, &own);
    for (i, (sql, returns)) in statements.iter().enumerate() {
        let text = format!("A's line {i}");
        if *returns {
            fenced.query_row(sql, &line(&text)).await.expect(sql);
        } else {
            fenced.execute(sql, &line(&text)).await.expect(sql);
        }
    }
    let before = contents(place, &own, &key).await;
    assert!(!before.is_empty());

    superseded(&own, &key, &a).await;
    for (sql, returns) in &statements {
        let stale = line("A's stale line");
        let refused = if *returns {
            fenced.query_row(sql, &stale).await.map(|_| 0)
        } else {
            fenced.execute(sql, &stale).await
        };
        assert!(not_in_transaction(&refused), "{sql}: {refused:?}");
        if let Err(Error::NotInTransaction(why)) = &refused {
            assert!(why.contains("no longer carries the lease"), "{why}");
        }
    }
    assert_eq!(contents(place, &own, &key).await, before);

    // Negative control: the schedule left A's statements unfenced but for their own
    // check; sent without it, they land.
    for (sql, returns) in &statements {
        let stale = line("A's stale line");
        if *returns {
            fenced
                .store()
                .backend()
                .query_row(sql, &stale)
                .await
                .unwrap();
        } else {
            fenced.store().backend().execute(sql, &stale).await.unwrap();
        }
    }
    assert_ne!(contents(place, &own, &key).await, before);
    assert!(lines(place, &own, &key).await > i64::try_from(before.len()).unwrap());
}

#[cfg(feature = "postgres")]
mod postgres {
    use fenced_guard::{Error, Executor, Key, Value};
    use tokio_postgres::NoTls;
    use uuid::Uuid;

    use crate::protocol::{TTL, lines, not_in_transaction, superseded};
    use crate::support::Place;
    use crate::support::lines::insert_line;
    use crate::support::postgres::{TestSchema, url};

    #[tokio::test]
    async fn every_stale_statement_is_refused_with_no_transaction() {
        let schema = TestSchema::create("fenced_defence_", 1).await;
        super::every_stale_statement_is_refused_with_no_transaction(&schema).await;
        schema.teardown().await;
    }

    /// A real transaction ended under the `Fenced` by a `COMMIT` sent through the
    /// store's executor (which a `Fenced` does not screen): B acquires, and A's line is
    /// refused by its own check. Negative control: the same line sent on the executor
    /// lands.
    #[tokio::test]
    async fn a_transaction_committed_under_the_fenced_refuses_its_stale_lines() {
        let schema = TestSchema::create("fenced_defence_", 1).await;
        let own = crate::postgres::store(&schema).await;
        let key = Key::from(Uuid::new_v4());
        own.provision(key.clone()).await.unwrap();
        let a = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
        let (mut client, connection) = tokio_postgres::connect(&url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        let insert = insert_line(&schema, &own);
        let line = || [Value::from(&key), Value::from("A's stale line")];

        let mut tx = client.transaction().await.unwrap();
        {
            let fenced = own.on(&mut tx).unwrap().fence(&a).await.unwrap().unwrap();
            let commit = fenced.execute("COMMIT", &[]).await;
            assert!(
                matches!(commit, Err(Error::StatementRefused { .. })),
                "{commit:?}"
            );
            fenced
                .store()
                .backend()
                .execute_batch("COMMIT")
                .await
                .unwrap();
            superseded(&own, &key, &a).await;
            let late = fenced.execute(&insert, &line()).await;
            assert!(not_in_transaction(&late), "{late:?}");
            assert_eq!(lines(&schema, &own, &key).await, 0);

            // Negative control: the same line without the `Fenced` lands.
            fenced
                .store()
                .backend()
                .execute(&insert, &line())
                .await
                .unwrap();
            assert_eq!(lines(&schema, &own, &key).await, 1);
        }
        drop(tx);
        schema.teardown().await;
    }

    /// A statement that can write and cannot carry the check in a `WITH` clause is
    /// refused before it is sent; a read is sent as written.
    #[tokio::test]
    async fn a_write_that_cannot_carry_the_check_is_refused() {
        let schema = TestSchema::create("fenced_defence_", 1).await;
        let own = crate::postgres::store(&schema).await;
        let key = Key::from(Uuid::new_v4());
        own.provision(key.clone()).await.unwrap();
        let a = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
        let (mut client, connection) = tokio_postgres::connect(&url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        let mut tx = client.transaction().await.unwrap();
        let fenced = own.on(&mut tx).unwrap().fence(&a).await.unwrap().unwrap();
        let call = fenced
            .execute("CALL pg_catalog.some_procedure($1)", &[1_i64.into()])
            .await;
        assert!(
            matches!(&call, Err(Error::StatementRefused { reason }) if reason.contains("WITH clause")),
            "{call:?}"
        );
        let read = fenced.query_row("SELECT 1::bigint", &[]).await.unwrap();
        assert_eq!(read, Some(vec![Value::I64(1)]));
        drop(fenced);
        drop(tx);
        schema.teardown().await;
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use crate::support::sqlite::TempDatabase;

    #[tokio::test]
    async fn every_stale_statement_is_refused_with_no_transaction() {
        let place = TempDatabase::new("defence.db");
        super::every_stale_statement_is_refused_with_no_transaction(&place).await;
    }
}
