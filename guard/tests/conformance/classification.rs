//! Whether an error may have committed, by where it happened: checked on each backend
//! through a unit of work that retries only errors that may have committed.

use std::time::Duration;

use fenced_guard::{ColumnType, Completion, Error, FencedTable, KeyType, Store, Value, Work};

use crate::support::Place;

/// A store on `place` whose table has a `bigint` column `Count`, with row 1 provisioned.
pub async fn store<P: Place>(place: &P) -> Store<P::Backend> {
    let table = FencedTable::builder()
        .table(place.qualified("Counted"))
        .key_type(KeyType::BigInt)
        .column("Count", ColumnType::BigInt)
        .build()
        .unwrap();
    let store = Store::new(place.connect().await, table);
    store.create_schema().await.unwrap();
    store.provision(1_i64).await.unwrap();
    store
}

/// Publishes `columns` with retries: an error raised before the statement was
/// executed is returned at once, never [`Error::PublicationUnsettled`], and the row is
/// released and acquirable again.
pub async fn publication_is_not_retried<P: Place>(
    place: &P,
    columns: Vec<(&'static str, Value)>,
) -> Error {
    let store = store(place).await;
    let done = Work::new(&store)
        .publication_retries(3)
        .run(1_i64, |_lease, _stop| async move {
            Ok::<_, std::convert::Infallible>(columns)
        })
        .await;
    let error = match done {
        Err(error) => error,
        other => panic!("expected an error, got {other:?}"),
    };
    assert!(
        !matches!(error, Error::PublicationUnsettled { .. }),
        "retried: {error}"
    );
    assert!(!error.may_have_committed(), "{error}");
    let again = store
        .try_acquire(1_i64, Duration::from_secs(60))
        .await
        .unwrap()
        .expect("the row was released");
    assert!(store.release(&again).await.unwrap().is_applied());
    error
}

/// A unit of work that publishes a good value: the negative control, showing the
/// store publishes when nothing is wrong.
pub async fn a_good_publication_is_published<P: Place>(place: &P) {
    let store = store(place).await;
    let done = Work::new(&store)
        .publication_retries(3)
        .run(1_i64, |_lease, _stop| async move {
            Ok::<_, std::convert::Infallible>(vec![("Count", Value::I64(7))])
        })
        .await
        .unwrap();
    assert!(matches!(done, Completion::Published { .. }), "{done:?}");
}
