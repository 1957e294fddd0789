//! The fenced table: its name, its protocol columns, its key type, and identifiers.
//!
//! Every table and column name passes through [`Identifier`], which accepts only plain
//! identifiers (ASCII letters, digits and `_`, not starting with a digit, at most 128
//! characters), and is always quoted per dialect when rendered (`"x"` for PostgreSQL and
//! SQLite, `[x]` for SQL Server). Nothing is spliced raw into SQL.

use std::fmt;

use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};

pub(crate) mod types;

pub use types::{ColumnType, KeyType};

/// The longest identifier accepted, in characters (SQL Server's `sysname` limit; kept
/// for SQLite too, which has none). Identifiers are ASCII, so characters are bytes.
pub const MAX_IDENTIFIER_LEN: usize = 128;

/// How many bytes of a name PostgreSQL keeps (`NAMEDATALEN - 1`): it truncates a longer
/// name, quoted or not, so names that share their first 63 bytes are one name there.
pub const POSTGRES_MAX_IDENTIFIER_LEN: usize = 63;

/// A validated plain identifier (one part, no schema).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identifier(String);

impl Identifier {
    /// Validates `name` against the grammar: ASCII letters, digits and `_`, not starting
    /// with a digit, 1 to 128 characters.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidIdentifier`] naming what is wrong.
    pub fn new(name: &str) -> Result<Self> {
        let reason = if name.is_empty() {
            Some("it is empty")
        } else if name.chars().count() > MAX_IDENTIFIER_LEN {
            Some("it is longer than 128 characters")
        } else if name.starts_with(|c: char| c.is_ascii_digit()) {
            Some("it starts with a digit")
        } else if name.contains('.') {
            Some("a schema-qualified name is not allowed here")
        } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Some("only ASCII letters, digits and '_' are allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(Error::InvalidIdentifier {
                identifier: name.to_owned(),
                reason,
            }),
            None => Ok(Identifier(name.to_owned())),
        }
    }

    /// The identifier as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The identifier quoted for `dialect`: `"x"` or `[x]`.
    pub fn quoted(&self, dialect: Dialect) -> String {
        match dialect {
            Dialect::Postgres | Dialect::Sqlite => format!("\"{}\"", self.0),
            Dialect::Mssql => format!("[{}]", self.0),
        }
    }

    /// `true` if some database takes both for one name: equal ignoring ASCII case (as
    /// SQL Server with its default collations and SQLite compare names) within their
    /// first 63 bytes (all PostgreSQL keeps of a name). See
    /// [`FencedTable`](FencedTable#names-each-database-takes-for-one) for why all three
    /// rules apply to every table.
    pub fn same_as(&self, other: &str) -> bool {
        fn keep(name: &str) -> &[u8] {
            let bytes = name.as_bytes();
            &bytes[..bytes.len().min(POSTGRES_MAX_IDENTIFIER_LEN)]
        }
        keep(&self.0).eq_ignore_ascii_case(keep(other))
    }
}

impl fmt::Display for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated table name, optionally schema-qualified (`schema.table`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QualifiedName {
    schema: Option<Identifier>,
    name: Identifier,
}

impl QualifiedName {
    /// Parses `name` or `schema.name`; each part must be a valid [`Identifier`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidIdentifier`] for a bad part or more than one `.`.
    pub fn parse(text: &str) -> Result<Self> {
        let invalid = |reason| Error::InvalidIdentifier {
            identifier: text.to_owned(),
            reason,
        };
        let mut parts = text.split('.');
        let first = parts.next().unwrap_or_default();
        let second = parts.next();
        if parts.next().is_some() {
            return Err(invalid("at most one schema part is allowed"));
        }
        let part = |p: &str| {
            Identifier::new(p).map_err(|e| match e {
                Error::InvalidIdentifier { reason, .. } => invalid(reason),
                other => other,
            })
        };
        Ok(match second {
            None => QualifiedName {
                schema: None,
                name: part(first)?,
            },
            Some(name) => QualifiedName {
                schema: Some(part(first)?),
                name: part(name)?,
            },
        })
    }

    /// The schema part, if any.
    pub fn schema(&self) -> Option<&Identifier> {
        self.schema.as_ref()
    }

    /// The table part.
    pub fn name(&self) -> &Identifier {
        &self.name
    }

    /// The name quoted for `dialect`, e.g. `"s"."t"` or `[s].[t]`.
    pub fn quoted(&self, dialect: Dialect) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", schema.quoted(dialect), self.name.quoted(dialect)),
            None => self.name.quoted(dialect),
        }
    }
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.name),
            None => write!(f, "{}", self.name),
        }
    }
}

