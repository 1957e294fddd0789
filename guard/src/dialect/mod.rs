//! The protocol's statements as text, one rendering per database.
//!
//! Pure functions: nothing here talks to a database. Every statement uses numbered
//! placeholders (`$n` for PostgreSQL, `?n` for SQLite, `@Pn` for SQL Server), quotes
//! every identifier, and takes `now` from the database's clock
//! ([`Dialect::clock`]); the application's clock never decides whether a lease is valid.
//!
//! Parameter order, shared by all dialects:
//!
//! | statement | parameters |
//! |---|---|
//! | [`provision`] | 1 key |
//! | [`acquire`] | 1 key, 2 new owner, 3 ttl in milliseconds; returns the new generation |
//! | [`renew`] | 1 key, 2 generation, 3 owner, 4 ttl in milliseconds |
//! | [`release`] | 1 key, 2 generation, 3 owner |
//! | [`lock`] | 1 key, 2 generation, 3 owner, and on SQL Server 4 a uuid naming the transaction's own lock ([`still_fenced`]); changes (PostgreSQL: returns) one row while the lease holds |
//! | [`lock_after_begin`] | as [`lock`]; SQLite's returns one row while the lease holds; SQL Server's leaves out the refusals of `SNAPSHOT` and of no transaction open |
//! | [`update`], [`publish`] | 1..=n the caller's values, n+1 key, n+2 generation, n+3 owner |
//! | [`update_recorded`], [`publish_recorded`] | as [`update`] / [`publish`], then n+4 operation id |
//! | [`record_operation`] (SQLite) | 1 operation id, 2 key, 3 generation |
//! | [`resolve_operation`] | 1 operation id; returns the generation it applied to |
//! | [`resolve_operation_on_key`] | 1 operation id, 2 key; returns the generation and 1 if it applied to that key |
//! | [`inspect`] | 1 key; returns the row's lease state |
//! | [`advance_epoch`] | 1 floor; returns the new epoch |
//! | [`current_epoch`] | none; returns the current epoch |
//!
//! The same convention, caller's parameters first and then key, generation and owner,
//! holds for [`FencedSql`] statements written with
//! [`fence_predicate`].
//!
//! The statements over many rows, the batched renewal and the claim, are in [`batch`].

/// Tests that a rendered statement is exactly the text given, one test per case, for
/// the tests of each database's text (`postgres/dialect.rs`, ...) and of [`batch`].
#[cfg(test)]
macro_rules! renders {
    ($($name:ident: $actual:expr => $expected:expr,)*) => {$(
        #[test]
        fn $name() {
            assert_eq!($actual, $expected);
        }
    )*};
}
#[cfg(test)]
pub(crate) use renders;

/// The tables each database's rendering tests render for.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::table::{ColumnType, FencedTable, Identifier};

    /// The article's table, named `name`, with a payload column.
    pub(crate) fn table(name: &str) -> FencedTable {
        FencedTable::builder()
            .table(name)
            .column("Payload", ColumnType::Text)
            .build()
            .unwrap()
    }

    /// The same, with the article's published-at column.
    pub(crate) fn article(name: &str) -> FencedTable {
        FencedTable::builder()
            .table(name)
            .published_at_column("PublishedAtUtc")
            .column("Payload", ColumnType::Text)
            .build()
            .unwrap()
    }

    /// The payload column.
    pub(crate) fn payload() -> Identifier {
        Identifier::new("Payload").unwrap()
    }
}

pub mod batch;
pub(crate) mod kind;
pub mod lex;
pub mod procedures;
pub(crate) mod reading;
pub(crate) mod recheck;
pub(crate) mod screen;

pub use kind::Dialect;

// Each database's own text: this module is where the dialect is chosen, the one place
// that names every database.
use crate::mssql::dialect as mssql;
use crate::postgres::dialect as postgres;
use crate::sqlite::dialect as sqlite;
use crate::table::{ColumnType, FencedTable, Identifier, KeyType, QualifiedName};

// What each database writes for the parts every statement shares. Here, where the
// statements are rendered, and not beside the type (`kind`), which the table and the
// errors name without needing any database's text.
impl Dialect {
    /// The database's clock, in the expiry column's type: `clock_timestamp()` on
    /// PostgreSQL (never `now()`, which is the transaction's start), `SYSUTCDATETIME()`
    /// on SQL Server, and integer milliseconds since the Unix epoch on SQLite.
    pub fn clock(self) -> &'static str {
        match self {
            Dialect::Postgres => postgres::CLOCK,
            Dialect::Sqlite => sqlite::CLOCK,
            Dialect::Mssql => mssql::CLOCK,
        }
    }

    /// The database's clock in integer milliseconds since the Unix epoch.
    fn clock_millis(self) -> &'static str {
        match self {
            Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS bigint)",
            Dialect::Sqlite => sqlite::CLOCK,
            Dialect::Mssql => "DATEDIFF_BIG(millisecond, '1970-01-01', SYSUTCDATETIME())",
        }
    }

    /// The SQL type of the key column for `key_type`.
    fn key_sql_type(self, key_type: KeyType) -> &'static str {
        match (self, key_type) {
            (Dialect::Postgres, KeyType::Uuid) => "uuid",
            (Dialect::Postgres, KeyType::BigInt) | (Dialect::Mssql, KeyType::BigInt) => "bigint",
            (Dialect::Postgres, KeyType::Text) => "text",
            (Dialect::Sqlite, KeyType::Uuid | KeyType::Text) => "TEXT",
            (Dialect::Sqlite, KeyType::BigInt) => "INTEGER",
            (Dialect::Mssql, KeyType::Uuid) => "uniqueidentifier",
            (Dialect::Mssql, KeyType::Text) => "nvarchar(450)",
        }
    }

    /// The SQL type of an application column declared with `column_type`.
    fn column_sql_type(self, column_type: ColumnType) -> &'static str {
        match self {
            Dialect::Postgres => postgres::column_type(column_type),
            Dialect::Sqlite => sqlite::column_type(column_type),
            Dialect::Mssql => mssql::column_type(column_type),
        }
    }

    /// The key column's type as a column is declared: SQL Server's text key compares
    /// binary (`Latin1_General_100_BIN2`), so that keys differing only in case or
    /// accents are distinct rows there as on PostgreSQL and SQLite, whatever the
    /// database's default collation. (Trailing spaces are a different matter: SQL
    /// Server ignores them in every collation, so the store refuses such keys there.)
    fn key_column_type(self, key_type: KeyType) -> String {
        match (self, key_type) {
            (Dialect::Mssql, KeyType::Text) => {
                format!(
                    "{} COLLATE Latin1_General_100_BIN2",
                    self.key_sql_type(key_type)
                )
            }
            _ => self.key_sql_type(key_type).to_owned(),
        }
    }

    /// `(uuid, bigint, timestamp)` column types.
    fn protocol_types(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Dialect::Postgres => ("uuid", "bigint", "timestamptz"),
            Dialect::Sqlite => ("TEXT", "INTEGER", "INTEGER"),
            Dialect::Mssql => ("uniqueidentifier", "bigint", "datetime2(7)"),
        }
    }

    /// `CREATE TABLE` guarded so that an existing table is left alone.
    fn create_table_if_absent(self, name: &QualifiedName, columns: &str) -> String {
        let name = name.quoted(self);
        match self {
            Dialect::Postgres | Dialect::Sqlite => {
                format!("CREATE TABLE IF NOT EXISTS {name} ({columns})")
            }
            // The name inside the literal is a validated identifier: no quotes possible.
            Dialect::Mssql => {
                format!("IF OBJECT_ID(N'{name}', N'U') IS NULL CREATE TABLE {name} ({columns})")
            }
        }
    }

    /// The expression `now + ttl`, the ttl in milliseconds bound as parameter `ttl`.
    fn expiry_after(self, ttl: usize) -> String {
        match self {
            Dialect::Postgres => postgres::expiry_after(ttl),
            Dialect::Sqlite => sqlite::expiry_after(ttl),
            Dialect::Mssql => mssql::expiry_after(ttl),
        }
    }
}

