//! Claiming one row (`Store::claim` of any free row) against `try_acquire` of a random
//! key, both through the guard's pool, leases of 1 ms: every row taken is free again
//! at once, so both sides measure acquisition alone, on a table of `--claim-rows`
//! rows.

use std::time::Duration;

use fenced_guard::{Candidates, Dialect, FencedTable, Postgres, Store};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::client::run_cycles;
use super::place::PgPlace;
use super::{Name, Pair, Results, Run, ServerClock, Settings, Side, compare};
use crate::error::Result;
use crate::measure::{Cycle, Timing};

/// The leases' time to live.
const TTL: Duration = Duration::from_millis(1);

pub(crate) async fn run(
    settings: &Settings,
    results: &mut Results,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    let place = PgPlace::setup(&settings.postgres, settings.durable).await?;
    let measured = async {
        let pair = Claims {
            table: place.table("Queue", settings.claim_rows).await?,
            rows: settings.claim_rows,
            place: &place,
        };
        compare(&pair, settings, log).await
    }
    .await;
    place.teardown().await?;
    results.measured.extend(measured?);
    Ok(())
}

/// Runs `count` acquisitions one after another on `table` (`rows` rows), through a pool
/// of one connection of `config`: claims of one row, or `try_acquire`s of a random key,
/// each of which must take its lease.
pub(crate) async fn acquisitions(
    config: &str,
    table: &FencedTable,
    rows: i64,
    claim: bool,
    count: u64,
) -> Result<()> {
    let mut cycle = Acquisitions {
        store: Store::new(Postgres::connect_with(config, 1).await?, table.clone()),
        claim,
        rows,
        rng: StdRng::seed_from_u64(0),
    };
    super::each_taken(count, "a counted acquisition", async || {
        cycle.attempt(0).await
    })
    .await
}

struct Claims<'p> {
    place: &'p PgPlace,
    table: FencedTable,
    rows: i64,
}

/// One worker's acquisitions: claims of one row, or `try_acquire` of random keys.
struct Acquisitions {
    store: Store<Postgres>,
    claim: bool,
    rows: i64,
    rng: StdRng,
}

impl Cycle for Acquisitions {
    async fn attempt(&mut self, _key: i64) -> Result<bool> {
        if self.claim {
            let leases = self.store.claim(&Candidates::any(), 1, TTL).await?;
            Ok(!leases.is_empty())
        } else {
            let key = self.rng.random_range(1..=self.rows);
            Ok(self.store.try_acquire(key, TTL).await?.is_some())
        }
    }
}

impl Pair for Claims<'_> {
    fn name(&self) -> Name {
        Name {
            path: "claim of one row",
            against: "try_acquire of a free key",
            database: "PostgreSQL",
            unit: "lease",
            target: Some(0.8),
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let place = self.place;
        place
            .vacuum(&self.table.name().quoted(Dialect::Postgres), false)
            .await?;
        let name = place.name(match side {
            Side::Guard => "claim",
            Side::Driver => "try-acquire",
        });
        let store = Store::new(
            Postgres::connect_with(&place.named(&name), workers).await?,
            self.table.clone(),
        );
        let cycles = (0..workers)
            .map(|worker| Acquisitions {
                store: store.clone(),
                claim: side == Side::Guard,
                rows: self.rows,
                rng: StdRng::seed_from_u64(worker as u64),
            })
            .collect::<Vec<_>>();
        let clock = ServerClock::of(&place.monitor, &name);
        let (summary, server) = run_cycles(cycles, timing, &clock).await?;
        Ok(Run::of(summary, server, timing.measured))
    }
}