/// An application column of the fenced table, declared for schema creation. Always
/// nullable, so that provisioning a row needs only its key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Column {
    name: Identifier,
    column_type: ColumnType,
}

impl Column {
    /// The column's name.
    pub fn name(&self) -> &Identifier {
        &self.name
    }

    /// The column's portable type.
    pub fn column_type(&self) -> ColumnType {
        self.column_type
    }
}

/// The fenced table: where the generation, owner and expiry live beside the
/// application's data.
///
/// Built with [`FencedTable::builder`]; [`FencedTable::default`] is the article's table
/// `ReportPublication(ReportId uuid, Generation, LeaseOwner, LeaseUntilUtc,
/// PublishedGeneration)` without application columns, plus the lease-epoch column.
///
/// # Protocol tables
///
/// Every fenced table comes with the recovery epoch, always on: a `LeaseEpoch` column
/// that acquisitions stamp and fenced writes check against the epoch table
/// (`FencedEpoch`), and an outcomes table for operation ids (`FencedOperation`). Both
/// default to the fenced table's schema, and
/// [`Store::create_schema`](crate::Store::create_schema) creates them. A table created
/// before the epoch existed needs the column first (`ALTER TABLE … ADD "LeaseEpoch"
/// bigint NOT NULL DEFAULT 0`); its rows are then free to acquire, and leases taken
/// before cannot write.
///
/// # The server's timeline (PostgreSQL)
///
/// On PostgreSQL the epoch a row is stamped with, and checked against, also carries the
/// server's timeline, which PostgreSQL raises at every promotion of a standby and at the
/// end of every archive recovery (a point-in-time restore): a lease acquired before
/// either can no longer write, renew or lock, with no operator step, even where the
/// promoted server lost the commits that superseded it. The stamp is `epoch ×
/// 1,000,000 + timeline` ([`dialect::epoch_subquery`](crate::dialect::epoch_subquery)),
/// read by every statement from the server itself. A failover therefore ends every
/// lease, even where it lost nothing: each holder acquires again. [`FencedTableBuilder::stamp_timeline`] turns it off
/// where the server cannot tell its timeline (Amazon Aurora and other servers that
/// refuse `pg_current_wal_lsn()`) or where no failover can lose a commit (synchronous
/// replication with `remote_apply`, shared storage), so that leases survive failovers.
/// SQLite and SQL Server have no timeline: the recovery epoch alone serves there.
///
/// # Names each database takes for one
///
/// A table does not know which database it will be used with, so it is checked for all
/// three. Each database takes some distinct names for one: SQL Server (with its default,
/// case-insensitive collations) and SQLite compare names ignoring ASCII case, and
/// PostgreSQL keeps only the first [`POSTGRES_MAX_IDENTIFIER_LEN`] (63) bytes of a
/// longer name, even quoted (`Payload` and `payload` are one column on SQL Server; two
/// 64-byte names that share their first 63 bytes are one column on PostgreSQL).
/// [`FencedTableBuilder::build`] refuses a table with two such names, and a caller's
/// write naming a column that is one of the protocol's under these rules is refused
/// ([`Error::ProtectedColumn`]). The limits themselves: 128 characters is SQL Server's
/// (`sysname`), and also the limit kept for SQLite, which has none; a name longer than
/// 63 bytes is accepted and used on PostgreSQL as its first 63 bytes, in every
/// statement alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencedTable {
    name: QualifiedName,
    key: Identifier,
    generation: Identifier,
    owner: Identifier,
    expiry: Identifier,
    published: Identifier,
    published_at: Option<Identifier>,
    epoch: Identifier,
    epoch_table: QualifiedName,
    operations_table: QualifiedName,
    key_type: KeyType,
    columns: Vec<Column>,
    stamp_timeline: bool,
    others: Vec<QualifiedName>,
}