/// Convenience: an identifier quoted for `d`.
fn q(d: Dialect, id: &Identifier) -> String {
    id.quoted(d)
}

/// The current recovery epoch, as a scalar subquery on the epoch table:
/// `(SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)`. `NULL` when the epoch table has
/// no row, which makes every fenced write and every acquisition fail or match nothing.
///
/// On PostgreSQL, for a table that [stamps the timeline](FencedTable::stamps_timeline)
/// (the default), the value is the epoch and the server's timeline in one number,
/// `"Epoch" * 1000000 + <timeline>`: the timeline is the first eight hexadecimal digits
/// of the name of the WAL file the server writes now
/// (`pg_walfile_name(pg_current_wal_lsn())`), which any role may read and which
/// PostgreSQL raises at every promotion and at the end of every archive recovery. On a
/// standby, where no write can run anyway, reading it is an error. Evaluated once per
/// statement (an uncorrelated subquery), from server memory. See [`split_stamp`].
pub fn epoch_subquery(dialect: Dialect, table: &FencedTable) -> String {
    let epoch = epoch_value_column(dialect);
    let value = if stamps_timeline(dialect, table) {
        postgres::stamp(&epoch)
    } else {
        epoch
    };
    format!(
        "(SELECT {value} FROM {} WHERE {} = 1)",
        table.epoch_table().quoted(dialect),
        epoch_id_column(dialect)
    )
}

/// Whether `table`'s statements in `dialect` stamp the server's timeline with the
/// epoch: on PostgreSQL, unless the table was built with
/// [`stamp_timeline(false)`](crate::FencedTableBuilder::stamp_timeline).
pub fn stamps_timeline(dialect: Dialect, table: &FencedTable) -> bool {
    dialect == Dialect::Postgres && table.stamps_timeline()
}

/// The recovery epoch and, where [`stamps_timeline`], the server's timeline that a
/// stamp holds: what [`Lease::epoch`](crate::Lease::epoch) and
/// [`LeaseState::epoch`](crate::LeaseState::epoch) report is the stamp the row carries,
/// `epoch * 1_000_000 + timeline` on PostgreSQL, the epoch alone elsewhere.
pub fn split_stamp(dialect: Dialect, table: &FencedTable, stamp: i64) -> (i64, Option<i64>) {
    if stamps_timeline(dialect, table) {
        (
            stamp.div_euclid(postgres::TIMELINES),
            Some(stamp.rem_euclid(postgres::TIMELINES)),
        )
    } else {
        (stamp, None)
    }
}

/// The greatest recovery epoch `table` can hold in `dialect`: `i64::MAX` where the
/// epoch is stamped alone; 9,223,372,036,853 where [`stamps_timeline`], so that
/// `epoch * 1_000_000 + timeline` fits in a `bigint` (milliseconds since 1970 reach it
/// in the year 2262).
pub fn max_epoch(dialect: Dialect, table: &FencedTable) -> i64 {
    if stamps_timeline(dialect, table) {
        (i64::MAX - (postgres::TIMELINES - 1)) / postgres::TIMELINES
    } else {
        i64::MAX
    }
}

fn epoch_value_column(dialect: Dialect) -> String {
    q(
        dialect,
        &Identifier::new("Epoch").expect("valid identifier"),
    )
}

fn epoch_id_column(dialect: Dialect) -> String {
    q(dialect, &Identifier::new("Id").expect("valid identifier"))
}

/// The outcomes table's columns, quoted: operation id, key, generation, recorded-at.
fn operation_columns(dialect: Dialect) -> [String; 4] {
    ["OperationId", "Key", "Generation", "RecordedAt"]
        .map(|c| q(dialect, &Identifier::new(c).expect("valid identifier")))
}

/// The fence, to append with `AND` to a write's top-level `WHERE`:
/// `key = p AND generation = p+1 AND owner = p+2 AND expiry > <clock> AND epoch =
/// <current epoch>`, where `p` is `first` (1-based), the columns are the table's,
/// quoted, and the current epoch is [`epoch_subquery`] (on PostgreSQL, with the
/// server's timeline in it).
///
/// Bind the lease's key, generation and owner at `first`, `first + 1` and `first + 2`.
/// Parenthesise the caller's own `WHERE` before appending.
///
/// The lease's own epoch needs no parameter: only an acquisition writes the owner, and
/// it stamps the row's epoch in the same statement, so a row whose owner matches the
/// lease carries the lease's epoch (a restored image of that row carries it too).
/// Requiring the row's epoch to be the current one therefore requires the lease's.
pub fn fence_predicate(dialect: Dialect, table: &FencedTable, first: usize) -> String {
    fence_predicate_on(dialect, table, first, &epoch_subquery(dialect, table))
}

/// [`fence_predicate`] with `epoch` as the current epoch's subquery.
fn fence_predicate_on(dialect: Dialect, table: &FencedTable, first: usize, epoch: &str) -> String {
    let p = |i| dialect.placeholder(first + i);
    format!(
        "{} = {} AND {} = {} AND {} = {} AND {} > {} AND {} = {}",
        q(dialect, table.key_column()),
        p(0),
        q(dialect, table.generation_column()),
        p(1),
        q(dialect, table.owner_column()),
        p(2),
        q(dialect, table.expiry_column()),
        dialect.clock(),
        q(dialect, table.epoch_column()),
        epoch
    )
}

/// The publish-once condition, appended with `AND` after [`fence_predicate`]:
/// `published < p`, where `p` is the generation's parameter, `first + 1`. Takes the
/// same `first` as [`fence_predicate`].
pub fn publish_once_predicate(dialect: Dialect, table: &FencedTable, first: usize) -> String {
    format!(
        "{} < {}",
        q(dialect, table.published_column()),
        dialect.placeholder(first + 1)
    )
}

