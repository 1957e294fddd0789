//! What is measured: the table, the cycles, and which rows the workers use.

use std::time::Duration;

use fenced_guard::{
    Backend, ColumnType, FencedTable, FencedTableBuilder, Identifier, KeyType, Outcome, Store,
    Value, dialect,
};

use crate::error::{Error, Result};
use crate::measure::Cycle;

/// The lease's time to live: long enough that no lease expires during a cycle, so every
/// refusal in an uncontended cycle is a bug.
pub(crate) const TTL: Duration = Duration::from_secs(30);

/// The caller's column written by each publication, and its value.
pub(crate) const PAYLOAD_COLUMN: &str = "Payload";
/// The published value: a small report body.
pub(crate) const PAYLOAD: &str = "a report body of a few dozen bytes, published once per lease";

/// The key of the one contended row; distinct rows are `1..=workers`.
pub(crate) const CONTENDED_KEY: i64 = 0;

/// Which rows the workers cycle on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rows {
    /// Worker `i` on row `i + 1`: no two workers meet.
    Distinct,
    /// Every worker on the same row: acquisitions are refused while another holds it.
    Contended,
}

impl Rows {
    /// The row of worker `i`.
    pub(crate) fn key(self, worker: usize) -> i64 {
        match self {
            Rows::Distinct => i64::try_from(worker).unwrap_or(i64::MAX - 1) + 1,
            Rows::Contended => CONTENDED_KEY,
        }
    }

    /// A label for tables.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Rows::Distinct => "distinct",
            Rows::Contended => "contended",
        }
    }
}

/// Which statements make a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The article's cycle: acquire, publish, release (three statements).
    Three,
    /// Acquire, then publish-and-release in one statement (two statements).
    Fused,
}

/// The benchmark's fenced table, `name` (optionally schema-qualified), bigint keys, one
/// text column.
pub(crate) fn table(name: &str) -> Result<FencedTable> {
    Ok(table_builder(name).build()?)
}

/// The builder of [`table`], for a benchmark that declares more.
pub(crate) fn table_builder(name: &str) -> FencedTableBuilder {
    FencedTable::builder()
        .table(name)
        .key_type(KeyType::BigInt)
        .column(PAYLOAD_COLUMN, ColumnType::Text)
}

/// The statement texts of a cycle, exactly as the guard renders them.
#[derive(Clone, Debug)]
pub(crate) struct CycleSql {
    pub(crate) acquire: String,
    /// Publish (three-statement shape) or publish-and-release (fused shape).
    pub(crate) publish: String,
    /// `None` for the fused shape.
    pub(crate) release: Option<String>,
    /// The guard's read of a row it could not acquire, which tells a held row from a
    /// missing one (`Store::try_acquire`): run by the guard only, after a refused
    /// acquisition.
    pub(crate) inspect: String,
}

impl CycleSql {
    /// The statements of `shape` for `table` in `dialect`.
    pub(crate) fn render(d: dialect::Dialect, table: &FencedTable, shape: Shape) -> Result<Self> {
        let payload = Identifier::new(PAYLOAD_COLUMN)?;
        Ok(match shape {
            Shape::Three => CycleSql {
                acquire: dialect::acquire(d, table),
                publish: dialect::publish(d, table, &[&payload], false),
                release: Some(dialect::release(d, table)),
                inspect: dialect::inspect(d, table),
            },
            Shape::Fused => CycleSql {
                acquire: dialect::acquire(d, table),
                publish: dialect::publish(d, table, &[&payload], true),
                release: None,
                inspect: dialect::inspect(d, table),
            },
        })
    }
}

/// A cycle through the guard's public API.
pub(crate) struct GuardCycle<B> {
    pub(crate) store: Store<B>,
    pub(crate) shape: Shape,
}

impl<B: Backend + Clone> GuardCycle<B> {
    /// One cycle per worker, all through clones of `store`.
    pub(crate) fn for_workers(store: &Store<B>, shape: Shape, workers: usize) -> Vec<Self> {
        (0..workers)
            .map(|_| GuardCycle {
                store: store.clone(),
                shape,
            })
            .collect()
    }
}

impl<B: Backend + Clone> Cycle for GuardCycle<B> {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        let Some(lease) = self.store.try_acquire(key, TTL).await? else {
            return Ok(false);
        };
        let payload = [(PAYLOAD_COLUMN, Value::from(PAYLOAD))];
        match self.shape {
            Shape::Three => {
                applied(self.store.publish(&lease, &payload).await?, "publish")?;
                applied(self.store.release(&lease).await?, "release")?;
            }
            Shape::Fused => applied(
                self.store.publish_and_release(&lease, &payload).await?,
                "publish-and-release",
            )?,
        }
        Ok(true)
    }
}

fn applied(outcome: Outcome, what: &str) -> Result<()> {
    if outcome.is_applied() {
        Ok(())
    } else {
        Err(Error::Protocol(format!(
            "{what} was refused under a lease that was just acquired"
        )))
    }
}

/// Checks a raw statement's affected-row count like [`applied`].
pub(crate) fn one_row(rows: u64, what: &str) -> Result<()> {
    if rows == 1 {
        Ok(())
    } else {
        Err(Error::Protocol(format!(
            "{what} affected {rows} rows under a lease that was just acquired"
        )))
    }
}