impl Default for FencedTable {
    fn default() -> Self {
        FencedTable::builder()
            .build()
            .expect("the default names are valid identifiers")
    }
}

impl FencedTable {
    /// A builder with the article's defaults.
    pub fn builder() -> FencedTableBuilder {
        FencedTableBuilder::default()
    }

    /// The table's name.
    pub fn name(&self) -> &QualifiedName {
        &self.name
    }

    /// The key column.
    pub fn key_column(&self) -> &Identifier {
        &self.key
    }

    /// The generation column (`bigint`, never reset, never decremented).
    pub fn generation_column(&self) -> &Identifier {
        &self.generation
    }

    /// The owner column (`uuid` / `uniqueidentifier` / SQLite `TEXT`).
    pub fn owner_column(&self) -> &Identifier {
        &self.owner
    }

    /// The expiry column (`timestamptz` / `datetime2(7)` in UTC / SQLite `INTEGER`
    /// milliseconds since the Unix epoch), always written by the database's clock.
    pub fn expiry_column(&self) -> &Identifier {
        &self.expiry
    }

    /// The published-generation column (`bigint`).
    pub fn published_column(&self) -> &Identifier {
        &self.published
    }

    /// The optional published-at column, set to the database's clock by each
    /// publication (the article's `PublishedAtUtc`), in the expiry column's type.
    pub fn published_at_column(&self) -> Option<&Identifier> {
        self.published_at.as_ref()
    }

    /// The lease-epoch column (`bigint`): the recovery epoch that was current when the
    /// row was last acquired. Every fenced write requires it to equal the current epoch.
    pub fn epoch_column(&self) -> &Identifier {
        &self.epoch
    }

    /// The epoch table: one row (`Id` = 1) holding the current recovery epoch
    /// (`Epoch`). Default `FencedEpoch`, in the fenced table's schema.
    pub fn epoch_table(&self) -> &QualifiedName {
        &self.epoch_table
    }

    /// Whether, on PostgreSQL, the lease-epoch column also carries the server's
    /// timeline, so that a promotion or a point-in-time restore ends every lease
    /// acquired before it (see [the timeline](FencedTable#the-servers-timeline-postgresql)).
    /// Default `true`; no effect on SQLite and SQL Server.
    pub fn stamps_timeline(&self) -> bool {
        self.stamp_timeline
    }

    /// The outcomes table: one row per applied operation id (`OperationId`, `Key`,
    /// `Generation`, `RecordedAt`), written in the same statement or transaction as the
    /// write and never changed afterwards. Default `FencedOperation`, in the fenced
    /// table's schema.
    pub fn operations_table(&self) -> &QualifiedName {
        &self.operations_table
    }

    /// The key column's type.
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// The application columns declared for schema creation.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The tables a fenced transaction under this table's leases may not write, its
    /// own lease, epoch and operations tables first, then every other fenced table
    /// and its epoch and operations tables ([`other_fenced_table`]): a lease of this
    /// table is no lease of those.
    ///
    /// [`other_fenced_table`]: FencedTableBuilder::other_fenced_table
    pub fn protected_tables(&self) -> impl Iterator<Item = &QualifiedName> {
        [&self.name, &self.epoch_table, &self.operations_table]
            .into_iter()
            .chain(&self.others)
    }