/// The publish-once assignment, added to the `SET` list: `published = p`, where `p` is
/// the generation's parameter, `first + 1`. Takes the same `first` as
/// [`fence_predicate`].
pub fn publish_once_assignment(dialect: Dialect, table: &FencedTable, first: usize) -> String {
    format!(
        "{} = {}",
        q(dialect, table.published_column()),
        dialect.placeholder(first + 1)
    )
}

/// A digest of everything a fenced statement's check depends on in `table`.
fn table_digest(table: &FencedTable) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    for d in [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql] {
        fence_predicate(d, table, 1).hash(&mut h);
        publish_once_predicate(d, table, 1).hash(&mut h);
        table.name().quoted(d).hash(&mut h);
    }
    for c in [table.published_column(), table.epoch_column()] {
        c.as_str().hash(&mut h);
    }
    table
        .published_at_column()
        .map(|c| c.as_str().to_owned())
        .hash(&mut h);
    h.finish()
}

/// `CREATE TABLE` for the fenced table if it does not exist, with the protocol's columns
/// and the declared application columns (all nullable). The schema, if any, must exist.
pub fn create_schema(dialect: Dialect, table: &FencedTable) -> String {
    let d = dialect;
    let (uuid, bigint, timestamp) = d.protocol_types();
    let mut columns = vec![
        format!(
            "{} {} NOT NULL PRIMARY KEY",
            table.key_column().quoted(d),
            d.key_column_type(table.key_type())
        ),
        format!(
            "{} {bigint} NOT NULL DEFAULT 0",
            table.generation_column().quoted(d)
        ),
        format!("{} {uuid} NULL", table.owner_column().quoted(d)),
        format!("{} {timestamp} NULL", table.expiry_column().quoted(d)),
        format!(
            "{} {bigint} NOT NULL DEFAULT 0",
            table.published_column().quoted(d)
        ),
        format!(
            "{} {bigint} NOT NULL DEFAULT 0",
            table.epoch_column().quoted(d)
        ),
    ];
    if let Some(published_at) = table.published_at_column() {
        columns.push(format!("{} {timestamp} NULL", published_at.quoted(d)));
    }
    columns.extend(table.columns().iter().map(|c| {
        format!(
            "{} {} NULL",
            c.name().quoted(d),
            d.column_sql_type(c.column_type())
        )
    }));
    d.create_table_if_absent(table.name(), &columns.join(", "))
}

/// Every statement [`Store::create_schema`](crate::Store::create_schema) runs, in order:
/// the fenced table, the epoch table and its row, and the outcomes table, each creating
/// only what is absent. For a migration file,
/// [`Declarations::schema`](crate::Declarations::schema) writes them out.
pub fn schema_statements(dialect: Dialect, table: &FencedTable) -> [String; 4] {
    [
        create_schema(dialect, table),
        create_epoch_table(dialect, table),
        seed_epoch(dialect, table),
        create_operations_table(dialect, table),
    ]
}

/// `CREATE TABLE` for the epoch table if it does not exist: `Id` (always 1) and
/// `Epoch`.
pub fn create_epoch_table(dialect: Dialect, table: &FencedTable) -> String {
    let (_, bigint, _) = dialect.protocol_types();
    let id = epoch_id_column(dialect);
    let int = if dialect == Dialect::Sqlite {
        "INTEGER"
    } else {
        "int"
    };
    dialect.create_table_if_absent(
        table.epoch_table(),
        &format!(
            "{id} {int} NOT NULL PRIMARY KEY CHECK ({id} = 1), {} {bigint} NOT NULL",
            epoch_value_column(dialect)
        ),
    )
}

/// Inserts the epoch table's row with epoch 1 if it is absent; an existing epoch is left
/// untouched.
pub fn seed_epoch(dialect: Dialect, table: &FencedTable) -> String {
    let name = table.epoch_table().quoted(dialect);
    let id = epoch_id_column(dialect);
    let epoch = epoch_value_column(dialect);
    match dialect {
        Dialect::Postgres | Dialect::Sqlite => {
            format!("INSERT INTO {name} ({id}, {epoch}) VALUES (1, 1) ON CONFLICT DO NOTHING")
        }
        Dialect::Mssql => format!(
            "INSERT INTO {name} ({id}, {epoch}) SELECT 1, 1 WHERE NOT EXISTS \
             (SELECT 1 FROM {name} WITH (UPDLOCK, HOLDLOCK) WHERE {id} = 1)"
        ),
    }
}

/// `CREATE TABLE` for the outcomes table if it does not exist: `OperationId` (primary
/// key), `Key` (the fenced table's key type), `Generation`, `RecordedAt` (the database's
/// clock, in the expiry column's type).
pub fn create_operations_table(dialect: Dialect, table: &FencedTable) -> String {
    let (uuid, bigint, timestamp) = dialect.protocol_types();
    let [op, key, generation, at] = operation_columns(dialect);
    dialect.create_table_if_absent(
        table.operations_table(),
        &format!(
            "{op} {uuid} NOT NULL PRIMARY KEY, {key} {} NOT NULL, {generation} {bigint} NOT NULL, \
             {at} {timestamp} NOT NULL",
            dialect.key_column_type(table.key_type())
        ),
    )
}

/// Advances the recovery epoch to the greatest of: the current epoch + 1, the
/// database's clock in milliseconds since the Unix epoch, and the floor bound as
/// parameter 1. Returns the new epoch.
pub fn advance_epoch(dialect: Dialect, table: &FencedTable) -> String {
    let name = table.epoch_table().quoted(dialect);
    let id = epoch_id_column(dialect);
    let epoch = epoch_value_column(dialect);
    let clock = dialect.clock_millis();
    let floor = dialect.placeholder(1);
    match dialect {
        Dialect::Postgres => format!(
            "UPDATE {name} SET {epoch} = GREATEST({epoch} + 1, {clock}, {floor}::bigint) \
             WHERE {id} = 1 RETURNING {epoch}"
        ),
        Dialect::Sqlite => format!(
            "UPDATE {name} SET {epoch} = MAX({epoch} + 1, {clock}, {floor}) WHERE {id} = 1 \
             RETURNING {epoch}"
        ),
        // Read back in the UPDATE's transaction, not through `OUTPUT`, as acquisition
        // does: a trigger on the epoch table must not break it.
        Dialect::Mssql => {
            // The application lock first: it waits for every open fenced transaction.
            let body = format!(
                "{} UPDATE {name} SET {epoch} = (SELECT MAX(v) FROM (VALUES ({epoch} + 1), \
                 ({clock}), (CAST({floor} AS bigint))) AS c(v)) WHERE {id} = 1; \
                 SET @fenced_rows = @@ROWCOUNT; \
                 SELECT @fenced_epoch = {epoch} FROM {name} WHERE {id} = 1;",
                mssql::epoch_lock(table.epoch_table(), "Exclusive"),
            );
            format!(
                "DECLARE @fenced_rows int, @fenced_epoch bigint; {} \
                 SELECT @fenced_epoch WHERE @fenced_rows > 0",
                mssql::in_transaction(&body)
            )
        }
    }
}

