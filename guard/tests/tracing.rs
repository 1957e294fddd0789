//! Every protocol step is a `fenced` span carrying the table, the key, the generation
//! and the outcome, and never a value of the caller's columns.

#![allow(missing_docs)]
#![cfg(feature = "sqlite")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fenced_guard::{ColumnType, FencedTable, Outcome, Sqlite, Store, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span's name and its fields, as text.
type Recorded = (String, HashMap<String, String>);

/// The fields of every span, by span id.
#[derive(Clone, Default)]
struct Spans {
    next: Arc<AtomicU64>,
    fields: Arc<Mutex<HashMap<u64, Recorded>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = HashMap::new();
        span.record(&mut Fields(&mut fields));
        self.fields
            .lock()
            .unwrap()
            .insert(id, (span.metadata().name().to_owned(), fields));
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some((_, fields)) = self.fields.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Spans {
    /// The `fenced` spans, in the order they were made.
    fn steps(&self) -> Vec<HashMap<String, String>> {
        let all = self.fields.lock().unwrap();
        let mut ids: Vec<_> = all.keys().copied().collect();
        ids.sort_unstable();
        ids.iter()
            .filter(|id| all[id].0 == "fenced")
            .map(|id| all[id].1.clone())
            .collect()
    }
}

/// The steps that carry `text` in any field.
fn leaking(steps: &[HashMap<String, String>], text: &str) -> Vec<String> {
    steps
        .iter()
        .filter(|fields| fields.values().any(|v| v.contains(text)))
        .map(|fields| format!("{fields:?}"))
        .collect()
}

const SECRET: &str = "a value of the caller's column";

#[test]
fn every_step_is_a_span_with_its_outcome_and_no_caller_value() {
    let spans = Spans::default();
    let dispatch = tracing::Dispatch::new(spans.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = uuid::Uuid::new_v4();
    tracing::dispatcher::with_default(&dispatch, || {
        runtime.block_on(async {
            let table = FencedTable::builder()
                .column("Payload", ColumnType::Text)
                .build()
                .unwrap();
            let store = Store::new(Sqlite::open(dir.path().join("t.db")).await.unwrap(), table);
            store.create_schema().await.unwrap();
            store.provision(key).await.unwrap();
            let ttl = Duration::from_secs(30);
            let lease = store.try_acquire(key, ttl).await.unwrap().unwrap();
            assert!(store.try_acquire(key, ttl).await.unwrap().is_none());
            let write = [("Payload", Value::from(SECRET))];
            assert_eq!(store.renew(&lease).await.unwrap(), Outcome::Applied);
            assert_eq!(
                store.update(&lease, &write).await.unwrap(),
                Outcome::Applied
            );
            let tx = store
                .transaction(&lease, ttl)
                .await
                .unwrap()
                .expect("the lease holds");
            assert_eq!(
                tx.store().publish(&lease, &write).await.unwrap(),
                Outcome::Applied
            );
            tx.commit().await.unwrap();
            assert_eq!(
                store.publish(&lease, &write).await.unwrap(),
                Outcome::Refused
            );
            assert_eq!(store.release(&lease).await.unwrap(), Outcome::Applied);
        });
    });

    let steps = spans.steps();
    let seen: Vec<(String, String)> = steps
        .iter()
        .map(|f| {
            (
                f["step"].clone(),
                f.get("outcome").cloned().unwrap_or_default(),
            )
        })
        .collect();
    let expected = [
        ("provision", "applied"),
        ("try_acquire", "acquired"),
        ("try_acquire", "held"),
        ("renew", "applied"),
        ("update", "applied"),
        ("transaction", "applied"),
        ("publish", "applied"),
        ("commit", "applied"),
        ("publish", "refused"),
        ("release", "applied"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(s, o)| (s.to_string(), o.to_string()))
        .collect();
    assert_eq!(seen, expected);
    for fields in &steps {
        assert!(fields["table"].contains("ReportPublication"), "{fields:?}");
        assert_eq!(fields["key"], key.to_string(), "{fields:?}");
    }
    let generations: Vec<_> = steps.iter().filter_map(|f| f.get("generation")).collect();
    assert!(generations.iter().all(|g| *g == "1"), "{generations:?}");
    assert!(generations.len() >= 8, "{generations:?}");
    assert_eq!(leaking(&steps, SECRET), Vec::<String>::new());

    // Negative control: the leak check finds a caller's value where one is.
    let mut leaked = steps[0].clone();
    leaked.insert("value".into(), SECRET.into());
    assert_eq!(leaking(&[leaked], SECRET).len(), 1);
}