    /// `true` if `column` is one of the protocol's columns, which callers may not assign.
    pub fn is_protocol_column(&self, column: &str) -> bool {
        [
            &self.key,
            &self.generation,
            &self.owner,
            &self.expiry,
            &self.published,
            &self.epoch,
        ]
        .into_iter()
        .chain(&self.published_at)
        .any(|c| c.same_as(column))
    }
}

/// Builds a [`FencedTable`]; [`build`](FencedTableBuilder::build) validates every name.
#[derive(Clone, Debug)]
pub struct FencedTableBuilder {
    name: String,
    key: String,
    generation: String,
    owner: String,
    expiry: String,
    published: String,
    published_at: Option<String>,
    epoch: String,
    epoch_table: Option<String>,
    operations_table: Option<String>,
    key_type: KeyType,
    columns: Vec<(String, ColumnType)>,
    stamp_timeline: bool,
    others: Vec<String>,
}

impl Default for FencedTableBuilder {
    fn default() -> Self {
        FencedTableBuilder {
            name: "ReportPublication".into(),
            key: "ReportId".into(),
            generation: "Generation".into(),
            owner: "LeaseOwner".into(),
            expiry: "LeaseUntilUtc".into(),
            published: "PublishedGeneration".into(),
            published_at: None,
            epoch: "LeaseEpoch".into(),
            epoch_table: None,
            operations_table: None,
            key_type: KeyType::Uuid,
            columns: Vec::new(),
            stamp_timeline: true,
            others: Vec::new(),
        }
    }
}