/// Reads the current recovery epoch.
pub fn current_epoch(dialect: Dialect, table: &FencedTable) -> String {
    format!(
        "SELECT {} FROM {} WHERE {} = 1",
        epoch_value_column(dialect),
        table.epoch_table().quoted(dialect),
        epoch_id_column(dialect)
    )
}

/// Reads the generation an operation id was applied to: one row, or none when the
/// operation was not applied.
pub fn resolve_operation(dialect: Dialect, table: &FencedTable) -> String {
    let [op, _, generation, _] = operation_columns(dialect);
    format!(
        "SELECT {generation} FROM {} WHERE {op} = {}",
        table.operations_table().quoted(dialect),
        dialect.placeholder(1)
    )
}

/// Reads the generation an operation id was applied to, and whether it was applied to
/// key 2 (`1`) or to another (`0`): one row, or none when the operation was not
/// applied.
pub fn resolve_operation_on_key(dialect: Dialect, table: &FencedTable) -> String {
    let [op, key, generation, _] = operation_columns(dialect);
    format!(
        "SELECT {generation}, CASE WHEN {key} = {} THEN 1 ELSE 0 END FROM {} WHERE {op} = {}",
        dialect.placeholder(2),
        table.operations_table().quoted(dialect),
        dialect.placeholder(1)
    )
}

/// SQLite's record of an applied operation, run in the write's transaction when the
/// write changed its row: operation id 1, key 2, generation 3, recorded at the
/// database's clock.
pub fn record_operation(dialect: Dialect, table: &FencedTable) -> String {
    let [op, key, generation, at] = operation_columns(dialect);
    format!(
        "INSERT INTO {} ({op}, {key}, {generation}, {at}) VALUES ({}, {}, {}, {})",
        table.operations_table().quoted(dialect),
        dialect.placeholder(1),
        dialect.placeholder(2),
        dialect.placeholder(3),
        dialect.clock()
    )
}

/// A fenced transaction's record of operation id 1, made inside it while the lease's
/// row still carries the lease (key 2, generation 3, owner 4, current epoch): inserts
/// the outcome, with the row's key and generation, unless the id is recorded already.
/// Changes one row when it recorded; none when the id was recorded before, or the
/// lease no longer holds ([`resolve_operation_on_key`] tells which). Committed or
/// rolled back with the transaction.
pub fn record_in_transaction(dialect: Dialect, table: &FencedTable) -> String {
    let ops = table.operations_table().quoted(dialect);
    let [op, key, generation, at] = operation_columns(dialect);
    let p = |n| dialect.placeholder(n);
    let row = |c: &Identifier| format!("fenced_row.{}", q(dialect, c));
    let select = format!(
        "SELECT {}, {}, {}, {} FROM {} AS fenced_row WHERE {} = {} AND {} = {} AND {} = {} \
         AND {} = {}",
        p(1),
        row(table.key_column()),
        row(table.generation_column()),
        dialect.clock(),
        table.name().quoted(dialect),
        row(table.key_column()),
        p(2),
        row(table.generation_column()),
        p(3),
        row(table.owner_column()),
        p(4),
        row(table.epoch_column()),
        epoch_subquery(dialect, table),
    );
    match dialect {
        // A concurrent attempt's uncommitted record is waited for, then skipped.
        Dialect::Postgres | Dialect::Sqlite => format!(
            "INSERT INTO {ops} ({op}, {key}, {generation}, {at}) {select} ON CONFLICT DO NOTHING"
        ),
        Dialect::Mssql => format!(
            "INSERT INTO {ops} ({op}, {key}, {generation}, {at}) {select} AND NOT EXISTS \
             (SELECT 1 FROM {ops} WITH (UPDLOCK, HOLDLOCK) WHERE {op} = {})",
            p(1)
        ),
    }
}

/// Inserts the row for key `1` with generation 0 and published generation 0 if absent;
/// an existing row, and its generation, are left untouched.
pub fn provision(dialect: Dialect, table: &FencedTable) -> String {
    let columns = format!(
        "{}, {}, {}",
        q(dialect, table.key_column()),
        q(dialect, table.generation_column()),
        q(dialect, table.published_column())
    );
    let name = table.name().quoted(dialect);
    let key = dialect.placeholder(1);
    match dialect {
        Dialect::Postgres | Dialect::Sqlite => {
            format!("INSERT INTO {name} ({columns}) VALUES ({key}, 0, 0) ON CONFLICT DO NOTHING")
        }
        Dialect::Mssql => format!(
            "INSERT INTO {name} ({columns}) SELECT {key}, 0, 0 WHERE NOT EXISTS \
             (SELECT 1 FROM {name} WITH (UPDLOCK, HOLDLOCK) WHERE {} = {key})",
            q(dialect, table.key_column())
        ),
    }
}

/// Acquires the row: bumps the generation, installs the new owner, the expiry
/// `now + ttl` and the current recovery epoch, only where the row is free (`expiry IS
/// NULL OR expiry <= now`, or its epoch is not the current one: a lease from another
/// epoch can never write again), and returns the new generation and epoch (one row) or
/// nothing (no row).
pub fn acquire(dialect: Dialect, table: &FencedTable) -> String {
    let gen_col = q(dialect, table.generation_column());
    let expiry = q(dialect, table.expiry_column());
    let epoch_col = q(dialect, table.epoch_column());
    let current = epoch_subquery(dialect, table);
    let set = format!(
        "{gen_col} = {gen_col} + 1, {} = {}, {expiry} = {}, {epoch_col} = {current}",
        q(dialect, table.owner_column()),
        dialect.placeholder(2),
        dialect.expiry_after(3)
    );
    let filter = format!(
        "{} = {} AND ({expiry} IS NULL OR {expiry} <= {} OR {epoch_col} <> {current})",
        q(dialect, table.key_column()),
        dialect.placeholder(1),
        dialect.clock()
    );
    let name = table.name().quoted(dialect);
    match dialect {
        Dialect::Postgres | Dialect::Sqlite => {
            format!("UPDATE {name} SET {set} WHERE {filter} RETURNING {gen_col}, {epoch_col}")
        }
        // No `OUTPUT`: SQL Server refuses a bare one on a table with an enabled trigger
        // (error 334), and Babelfish fails on any `OUTPUT` there. The row, locked by the
        // UPDATE, is read back in the same transaction; the final `SELECT` returns it
        // whatever the session's `NOCOUNT`.
        Dialect::Mssql => {
            let key = q(dialect, table.key_column());
            let body = format!(
                "UPDATE {name} SET {set} WHERE {filter}; SET @fenced_rows = @@ROWCOUNT; \
                 IF @fenced_rows > 0 SELECT @fenced_generation = {gen_col}, \
                 @fenced_epoch = {epoch_col} FROM {name} WHERE {key} = {};",
                dialect.placeholder(1)
            );
            format!(
                "DECLARE @fenced_rows int, @fenced_generation bigint, @fenced_epoch bigint; {} \
                 SELECT @fenced_generation, @fenced_epoch WHERE @fenced_rows > 0",
                mssql::in_transaction(&body)
            )
        }
    }
}

