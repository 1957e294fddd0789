//! The lease cycle on the caller's own client (`store.on(&client)`) against the same
//! statements prepared once on the raw driver: PostgreSQL and SQL Server.

use fenced_guard::{Dialect, FencedTable, Mssql, Postgres, Store, Value};
use tokio_postgres::NoTls;
use uuid::Uuid;

use super::place::{MssqlPlace, PgPlace, TdsClient};
use super::{Name, Pair, Results, Run, ServerClock, Settings, Side, compare};
use crate::error::Result;
use crate::measure::{self, Cycle, Summary, Timing};
use crate::postgres::{RawCycle, connect};
use crate::workload::{CycleSql, PAYLOAD, PAYLOAD_COLUMN, Rows, Shape, TTL, one_row};

pub(crate) async fn run(
    settings: &Settings,
    results: &mut Results,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    let most = settings.workers.iter().copied().max().unwrap_or(1);
    let rows = i64::try_from(most).unwrap_or(i64::MAX);
    let place = PgPlace::setup(&settings.postgres, settings.durable).await?;
    let pair = PgClient {
        table: place.table("CycleLease", rows).await?,
        place: &place,
    };
    let measured = compare(&pair, settings, log).await;
    place.teardown().await?;
    results.ran_on(place.version().await?);
    results.measured.extend(measured?);

    if let Some(url) = &settings.mssql {
        let place = MssqlPlace::setup(url).await?;
        let measured = async {
            let pair = TdsClientPair {
                table: place.table("CycleLease", rows).await?,
                place: &place,
            };
            compare(&pair, settings, log).await
        }
        .await;
        let version = place.version().await;
        place.teardown().await?;
        results.ran_on(version?);
        results.measured.extend(measured?);
    }
    Ok(())
}

/// Runs `count` lease cycles one after another on the first row of `table`, on one
/// client of `config`: through a store kept `on` that client (`on_client`), or the
/// same statements prepared once on the raw driver. Each must take its lease.
pub(crate) async fn cycles(
    config: &str,
    table: &FencedTable,
    on_client: bool,
    count: u64,
) -> Result<()> {
    let key = Rows::Distinct.key(0);
    let client = connect(config).await?;
    if on_client {
        // As in the timed run: the store's own pool is never used.
        let store = Store::new(
            Postgres::from_config(config.parse()?, NoTls, 1),
            table.clone(),
        );
        let on = store.on(&client)?;
        let mut cycle = OnClient(&on);
        super::each_taken(count, "a counted cycle", async || {
            measure::Attempt::attempt(&mut cycle, key).await
        })
        .await
    } else {
        let sql = CycleSql::render(Dialect::Postgres, table, Shape::Three)?;
        let mut cycle = RawCycle::prepare(client, &sql).await?;
        super::each_taken(count, "a counted cycle", async || cycle.attempt(key).await).await
    }
}

/// The cycle through the guard on `on`, a store on the worker's own client.
async fn on_client<E: fenced_guard::Executor>(on: &Store<E>, key: i64) -> Result<bool> {
    let Some(lease) = on.try_acquire(key, TTL).await? else {
        return Ok(false);
    };
    let payload = [(PAYLOAD_COLUMN, Value::from(PAYLOAD))];
    applied(on.publish(&lease, &payload).await?.is_applied(), "publish")?;
    applied(on.release(&lease).await?.is_applied(), "release")?;
    Ok(true)
}

/// The cycle on a store the worker keeps on its client.
struct OnClient<'s, E>(&'s Store<E>);

impl<E: fenced_guard::Executor + Sync> measure::Attempt for OnClient<'_, E> {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        on_client(self.0, key).await
    }
}

fn applied(applied: bool, what: &str) -> Result<()> {
    one_row(u64::from(applied), what)
}

struct PgClient<'p> {
    place: &'p PgPlace,
    table: FencedTable,
}

impl Pair for PgClient<'_> {
    fn name(&self) -> Name {
        Name {
            path: "lease cycle on the caller's client",
            against: "the raw driver, statements prepared once",
            database: "PostgreSQL",
            unit: "cycle",
            target: Some(0.9),
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let place = self.place;
        place
            .vacuum(&self.table.name().quoted(Dialect::Postgres), true)
            .await?;
        let name = place.name(match side {
            Side::Guard => "client",
            Side::Driver => "raw",
        });
        let config = place.named(&name);
        let clock = ServerClock::of(&place.monitor, &name);
        let (summary, server) = match side {
            Side::Guard => {
                // The store's own pool is never used: only its statements, on the
                // workers' clients.
                let store = Store::new(
                    Postgres::from_config(config.parse()?, NoTls, 1),
                    self.table.clone(),
                );
                let mut clients = Vec::with_capacity(workers);
                for _ in 0..workers {
                    clients.push(connect(&config).await?);
                }
                // Each worker keeps its store on its client for the whole run, as a
                // service keeps it with the client.
                let window = timing.start();
                let handles = clients
                    .into_iter()
                    .enumerate()
                    .map(|(i, client)| {
                        let store = store.clone();
                        tokio::spawn(async move {
                            let on = store.on(&client)?;
                            let key = Rows::Distinct.key(i);
                            let tally = measure::drive_with(OnClient(&on), key, window).await?;
                            Ok(((), tally))
                        })
                    })
                    .collect();
                let (_, tally, cpu, (), server) = measure::gather(
                    handles,
                    window,
                    || clock.start(),
                    || std::future::ready(clock.stop()),
                )
                .await?;
                (Summary::of(tally, window.measured(), cpu), server)
            }
            Side::Driver => {
                let sql = CycleSql::render(Dialect::Postgres, &self.table, Shape::Three)?;
                let mut cycles = Vec::with_capacity(workers);
                for _ in 0..workers {
                    cycles.push(RawCycle::prepare(connect(&config).await?, &sql).await?);
                }
                run_cycles(cycles, timing, &clock).await?
            }
        };
        Ok(Run::of(summary, server, timing.measured))
    }
}