impl FencedTableBuilder {
    /// The table name, `name` or `schema.name`. Default `ReportPublication`.
    pub fn table(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The key column. Default `ReportId`.
    pub fn key_column(mut self, name: impl Into<String>) -> Self {
        self.key = name.into();
        self
    }

    /// The key column's type. Default [`KeyType::Uuid`].
    pub fn key_type(mut self, key_type: KeyType) -> Self {
        self.key_type = key_type;
        self
    }

    /// The generation column. Default `Generation`.
    pub fn generation_column(mut self, name: impl Into<String>) -> Self {
        self.generation = name.into();
        self
    }

    /// The owner column. Default `LeaseOwner`.
    pub fn owner_column(mut self, name: impl Into<String>) -> Self {
        self.owner = name.into();
        self
    }

    /// The expiry column. Default `LeaseUntilUtc`.
    pub fn expiry_column(mut self, name: impl Into<String>) -> Self {
        self.expiry = name.into();
        self
    }

    /// The published-generation column. Default `PublishedGeneration`.
    pub fn published_column(mut self, name: impl Into<String>) -> Self {
        self.published = name.into();
        self
    }

    /// A column set to the database's clock by each publication (the article's
    /// `PublishedAtUtc`). Default: none.
    pub fn published_at_column(mut self, name: impl Into<String>) -> Self {
        self.published_at = Some(name.into());
        self
    }

    /// The lease-epoch column. Default `LeaseEpoch`.
    pub fn epoch_column(mut self, name: impl Into<String>) -> Self {
        self.epoch = name.into();
        self
    }

    /// The epoch table, `name` or `schema.name`. Default `FencedEpoch` in the fenced
    /// table's schema. Several fenced tables may share one epoch table.
    pub fn epoch_table(mut self, name: impl Into<String>) -> Self {
        self.epoch_table = Some(name.into());
        self
    }

    /// The outcomes table, `name` or `schema.name`. Default `FencedOperation` in the
    /// fenced table's schema. Its `Key` column has the fenced table's key type, so each
    /// fenced table with another key type needs its own outcomes table.
    pub fn operations_table(mut self, name: impl Into<String>) -> Self {
        self.operations_table = Some(name.into());
        self
    }

    /// Whether, on PostgreSQL, acquisitions stamp the server's timeline into the lease
    /// epoch and every fenced statement requires it, so that a promotion of a standby
    /// or a point-in-time restore ends every lease acquired before it, with no operator
    /// step. Default `true`.
    ///
    /// Turn it off only where the server cannot tell its timeline to an ordinary role
    /// (Amazon Aurora refuses `pg_current_wal_lsn()`; every fenced statement would fail
    /// there), or where no failover can lose a commit (synchronous replication with
    /// `synchronous_commit = remote_apply`, or shared storage) and leases should survive
    /// a failover. Without it, call [`Store::advance_epoch`](crate::Store::advance_epoch)
    /// after every failover that may have lost commits and after every restore. Every
    /// process using the table must declare it alike: a lease stamped one way is free
    /// to acquire for the other (never writable by both). No effect on SQLite and SQL
    /// Server, which have no timeline.
    pub fn stamp_timeline(mut self, stamp: bool) -> Self {
        self.stamp_timeline = stamp;
        self
    }

    /// Another fenced table, `name` or `schema.name`, or its epoch or operations
    /// table: a fenced transaction under this table's leases refuses any statement
    /// that writes it ([`crate::transaction`]), as it refuses this table's own. A
    /// table built from `fenced.toml` ([`Declarations`](crate::Declarations)) names
    /// every other table declared there, with theirs. Default: none.
    pub fn other_fenced_table(mut self, name: impl Into<String>) -> Self {
        self.others.push(name.into());
        self
    }

    /// Declares an application column for schema creation. Default: none.
    pub fn column(mut self, name: impl Into<String>, column_type: ColumnType) -> Self {
        self.columns.push((name.into(), column_type));
        self
    }

    /// Validates every name and builds the table.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidIdentifier`] for a name outside the grammar, and
    /// [`Error::Config`] when two columns, or two of the fenced, epoch and outcomes
    /// tables, would be one in some database: names equal ignoring ASCII case, or
    /// sharing their first 63 bytes (see [`FencedTable`](FencedTable#names-each-database-takes-for-one)).
    pub fn build(self) -> Result<FencedTable> {
        let name = QualifiedName::parse(&self.name)?;
        let beside = |given: &Option<String>, default: &str| match given {
            Some(given) => QualifiedName::parse(given),
            None => Ok(QualifiedName {
                schema: name.schema.clone(),
                name: Identifier::new(default)?,
            }),
        };
        let epoch_table = beside(&self.epoch_table, "FencedEpoch")?;
        let operations_table = beside(&self.operations_table, "FencedOperation")?;
        let table = FencedTable {
            name,
            key: Identifier::new(&self.key)?,
            generation: Identifier::new(&self.generation)?,
            owner: Identifier::new(&self.owner)?,
            expiry: Identifier::new(&self.expiry)?,
            published: Identifier::new(&self.published)?,
            published_at: self
                .published_at
                .as_deref()
                .map(Identifier::new)
                .transpose()?,
            epoch: Identifier::new(&self.epoch)?,
            epoch_table,
            operations_table,
            key_type: self.key_type,
            columns: self
                .columns
                .iter()
                .map(|(name, column_type)| {
                    Ok(Column {
                        name: Identifier::new(name)?,
                        column_type: *column_type,
                    })
                })
                .collect::<Result<_>>()?,
            stamp_timeline: self.stamp_timeline,
            others: self
                .others
                .iter()
                .map(|name| QualifiedName::parse(name))
                .collect::<Result<_>>()?,
        };
        let mut names: Vec<&Identifier> = vec![
            &table.key,
            &table.generation,
            &table.owner,
            &table.expiry,
            &table.published,
            &table.epoch,
        ];
        names.extend(&table.published_at);
        names.extend(table.columns.iter().map(|c| &c.name));
        for (i, a) in names.iter().enumerate() {
            if let Some(b) = names[..i].iter().find(|b| b.same_as(a.as_str())) {
                return Err(Error::Config(if a == b {
                    format!(
                        "column {a} is declared more than once in table {}",
                        table.name
                    )
                } else {
                    format!(
                        "columns {b} and {a} of table {} would be one column: {}",
                        table.name,
                        why_one(a, b)
                    )
                }));
            }
        }
        for other in [&table.epoch_table, &table.operations_table] {
            if same_table(other, &table.name) {
                return Err(Error::Config(format!(
                    "table {other} cannot be both the fenced table and a protocol table"
                )));
            }
        }
        if same_table(&table.epoch_table, &table.operations_table) {
            return Err(Error::Config(format!(
                "the epoch table and the outcomes table are both {}",
                table.epoch_table
            )));
        }
        Ok(table)
    }
}

/// Why two distinct names that [`Identifier::same_as`] matches are one name.
fn why_one(a: &Identifier, b: &Identifier) -> &'static str {
    if a.as_str().eq_ignore_ascii_case(b.as_str()) {
        "sql server and sqlite compare names ignoring case"
    } else {
        "postgresql keeps only the first 63 bytes of a name"
    }
}