/// Reads the row of key 1 as [`Store::inspect`](crate::Store::inspect) reports it:
/// owner, generation, published generation, the row's epoch, the expiry and the
/// database's clock (both in milliseconds since the Unix epoch), and the current epoch.
pub fn inspect(dialect: Dialect, table: &FencedTable) -> String {
    let expiry = q(dialect, table.expiry_column());
    let expiry_ms = match dialect {
        Dialect::Postgres => format!("CAST(EXTRACT(EPOCH FROM {expiry}) * 1000 AS bigint)"),
        Dialect::Sqlite => expiry,
        Dialect::Mssql => format!("DATEDIFF_BIG(millisecond, '1970-01-01', {expiry})"),
    };
    format!(
        "SELECT {}, {}, {}, {}, {expiry_ms}, {}, {} FROM {} WHERE {} = {}",
        q(dialect, table.owner_column()),
        q(dialect, table.generation_column()),
        q(dialect, table.published_column()),
        q(dialect, table.epoch_column()),
        dialect.clock_millis(),
        epoch_subquery(dialect, table),
        table.name().quoted(dialect),
        q(dialect, table.key_column()),
        dialect.placeholder(1)
    )
}

/// Renews the lease: moves the expiry to `now + ttl` only while the lease still holds
/// (same key, generation and owner, and `expiry > now`), so a late renewal never revives.
pub fn renew(dialect: Dialect, table: &FencedTable) -> String {
    format!(
        "UPDATE {} SET {} = {} WHERE {}",
        table.name().quoted(dialect),
        q(dialect, table.expiry_column()),
        dialect.expiry_after(4),
        fence_predicate(dialect, table, 1)
    )
}

/// Releases the lease: clears owner and expiry where key, generation and owner still
/// match. No expiry check: a release after expiry but before any successor still frees
/// the row; after a successor it matches nothing.
pub fn release(dialect: Dialect, table: &FencedTable) -> String {
    format!(
        "UPDATE {} SET {} = NULL, {} = NULL WHERE {} = {} AND {} = {} AND {} = {}",
        table.name().quoted(dialect),
        q(dialect, table.owner_column()),
        q(dialect, table.expiry_column()),
        q(dialect, table.key_column()),
        dialect.placeholder(1),
        q(dialect, table.generation_column()),
        dialect.placeholder(2),
        q(dialect, table.owner_column()),
        dialect.placeholder(3)
    )
}

/// Checks that the lease holds (the fence of [`renew`], by the database's clock) and
/// locks its row against every other writer, a successor's acquisition included, until
/// the enclosing transaction ends. Changes nothing.
///
/// PostgreSQL takes the row lock with `FOR NO KEY UPDATE`, the lock an acquisition's
/// `UPDATE` needs, without writing a row version; rows of other tables may still take
/// a foreign key to it. SQL Server and SQLite lock by updating the generation to
/// itself: a table hint is ignored by Babelfish, and a SQLite transaction begun
/// `DEFERRED` takes the write lock only with a write (in a transaction the guard
/// begins, `IMMEDIATE`, [`lock_after_begin`] reads instead).
///
/// The epoch's row is locked too, shared, until the transaction ends: an
/// [`advance_epoch`] waits for every open fenced transaction, and a transaction whose
/// snapshot is older than the last advance cannot pass (PostgreSQL raises a
/// serialization failure for a row locked after its snapshot). SQL Server holds the
/// epoch's application lock shared instead (an advance takes it exclusively), reads the
/// row with `HOLDLOCK`, and refuses a `SNAPSHOT` transaction (error 51002), which would
/// read an old epoch (in a transaction the guard began, [`lock_after_begin`] leaves that
/// refusal out). SQLite's `UPDATE` already holds the database's write lock, which an
/// advance needs. On SQL Server the statement refuses to run outside a transaction
/// (error 51000): a lock that ends with its statement fences nothing. Having locked the
/// row, it also takes an application lock named by its 4th parameter, a uuid drawn for
/// this lock alone, which the transaction's later statements ask for ([`still_fenced`]).
pub fn lock(dialect: Dialect, table: &FencedTable) -> String {
    lock_in(dialect, table, true)
}

/// [`epoch_subquery`] holding the epoch's row shared until the transaction ends, as
/// [`lock`] does: `FOR SHARE` on PostgreSQL, `HOLDLOCK` on SQL Server; on SQLite the
/// subquery as it is (a write already holds the database's write lock).
fn shared_epoch(dialect: Dialect, table: &FencedTable) -> String {
    let epoch = epoch_subquery(dialect, table);
    match dialect {
        Dialect::Postgres => format!("{} FOR SHARE)", &epoch[..epoch.len() - 1]),
        Dialect::Mssql => epoch.replacen(" WHERE ", " WITH (HOLDLOCK) WHERE ", 1),
        Dialect::Sqlite => epoch,
    }
}

/// [`lock`]; on SQL Server, with its refusals of no transaction open and of a
/// `SNAPSHOT` transaction where `in_callers_transaction`.
fn lock_in(dialect: Dialect, table: &FencedTable, in_callers_transaction: bool) -> String {
    let name = table.name().quoted(dialect);
    let fence = fence_predicate_on(dialect, table, 1, &shared_epoch(dialect, table));
    match dialect {
        Dialect::Postgres => format!("SELECT 1 FROM {name} WHERE {fence} FOR NO KEY UPDATE"),
        Dialect::Sqlite => {
            let generation = q(dialect, table.generation_column());
            format!("UPDATE {name} SET {generation} = {generation} WHERE {fence}")
        }
        Dialect::Mssql => {
            let generation = q(dialect, table.generation_column());
            let refusals = if in_callers_transaction {
                format!("{} {} ", mssql::OUTSIDE_A_TRANSACTION, mssql::IN_A_SNAPSHOT)
            } else {
                String::new()
            };
            format!(
                "{refusals}{} UPDATE {name} SET {generation} = {generation} WHERE {fence}; {}",
                mssql::epoch_lock(table.epoch_table(), "Shared"),
                mssql::take_lease_lock(&dialect.placeholder(4)),
            )
        }
    }
}