/// Runs one cycle of each of `cycles` at once, untimed, so that each warms a
/// connection of its own: a TDS login to Babelfish starts a server process whose parser
/// caches are cold, and its first statements took up to a second on a loaded 2-core
/// machine, longer than a short window.
pub(crate) async fn warm<C: Cycle>(cycles: Vec<C>) -> Result<Vec<C>> {
    let tasks: Vec<_> = cycles
        .into_iter()
        .enumerate()
        .map(|(i, mut cycle)| {
            tokio::spawn(async move {
                let key = Rows::Distinct.key(i);
                // Bounded: the worker's own row is free but for its own leases.
                for _ in 0..100 {
                    if cycle.attempt(key).await? {
                        break;
                    }
                }
                Ok::<_, crate::error::Error>(cycle)
            })
        })
        .collect();
    let mut warmed = Vec::with_capacity(tasks.len());
    for task in tasks {
        warmed.push(task.await.map_err(|_| crate::error::Error::Worker)??);
    }
    Ok(warmed)
}

/// Runs `cycles` (worker `i` on row `i + 1`) over a window starting now; the summary,
/// and the server's CPU time over the window.
pub(crate) async fn run_cycles<C: Cycle>(
    cycles: Vec<C>,
    timing: Timing,
    clock: &ServerClock<'_>,
) -> Result<(Summary, Option<u64>)> {
    let window = timing.start();
    let (_, tally, cpu, (), server) = measure::run_async(
        cycles,
        |i| Rows::Distinct.key(i),
        window,
        || clock.start(),
        || std::future::ready(clock.stop()),
    )
    .await?;
    Ok((Summary::of(tally, window.measured(), cpu), server))
}

// ---------------------------------------------------------------------------------------
// SQL Server.

/// The cycle through the guard on a tiberius client of the worker's own.
struct OnTds {
    client: TdsClient,
    store: Store<Mssql>,
}

impl Cycle for OnTds {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        on_client(&self.store.on(&mut self.client)?, key).await
    }
}

/// The same statements on tiberius alone: the acquisition read as a query, the
/// writes' counts as tiberius gives them.
struct RawTds {
    client: TdsClient,
    sql: CycleSql,
}

impl Cycle for RawTds {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        let owner = Uuid::new_v4();
        let ttl_ms = i64::try_from(TTL.as_millis()).unwrap_or(i64::MAX);
        let row = self
            .client
            .query(&self.sql.acquire, &[&key, &owner, &ttl_ms])
            .await?
            .into_results()
            .await?
            .into_iter()
            .next_back()
            .and_then(|rows| rows.into_iter().next());
        let Some(generation) = row.and_then(|row| row.get::<i64, _>(0)) else {
            return Ok(false);
        };
        let published = self
            .client
            .execute(&self.sql.publish, &[&PAYLOAD, &key, &generation, &owner])
            .await?
            .total();
        one_row(published, "publish")?;
        if let Some(release) = &self.sql.release {
            let released = self
                .client
                .execute(release, &[&key, &generation, &owner])
                .await?
                .total();
            one_row(released, "release")?;
        }
        Ok(true)
    }
}

struct TdsClientPair<'p> {
    place: &'p MssqlPlace,
    table: FencedTable,
}

impl Pair for TdsClientPair<'_> {
    fn name(&self) -> Name {
        Name {
            path: "lease cycle on the caller's client",
            against: "the raw driver, statements prepared once",
            database: "SQL Server (TDS)",
            unit: "cycle",
            target: Some(0.9),
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let no_server = ServerClock::none();
        let summary = match side {
            Side::Guard => {
                let store = Store::new(self.place.pool(1).await?, self.table.clone());
                let mut cycles = Vec::with_capacity(workers);
                for _ in 0..workers {
                    cycles.push(OnTds {
                        client: self.place.client().await?,
                        store: store.clone(),
                    });
                }
                let cycles = warm(cycles).await?;
                run_cycles(cycles, timing, &no_server).await?.0
            }
            Side::Driver => {
                let sql = CycleSql::render(Dialect::Mssql, &self.table, Shape::Three)?;
                let mut cycles = Vec::with_capacity(workers);
                for _ in 0..workers {
                    cycles.push(RawTds {
                        client: self.place.client().await?,
                        sql: sql.clone(),
                    });
                }
                let cycles = warm(cycles).await?;
                run_cycles(cycles, timing, &no_server).await?.0
            }
        };
        Ok(Run::of(summary, None, timing.measured))
    }
}