fn same_table(a: &QualifiedName, b: &QualifiedName) -> bool {
    a.name.same_as(b.name.as_str())
        && match (&a.schema, &b.schema) {
            (None, None) => true,
            (Some(x), Some(y)) => x.same_as(y.as_str()),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! identifiers {
        ($($name:ident: $input:expr => $ok:expr,)*) => {$(
            #[test]
            fn $name() {
                let result = QualifiedName::parse($input);
                assert_eq!(result.is_ok(), $ok, "{:?} -> {:?}", $input, result);
            }
        )*};
    }

    identifiers! {
        accepts_plain: "ReportPublication" => true,
        accepts_underscore_start: "_t1" => true,
        accepts_schema: "dbo.ReportPublication" => true,
        accepts_128: &"a".repeat(128) => true,
        rejects_129: &"a".repeat(129) => false,
        rejects_empty: "" => false,
        rejects_digit_start: "1t" => false,
        rejects_space: "a b" => false,
        rejects_quote: "a\"b" => false,
        rejects_bracket: "[a]" => false,
        rejects_semicolon: "a;DROP TABLE x" => false,
        rejects_dash: "a-b" => false,
        rejects_two_schemas: "db.dbo.t" => false,
        rejects_empty_schema: ".t" => false,
        rejects_empty_name: "dbo." => false,
        rejects_non_ascii: "tëst" => false,
        rejects_comment: "a--" => false,
    }

    #[test]
    fn column_identifier_rejects_qualified_names() {
        assert!(Identifier::new("a.b").is_err());
        assert!(Identifier::new("a_b").is_ok());
    }

    #[test]
    fn error_names_the_identifier_and_the_reason() {
        let err = QualifiedName::parse("1abc").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid identifier \"1abc\": it starts with a digit"
        );
    }

    #[test]
    fn quotes_per_dialect() {
        let name = QualifiedName::parse("s.t").unwrap();
        assert_eq!(name.quoted(Dialect::Postgres), "\"s\".\"t\"");
        assert_eq!(name.quoted(Dialect::Sqlite), "\"s\".\"t\"");
        assert_eq!(name.quoted(Dialect::Mssql), "[s].[t]");
    }

    #[test]
    fn defaults_are_the_articles() {
        let t = FencedTable::default();
        assert_eq!(t.name().to_string(), "ReportPublication");
        assert_eq!(t.key_column().as_str(), "ReportId");
        assert_eq!(t.generation_column().as_str(), "Generation");
        assert_eq!(t.owner_column().as_str(), "LeaseOwner");
        assert_eq!(t.expiry_column().as_str(), "LeaseUntilUtc");
        assert_eq!(t.published_column().as_str(), "PublishedGeneration");
        assert_eq!(t.key_type(), KeyType::Uuid);
        assert_eq!(t.epoch_column().as_str(), "LeaseEpoch");
        assert_eq!(t.epoch_table().to_string(), "FencedEpoch");
        assert_eq!(t.operations_table().to_string(), "FencedOperation");
    }

    #[test]
    fn protocol_tables_default_to_the_fenced_tables_schema() {
        let t = FencedTable::builder().table("app.Report").build().unwrap();
        assert_eq!(t.epoch_table().to_string(), "app.FencedEpoch");
        assert_eq!(t.operations_table().to_string(), "app.FencedOperation");
        let t = FencedTable::builder()
            .table("app.Report")
            .epoch_table("ops.Epoch")
            .operations_table("Outcomes")
            .build()
            .unwrap();
        assert_eq!(t.epoch_table().to_string(), "ops.Epoch");
        assert_eq!(t.operations_table().to_string(), "Outcomes");
    }

    #[test]
    fn protocol_tables_must_differ() {
        assert!(matches!(
            FencedTable::builder()
                .operations_table("ReportPublication")
                .build(),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            FencedTable::builder()
                .epoch_table("x.T")
                .operations_table("X.t")
                .build(),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            FencedTable::builder().epoch_table("bad name").build(),
            Err(Error::InvalidIdentifier { .. })
        ));
        assert!(FencedTable::default().is_protocol_column("leaseepoch"));
    }

    #[test]
    fn builder_rejects_bad_column_and_duplicates() {
        assert!(matches!(
            FencedTable::builder().owner_column("x y").build(),
            Err(Error::InvalidIdentifier { .. })
        ));
        assert!(matches!(
            FencedTable::builder()
                .column("generation", ColumnType::Text)
                .build(),
            Err(Error::Config(_))
        ));
    }

    /// A name of 64 bytes: 63 `x`s, then `last`.
    fn long(last: char) -> String {
        format!("{}{last}", "x".repeat(63))
    }

    #[test]
    fn names_that_share_their_first_63_bytes_are_one_column() {
        let error = FencedTable::builder()
            .column(long('a'), ColumnType::Text)
            .column(long('b'), ColumnType::Text)
            .build()
            .unwrap_err();
        assert!(error.to_string().contains("first 63 bytes"), "{error}");
        // A protocol column too: a caller column would alias the generation.
        assert!(matches!(
            FencedTable::builder()
                .generation_column(long('a'))
                .column(long('b'), ColumnType::BigInt)
                .build(),
            Err(Error::Config(_))
        ));
        // Names that differ within their first 63 bytes stay apart.
        let apart = FencedTable::builder()
            .column(format!("{}a", "x".repeat(62)), ColumnType::Text)
            .column(format!("{}b", "x".repeat(62)), ColumnType::Text)
            .build();
        assert!(apart.is_ok(), "{apart:?}");
    }

    #[test]
    fn names_equal_ignoring_case_are_one_column() {
        let error = FencedTable::builder()
            .column("Payload", ColumnType::Text)
            .column("payload", ColumnType::Text)
            .build()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid configuration: columns Payload and payload of table ReportPublication \
             would be one column: sql server and sqlite compare names ignoring case"
        );
    }

    #[test]
    fn tables_that_share_their_first_63_bytes_are_one_table() {
        assert!(matches!(
            FencedTable::builder()
                .table(long('a'))
                .epoch_table(long('b'))
                .build(),
            Err(Error::Config(_))
        ));
    }

    #[test]
    fn a_caller_column_cannot_reach_a_protocol_column_by_truncation() {
        let t = FencedTable::builder()
            .generation_column(long('a'))
            .build()
            .unwrap();
        assert!(t.is_protocol_column(&long('b')));
        assert!(t.is_protocol_column(&long('a').to_uppercase()));
        assert!(t.is_protocol_column(&"x".repeat(63)));
        assert!(!t.is_protocol_column(&"x".repeat(62)));
        // Any text, however long or wherever its 63rd byte falls, is compared safely.
        assert!(!t.is_protocol_column(&"é".repeat(100)));
    }

    #[test]
    fn protocol_columns_are_recognised_ignoring_case() {
        let t = FencedTable::default();
        assert!(t.is_protocol_column("generation"));
        assert!(t.is_protocol_column("LeaseOwner"));
        assert!(!t.is_protocol_column("Payload"));
    }
}