/// The check-and-lock of a transaction the guard began itself with [`begin`]
/// ([`Store::transaction`](crate::Store::transaction)):
///
/// - SQLite, whose `BEGIN IMMEDIATE` holds the database's write lock from the start: a
///   read of the lease's row (`SELECT 1`, under the fence of [`lock`]) that writes
///   nothing, since no other connection can write, a successor's acquisition or an
///   epoch advance included, until the transaction ends;
/// - SQL Server: [`lock`] without its two refusals, each a statement of the batch with
///   a cost of its own on Babelfish. Of a `SNAPSHOT` transaction: [`begin`] sets `READ
///   COMMITTED`, and neither SQL Server nor Babelfish lets a transaction switch to
///   `SNAPSHOT` once begun. Of a batch with no transaction open: the guard sends this
///   one right after its `BEGIN`, on the same connection; were none open, the epoch's
///   application lock, owned by the transaction, would not be granted (error 51003),
///   and each statement's own check ([`still_fenced`]) refuses outside a transaction;
/// - PostgreSQL: [`lock`] itself.
pub fn lock_after_begin(dialect: Dialect, table: &FencedTable) -> String {
    match dialect {
        Dialect::Sqlite => format!(
            "SELECT 1 FROM {} WHERE {}",
            table.name().quoted(dialect),
            fence_predicate_on(dialect, table, 1, &epoch_subquery(dialect, table))
        ),
        Dialect::Mssql => lock_in(dialect, table, false),
        Dialect::Postgres => lock(dialect, table),
    }
}

/// SQL Server: the check put before each statement of a fenced transaction, in its
/// batch, with the name of the transaction's own lock (the uuid bound as the 4th
/// parameter of [`lock`]) at `first`. It raises error 51000 outside a transaction and
/// 51001 when the transaction does not hold that lock: the transaction the lease was
/// checked and locked in has ended, whether or not a successor has taken the row since,
/// so that a statement sent after the fenced transaction ended never runs unfenced.
///
/// Two `IF`s, where one over both conditions (`@@TRANCOUNT = 0 OR APPLOCK_MODE(..)`)
/// ran a line's insert on Babelfish about 35 µs faster: T-SQL does not promise to
/// evaluate an `OR` left to right, and were `APPLOCK_MODE` to raise an error outside a
/// transaction, that error would end the `IF` alone and the batch would go on to the
/// statement, unfenced. A `THROW` ends the batch before the second `IF` runs.
pub fn still_fenced(first: usize) -> String {
    format!(
        "{} {} ",
        mssql::OUTSIDE_A_TRANSACTION,
        mssql::held_lease_lock(&Dialect::Mssql.placeholder(first))
    )
}

/// What the error of a fenced transaction's statement says when the statement's own
/// check found the lease's row no longer carrying the lease (PostgreSQL and SQLite;
/// SQL Server raises error 51001 instead).
pub(crate) const LEASE_LOST: &str = "fenced: the lease no longer holds";

/// PostgreSQL: a common table expression that, put in the `WITH` clause of a fenced
/// transaction's statement, fails the statement unless the lease's row still carries
/// the lease (key, generation and owner at `first`, `first + 1`, `first + 2`, and the
/// current epoch).
///
/// PostgreSQL runs a data-modifying `WITH` entry whether or not the statement reads it,
/// so the check is an `UPDATE` of the epoch table that changes no row: its condition
/// does not depend on the row, so it is evaluated once, before the scan, and is never
/// true. When the lease no longer holds, it names a relation that does not exist, which
/// PostgreSQL cannot resolve until it runs (the cast is not constant), and the
/// statement fails with error 42P01 before it wrote anything.
pub(crate) fn still_fenced_cte(table: &FencedTable, first: usize) -> String {
    let d = Dialect::Postgres;
    let p = |i| d.placeholder(first + i);
    let epoch = epoch_value_column(d);
    format!(
        "\"fenced check\" AS (UPDATE {} SET {epoch} = {epoch} WHERE CAST((SELECT CASE WHEN \
         count(*) = 0 THEN '\"{LEASE_LOST}\"' END FROM {} WHERE {} = {} AND {} = {} AND \
         {} = {} AND {} = {}) AS pg_catalog.regclass) IS NOT NULL)",
        table.epoch_table().quoted(d),
        table.name().quoted(d),
        q(d, table.key_column()),
        p(0),
        q(d, table.generation_column()),
        p(1),
        q(d, table.owner_column()),
        p(2),
        q(d, table.epoch_column()),
        epoch_subquery(d, table),
    )
}

/// SQLite: the query run just before a fenced transaction's statement, in its
/// transaction, with the lease's key, generation and owner as parameters 1 to 3: one
/// row while the lease's row still carries the lease and the current epoch, none once
/// it does not. Inside a transaction the two are atomic: SQLite refuses a write whose
/// transaction read a snapshot that another connection's commit made old.
pub(crate) fn still_fenced_query(table: &FencedTable) -> String {
    let d = Dialect::Sqlite;
    format!(
        "SELECT 1 FROM {} WHERE {} = ?1 AND {} = ?2 AND {} = ?3 AND {} = {}",
        table.name().quoted(d),
        q(d, table.key_column()),
        q(d, table.generation_column()),
        q(d, table.owner_column()),
        q(d, table.epoch_column()),
        epoch_subquery(d, table),
    )
}

/// The statement that begins a transaction. SQLite's is `BEGIN IMMEDIATE`: it takes the
/// write lock at once, so that two transactions never both read and then deadlock on
/// upgrading to write. SQL Server's sets `READ COMMITTED` first: a session's isolation
/// level outlives its transactions, and a pooled connection left at `SNAPSHOT` would
/// read an old epoch ([`lock_after_begin`] relies on it). A transaction may still raise
/// its own level once begun, to any level but `SNAPSHOT`.
pub fn begin(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "BEGIN",
        Dialect::Sqlite => "BEGIN IMMEDIATE",
        Dialect::Mssql => "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN TRANSACTION",
    }
}

/// The statement that commits the open transaction.
pub fn commit(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres | Dialect::Sqlite => "COMMIT",
        Dialect::Mssql => "COMMIT TRANSACTION",
    }
}

/// The statement that rolls the open transaction back.
pub fn rollback(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres | Dialect::Sqlite => "ROLLBACK",
        Dialect::Mssql => "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION",
    }
}

fn assignments(dialect: Dialect, columns: &[&Identifier]) -> Vec<String> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{} = {}", q(dialect, c), dialect.placeholder(i + 1)))
        .collect()
}

/// A fenced update of the caller's columns: `SET c1 = p1, ...` with the fence at
/// `n + 1`. `columns` must not be empty.
pub fn update(dialect: Dialect, table: &FencedTable, columns: &[&Identifier]) -> String {
    let (set, filter) = update_parts(dialect, table, columns, &epoch_subquery(dialect, table));
    plain_write(dialect, table, &set, &filter)
}

/// [`update`] that also holds the epoch's row shared until the transaction ends, as
/// [`lock`] does: in a [`DeferredTransaction`](crate::DeferredTransaction), the write
/// that takes the transaction's lock. Its own row lock is the lease's.
pub fn update_locking(dialect: Dialect, table: &FencedTable, columns: &[&Identifier]) -> String {
    let (set, filter) = update_parts(dialect, table, columns, &shared_epoch(dialect, table));
    plain_write(dialect, table, &set, &filter)
}

