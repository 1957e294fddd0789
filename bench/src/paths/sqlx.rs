//! A fenced transaction on the caller's sqlx connection (`store.on(&mut tx).fence(..)`,
//! then the lines and the fenced update through the `Fenced`) against the same
//! statements in a plain sqlx transaction, each worker on a connection of its own.
//! sqlx keeps each statement prepared on its connection, on both sides.

use fenced_guard::{Dialect, FencedTable, Lease, Postgres, Store, Value};
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};

use super::client::run_cycles;
use super::place::PgPlace;
use super::transaction::LINES;
use super::{Name, Pair, Results, Run, ServerClock, Settings, Side, compare, protocol};
use crate::error::Result;
use crate::measure::{Cycle, Timing};
use crate::workload::{self, PAYLOAD, PAYLOAD_COLUMN, Rows};

pub(crate) async fn run(
    settings: &Settings,
    results: &mut Results,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    let most = settings.workers.iter().copied().max().unwrap_or(1);
    let place = PgPlace::setup(&settings.postgres, settings.durable).await?;
    let measured = async {
        let table = place
            .table("SqlxLease", i64::try_from(most).unwrap_or(i64::MAX))
            .await?;
        let store = Store::new(
            Postgres::connect_with(&place.config, 1).await?,
            table.clone(),
        );
        let mut leases = Vec::with_capacity(most);
        for worker in 0..most {
            let key = Rows::Distinct.key(worker);
            leases.push(
                store
                    .try_acquire(key, std::time::Duration::from_secs(3600))
                    .await?
                    .ok_or_else(|| protocol(format!("row {key} was not free")))?,
            );
        }
        let lines = place.lines("\"SqlxLine\"").await?;
        let payload = fenced_guard::Identifier::new(PAYLOAD_COLUMN)?;
        let pair = SqlxPair {
            place: &place,
            insert: format!("INSERT INTO {lines} (\"Report\", \"Line\") VALUES ($1, $2)"),
            update: fenced_guard::dialect::update(Dialect::Postgres, &table, &[&payload]),
            table,
            leases,
            lines,
        };
        compare(&pair, settings, log).await
    }
    .await;
    place.teardown().await?;
    results.measured.extend(measured?);
    Ok(())
}

struct SqlxPair<'p> {
    place: &'p PgPlace,
    table: FencedTable,
    leases: Vec<Lease>,
    insert: String,
    update: String,
    lines: String,
}

/// One worker's connection and lease; `fenced` says which side.
struct SqlxCycle {
    conn: PgConnection,
    store: Option<Store<Postgres>>,
    lease: Lease,
    insert: String,
    update: String,
}

impl Cycle for SqlxCycle {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        let mut tx = self.conn.begin().await?;
        match &self.store {
            Some(store) => {
                let fenced = store
                    .on(&mut tx)?
                    .fence(&self.lease)
                    .await?
                    .ok_or_else(|| protocol("a fence was refused under a held lease"))?;
                for line in LINES {
                    let rows = fenced
                        .execute(&self.insert, &[Value::I64(key), Value::from(line)])
                        .await?;
                    workload::one_row(rows, "a line's insert")?;
                }
                let payload = [(PAYLOAD_COLUMN, Value::from(PAYLOAD))];
                if !fenced
                    .store()
                    .update(&self.lease, &payload)
                    .await?
                    .is_applied()
                {
                    return Err(protocol("a fenced update was refused under a held lease"));
                }
            }
            None => {
                for line in LINES {
                    let done = sqlx::query(sqlx::AssertSqlSafe(self.insert.as_str()))
                        .bind(key)
                        .bind(line)
                        .execute(&mut *tx)
                        .await?;
                    workload::one_row(done.rows_affected(), "a line's insert")?;
                }
                let done = sqlx::query(sqlx::AssertSqlSafe(self.update.as_str()))
                    .bind(PAYLOAD)
                    .bind(key)
                    .bind(self.lease.generation())
                    .bind(self.lease.owner())
                    .execute(&mut *tx)
                    .await?;
                workload::one_row(done.rows_affected(), "the fenced update")?;
            }
        }
        tx.commit().await?;
        Ok(true)
    }
}

impl Pair for SqlxPair<'_> {
    fn name(&self) -> Name {
        Name {
            path: "fence in the caller's sqlx transaction",
            against: "the same sqlx transaction, unfenced",
            database: "PostgreSQL",
            unit: "transaction",
            target: None,
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let place = self.place;
        let table = self.table.name().quoted(Dialect::Postgres);
        place.reset(&table, &self.lines).await?;
        let name = place.name(match side {
            Side::Guard => "sqlx-fenced",
            Side::Driver => "sqlx-plain",
        });
        let config: tokio_postgres::Config = place.named(&name).parse()?;
        let options = sqlx_options(&config, &name);
        let store = match side {
            Side::Guard => Some(Store::new(
                Postgres::from_config(config.clone(), tokio_postgres::NoTls, 1),
                self.table.clone(),
            )),
            Side::Driver => None,
        };
        let mut cycles = Vec::with_capacity(workers);
        for lease in &self.leases[..workers] {
            cycles.push(SqlxCycle {
                conn: PgConnection::connect_with(&options).await?,
                store: store.clone(),
                lease: lease.clone(),
                insert: self.insert.clone(),
                update: self.update.clone(),
            });
        }
        let clock = ServerClock::of(&place.monitor, &name);
        let (summary, server) = run_cycles(cycles, timing, &clock).await?;
        Ok(Run::of(summary, server, timing.measured))
    }
}

/// sqlx's options for the server of `config`, its connections named `name`, with the
/// configuration's options (`synchronous_commit`) passed on.
fn sqlx_options(config: &tokio_postgres::Config, name: &str) -> PgConnectOptions {
    let mut options = PgConnectOptions::new().application_name(name);
    if let Some(tokio_postgres::config::Host::Tcp(host)) = config.get_hosts().first() {
        options = options.host(host);
    }
    if let Some(port) = config.get_ports().first() {
        options = options.port(*port);
    }
    if let Some(user) = config.get_user() {
        options = options.username(user);
    }
    if let Some(password) = config.get_password() {
        options = options.password(&String::from_utf8_lossy(password));
    }
    if let Some(database) = config.get_dbname() {
        options = options.database(database);
    }
    if let Some(settings) = config.get_options() {
        options = options.options(
            settings
                .split_whitespace()
                .collect::<Vec<_>>()
                .chunks(2)
                .filter_map(|pair| match pair {
                    ["-c", setting] => setting.split_once('='),
                    _ => None,
                }),
        );
    }
    options
}