fn update_parts(
    dialect: Dialect,
    table: &FencedTable,
    columns: &[&Identifier],
    epoch: &str,
) -> (String, String) {
    (
        assignments(dialect, columns).join(", "),
        fence_predicate_on(dialect, table, columns.len() + 1, epoch),
    )
}

fn plain_write(dialect: Dialect, table: &FencedTable, set: &str, filter: &str) -> String {
    format!(
        "UPDATE {} SET {set} WHERE {filter}",
        table.name().quoted(dialect)
    )
}

/// [`update`] that records operation id `n + 4` in the outcomes table in the same
/// statement (PostgreSQL, SQL Server) or, on SQLite, the write alone, to be followed by
/// [`record_operation`] in the same transaction. In every dialect the write also
/// requires that the operation id is not recorded yet.
pub fn update_recorded(dialect: Dialect, table: &FencedTable, columns: &[&Identifier]) -> String {
    let (set, filter) = update_parts(dialect, table, columns, &epoch_subquery(dialect, table));
    recorded_write(dialect, table, &set, &filter, columns.len() + 4)
}

/// [`publish`] recording operation id `n + 4`, as [`update_recorded`] does.
pub fn publish_recorded(
    dialect: Dialect,
    table: &FencedTable,
    columns: &[&Identifier],
    release: bool,
) -> String {
    let epoch = epoch_subquery(dialect, table);
    let (set, filter) = publish_parts(dialect, table, columns, release, &epoch);
    recorded_write(dialect, table, &set, &filter, columns.len() + 4)
}

fn recorded_write(
    dialect: Dialect,
    table: &FencedTable,
    set: &str,
    filter: &str,
    op_param: usize,
) -> String {
    let update = format!("UPDATE {} SET {set}", table.name().quoted(dialect));
    recorded_update(dialect, table, &update, filter, "", op_param)
}

/// A fenced `UPDATE` of `table` that records operation id `op_param`, as
/// [`update_recorded`] does: `update` is the statement up to its `WHERE`, `filter` its
/// whole condition (the fence with the lease's key, generation and owner at
/// `op_param - 3` to `op_param - 1` included), `tail` what follows the condition.
pub(crate) fn recorded_update(
    dialect: Dialect,
    table: &FencedTable,
    update: &str,
    filter: &str,
    tail: &str,
    op_param: usize,
) -> String {
    let ops = table.operations_table().quoted(dialect);
    let [op, key, generation, at] = operation_columns(dialect);
    let p = dialect.placeholder(op_param);
    let filter = format!("{filter} AND NOT EXISTS (SELECT 1 FROM {ops} WHERE {op} = {p})");
    match dialect {
        Dialect::Postgres => format!(
            "WITH w AS ({update} WHERE {filter}{tail} RETURNING {key_col}, {gen_col}) \
             INSERT INTO {ops} ({op}, {key}, {generation}, {at}) \
             SELECT {p}::uuid, w.{key_col}, w.{gen_col}, {} FROM w",
            dialect.clock(),
            key_col = q(dialect, table.key_column()),
            gen_col = q(dialect, table.generation_column()),
        ),
        Dialect::Sqlite => format!("{update} WHERE {filter}{tail}"),
        // The write and its record in one transaction, not `OUTPUT … INTO`, which
        // Babelfish fails on a table with a trigger. The record's key and generation are
        // the fence's own parameters: the row matched them. The count is the batch's
        // result row, whatever the session's `NOCOUNT`.
        Dialect::Mssql => {
            let body = format!(
                "{update} WHERE {filter}{tail}; SET @fenced_rows = @@ROWCOUNT; \
                 IF @fenced_rows > 0 INSERT INTO {ops} ({op}, {key}, {generation}, {at}) \
                 VALUES (CAST({p} AS uniqueidentifier), {}, {}, {});",
                dialect.placeholder(op_param - 3),
                dialect.placeholder(op_param - 2),
                dialect.clock()
            );
            format!(
                "DECLARE @fenced_rows int; {} SELECT CAST(@fenced_rows AS bigint) AS [RowsAffected]",
                mssql::in_transaction(&body)
            )
        }
    }
}

/// A publication: the caller's columns and `published = generation` (and the
/// published-at column, if any, set to the database's clock), fenced and only once per
/// generation (`published < generation`). With `release`, the same statement
/// also clears owner and expiry (publish-and-release).
pub fn publish(
    dialect: Dialect,
    table: &FencedTable,
    columns: &[&Identifier],
    release: bool,
) -> String {
    let epoch = epoch_subquery(dialect, table);
    let (set, filter) = publish_parts(dialect, table, columns, release, &epoch);
    plain_write(dialect, table, &set, &filter)
}

/// [`publish`] that also holds the epoch's row shared until the transaction ends, as
/// [`update_locking`] does.
pub fn publish_locking(
    dialect: Dialect,
    table: &FencedTable,
    columns: &[&Identifier],
    release: bool,
) -> String {
    let epoch = shared_epoch(dialect, table);
    let (set, filter) = publish_parts(dialect, table, columns, release, &epoch);
    plain_write(dialect, table, &set, &filter)
}

fn publish_parts(
    dialect: Dialect,
    table: &FencedTable,
    columns: &[&Identifier],
    release: bool,
    epoch: &str,
) -> (String, String) {
    let first = columns.len() + 1;
    let mut set = assignments(dialect, columns);
    set.push(publish_once_assignment(dialect, table, first));
    if let Some(published_at) = table.published_at_column() {
        set.push(format!(
            "{} = {}",
            q(dialect, published_at),
            dialect.clock()
        ));
    }
    if release {
        set.push(format!("{} = NULL", q(dialect, table.owner_column())));
        set.push(format!("{} = NULL", q(dialect, table.expiry_column())));
    }
    (
        set.join(", "),
        format!(
            "{} AND {}",
            fence_predicate_on(dialect, table, first, epoch),
            publish_once_predicate(dialect, table, first)
        ),
    )
}

/// The protocol statements of one table in one dialect, rendered once.
#[derive(Clone, Debug)]
pub(crate) struct Statements {
    pub(crate) create_schema: String,
    pub(crate) provision: String,
    pub(crate) resolve_operation: String,
    pub(crate) resolve_operation_on_key: String,
    pub(crate) inspect: String,
    pub(crate) record_operation: String,
    pub(crate) record_in_transaction: String,
    pub(crate) advance_epoch: String,
    pub(crate) current_epoch: String,
    pub(crate) acquire: String,
    pub(crate) renew: String,
    pub(crate) release: String,
    pub(crate) lock: String,
    /// SQLite's [`still_fenced_query`]; empty in the other dialects.
    pub(crate) still_fenced: String,
    pub(crate) lock_after_begin: String,
    /// A claim of any rows, without a filter: [`batch::claim`].
    pub(crate) claim_any: String,
    /// A claim of one row of any key, without a filter, in its two parts (in the
    /// order of [`batch::ClaimPart`]): [`claim_one`].
    pub(crate) claim_one: Option<[String; 2]>,
}

impl Statements {
    pub(crate) fn render(dialect: Dialect, table: &FencedTable) -> Self {
        Statements {
            create_schema: schema_statements(dialect, table).join(";\n"),
            provision: provision(dialect, table),
            resolve_operation: resolve_operation(dialect, table),
            resolve_operation_on_key: resolve_operation_on_key(dialect, table),
            inspect: inspect(dialect, table),
            record_operation: record_operation(dialect, table),
            record_in_transaction: record_in_transaction(dialect, table),
            advance_epoch: advance_epoch(dialect, table),
            current_epoch: current_epoch(dialect, table),
            acquire: acquire(dialect, table),
            renew: renew(dialect, table),
            release: release(dialect, table),
            lock: lock(dialect, table),
            still_fenced: match dialect {
                Dialect::Sqlite => still_fenced_query(table),
                Dialect::Postgres | Dialect::Mssql => String::new(),
            },
            lock_after_begin: lock_after_begin(dialect, table),
            claim_any: batch::claim(dialect, table, 0, &[]),
            claim_one: claim_one(dialect, table, batch::ClaimPart::FromStart, &[])
                .zip(claim_one(
                    dialect,
                    table,
                    batch::ClaimPart::BeforeStart,
                    &[],
                ))
                .map(<[String; 2]>::from),
        }
    }
}

/// One part of a claim of one row of any key among those that pass `conditions`,
/// where `dialect` has a statement for it ([`batch::claim_one`], PostgreSQL).
/// Elsewhere a claim of one row is a [`batch::claim`].
pub(crate) fn claim_one(
    dialect: Dialect,
    table: &FencedTable,
    part: batch::ClaimPart,
    conditions: &[(&Identifier, crate::claim::filter::Test)],
) -> Option<String> {
    match dialect {
        Dialect::Postgres => Some(batch::claim_one(table, part, conditions)),
        Dialect::Sqlite | Dialect::Mssql => None,
    }
}

/// Caller SQL that already carries the fence, one text per dialect (or for one database
/// only), for [`Store::execute_fenced`](crate::Store::execute_fenced).
///
/// Convention: the caller's parameters are numbered `1..=n`, and the statement's
/// top-level `WHERE` ends with [`fence_predicate`] starting at `n + 1`; the guard
/// appends the lease's key, generation and owner as parameters `n + 1`, `n + 2`,
/// `n + 3`. For a publication, add [`publish_once_assignment`] and
/// [`publish_once_predicate`] with the same `first`, `n + 1`.
///
/// [`new`](FencedSql::new) and [`only`](FencedSql::only) check each text as its
/// database will read it ([`lex::check_fenced`]), so a `FencedSql` always carries the
/// fence of the table it was made for at its top level;
/// [`Store::execute_fenced`](crate::Store::execute_fenced) runs it only on a store with
/// that table, of a database it has a text for, and with `n` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FencedSql {
    /// PostgreSQL, SQLite, SQL Server; `None` for a database it was not written for.
    texts: [Option<&'static str>; 3],
    params: usize,
    /// Which table's fence it was checked with (a digest of its fence renderings).
    table: u64,
}

fn dialect_index(dialect: Dialect) -> usize {
    match dialect {
        Dialect::Postgres => 0,
        Dialect::Sqlite => 1,
        Dialect::Mssql => 2,
    }
}

fn check_text(
    table: &FencedTable,
    params: usize,
    dialect: Dialect,
    sql: &str,
) -> crate::Result<()> {
    lex::check_fenced(dialect, sql, table, params).map_err(|p| {
        let at: String = sql
            .get(p.range.clone())
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        crate::Error::Config(format!(
            "the {dialect} statement is not fenced: {} (at byte {}: `{at}`)",
            p.message, p.range.start
        ))
    })
}

impl FencedSql {
    /// The statement's text for PostgreSQL, SQLite and SQL Server, for a store whose
    /// table is `table`, with `params` caller parameters.
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) naming the dialect and what is wrong, when
    /// a text is not one `UPDATE` of `table` whose top-level `WHERE` ends with the fence
    /// at `params + 1` (see [`lex::check_fenced`]).
    pub fn new(
        table: &FencedTable,
        params: usize,
        postgres: &'static str,
        sqlite: &'static str,
        mssql: &'static str,
    ) -> crate::Result<Self> {
        for (dialect, sql) in [
            (Dialect::Postgres, postgres),
            (Dialect::Sqlite, sqlite),
            (Dialect::Mssql, mssql),
        ] {
            check_text(table, params, dialect, sql)?;
        }
        Ok(FencedSql {
            texts: [Some(postgres), Some(sqlite), Some(mssql)],
            params,
            table: table_digest(table),
        })
    }

    /// A statement written for `dialect` only: a store of another database refuses to
    /// run it ([`Error::Config`](crate::Error::Config)).
    ///
    /// # Errors
    ///
    /// As [`new`](FencedSql::new), for the one text.
    pub fn only(
        table: &FencedTable,
        params: usize,
        dialect: Dialect,
        sql: &'static str,
    ) -> crate::Result<Self> {
        check_text(table, params, dialect, sql)?;
        let mut texts = [None; 3];
        texts[dialect_index(dialect)] = Some(sql);
        Ok(FencedSql {
            texts,
            params,
            table: table_digest(table),
        })
    }

    /// How many caller parameters it takes.
    pub fn params(&self) -> usize {
        self.params
    }

    /// The text to run on a store of `dialect` whose table is `table`, with `given`
    /// values.
    pub(crate) fn check_use(
        &self,
        table: &FencedTable,
        dialect: Dialect,
        given: usize,
    ) -> crate::Result<&'static str> {
        if self.table != table_digest(table) {
            return Err(crate::Error::Config(format!(
                "this FencedSql was checked against another table's fence, not {}'s: make it \
                 with the store's own table",
                table.name()
            )));
        }
        if given != self.params {
            return Err(crate::Error::Config(format!(
                "this FencedSql takes {} parameters, {given} were given",
                self.params
            )));
        }
        self.for_dialect(dialect).ok_or_else(|| {
            crate::Error::Config(format!(
                "this FencedSql is written for {} only, not for {dialect}: nothing was sent",
                self.written_for()
            ))
        })
    }

    /// The databases it has a text for, for messages.
    fn written_for(&self) -> String {
        [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql]
            .into_iter()
            .filter(|d| self.texts[dialect_index(*d)].is_some())
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The text for `dialect`; `None` when it was made for another database
    /// ([`only`](FencedSql::only)).
    pub fn for_dialect(&self, dialect: Dialect) -> Option<&'static str> {
        self.texts[dialect_index(dialect)]
    }
}
