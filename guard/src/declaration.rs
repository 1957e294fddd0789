//! The application's one declaration of its fenced tables, `fenced.toml`, read into
//! [`FencedTable`]s.
//!
//! The same file is read by `fenced-lint` (which checks the application's SQL against
//! it), by `#[fenced_write(table = "...")]` (which takes the table's column names from
//! it at compile time) and by `fenced::table!` (which builds a table from it at compile
//! time, so that a name changed in the file changes every user of it). Its format is
//! [`fenced_lint::config`]'s:
//!
//! ```toml
//! [[table]]
//! name = "jobs"
//! key = "job_id"
//! key_type = "text"
//! generation = "generation"
//! owner = "lease_owner"
//! expiry = "lease_until"
//! published = "published_generation"
//! epoch = "lease_epoch"
//! columns = [{ name = "payload", type = "text" }]
//! ```
//!
//! [`Declarations::schema`] renders the DDL of every declared table, with its epoch and
//! operations tables, for a migration file (`fenced schema --dialect postgres` prints
//! it).

use std::path::{Path, PathBuf};

use fenced_lint::config::{self, Config, TableSpec};

use crate::dialect::{self, Dialect};
use crate::error::{Error, Result};
use crate::table::{ColumnType, FencedTable, FencedTableBuilder, KeyType};

/// The tables declared in one `fenced.toml`.
#[derive(Clone, Debug)]
pub struct Declarations {
    path: Option<PathBuf>,
    config: Config,
}

impl Declarations {
    /// Reads declarations from the text of a `fenced.toml`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the text is not valid TOML of the expected shape, or
    /// declares an impossible name.
    pub fn from_toml(text: &str) -> Result<Declarations> {
        let config = Config::from_toml(text).map_err(|e| declaration_error(&e))?;
        Ok(Declarations { path: None, config })
    }

    /// Reads the declarations of one file.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the file cannot be read or does not parse.
    pub fn load(path: &Path) -> Result<Declarations> {
        let config = Config::load(path).map_err(|e| declaration_error(&e))?;
        Ok(Declarations {
            path: Some(path.to_path_buf()),
            config,
        })
    }

    /// The declarations of the nearest `fenced.toml` (or `fenced-lint.toml`, its earlier
    /// name) in `start_dir` or a parent of it; `Ok(None)` when there is none.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the file found cannot be read or does not parse.
    pub fn discover(start_dir: &Path) -> Result<Option<Declarations>> {
        Config::find(start_dir)
            .map(|path| Declarations::load(&path))
            .transpose()
    }

    /// The file these were read from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The declarations as the lint reads them.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The declared tables' names, as written (`schema.name` or `name`).
    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.config.tables.iter().map(TableSpec::display_name)
    }

    /// The declaration of the table `name` (`schema.name` or `name`; an unqualified
    /// name finds the table in any schema), matched as the lint matches names,
    /// ignoring ASCII case.
    pub fn spec(&self, name: &str) -> Option<&TableSpec> {
        let (schema, name) = match name.rsplit_once('.') {
            Some((schema, name)) => (Some(schema), name),
            None => (None, name),
        };
        self.config.table(schema, name)
    }

    /// The declared table `name`, built.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when no table of that name is declared, or when the
    /// declaration is one the guard refuses (see [`FencedTableBuilder::build`]);
    /// [`Error::InvalidIdentifier`] for a name outside the guard's grammar.
    pub fn table(&self, name: &str) -> Result<FencedTable> {
        let spec = self.spec(name).ok_or_else(|| {
            let declared: Vec<String> = self.names().collect();
            Error::Config(format!(
                "table {name:?} is not declared{}; declared: {}",
                self.path
                    .as_ref()
                    .map(|p| format!(" in {}", p.display()))
                    .unwrap_or_default(),
                if declared.is_empty() {
                    "none".to_owned()
                } else {
                    declared.join(", ")
                }
            ))
        })?;
        self.with_others(spec, builder(spec)?)?.build()
    }

    /// `table` with every other declared table, and their epoch and operations
    /// tables, as tables a fenced transaction under its leases may not write.
    fn with_others(
        &self,
        spec: &TableSpec,
        mut table: FencedTableBuilder,
    ) -> Result<FencedTableBuilder> {
        for other in self
            .config
            .tables
            .iter()
            .filter(|t| !std::ptr::eq(*t, spec))
        {
            let built = builder(other)?.build()?;
            for name in [built.name(), built.epoch_table(), built.operations_table()] {
                table = table.other_fenced_table(name.to_string());
            }
        }
        Ok(table)
    }

    /// Every declared table, built, in the order of the file.
    ///
    /// # Errors
    ///
    /// As [`table`](Declarations::table), for the first table the guard refuses.
    pub fn tables(&self) -> Result<Vec<FencedTable>> {
        self.config
            .tables
            .iter()
            .map(|spec| self.with_others(spec, builder(spec)?)?.build())
            .collect()
    }

    /// The DDL of every declared table for `dialect`, with its epoch table (and its
    /// first row) and operations table: what [`Store::create_schema`] runs for each,
    /// one statement per line group, each ending in `;`, a statement shared by two
    /// tables written once. Every statement creates only what is absent.
    ///
    /// # Errors
    ///
    /// As [`tables`](Declarations::tables).
    ///
    /// [`Store::create_schema`]: crate::Store::create_schema
    pub fn schema(&self, dialect: Dialect) -> Result<String> {
        let mut statements: Vec<String> = Vec::new();
        for table in self.tables()? {
            for statement in dialect::schema_statements(dialect, &table) {
                if !statements.contains(&statement) {
                    statements.push(statement);
                }
            }
        }
        Ok(statements
            .iter()
            .map(|s| format!("{s};\n"))
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// A builder that starts from the declaration `spec`: the guard's table, before its
/// names are checked.
///
/// # Errors
///
/// [`Error::Config`] for a table declared without an epoch column (`epoch = false`),
/// which the lint accepts for tables written before the epoch existed but the guard
/// cannot use: every guard statement checks the epoch.
pub fn builder(spec: &TableSpec) -> Result<FencedTableBuilder> {
    let Some(epoch) = &spec.epoch else {
        return Err(Error::Config(format!(
            "table {} is declared with `epoch = false`: the guard stamps and checks an epoch \
             column in every statement; name one (add it with `ALTER TABLE … ADD … bigint NOT \
             NULL DEFAULT 0`)",
            spec.display_name()
        )));
    };
    let mut builder = FencedTable::builder()
        .table(spec.display_name())
        .key_column(&spec.key)
        .key_type(match spec.key_type {
            config::KeyType::Uuid => KeyType::Uuid,
            config::KeyType::BigInt => KeyType::BigInt,
            config::KeyType::Text => KeyType::Text,
        })
        .generation_column(&spec.generation)
        .owner_column(&spec.owner)
        .expiry_column(&spec.expiry)
        .published_column(&spec.published)
        .epoch_column(epoch)
        .stamp_timeline(spec.stamp_timeline);
    // Left at its default name, a protocol table is the guard's default: beside the
    // fenced table, in its schema.
    if spec.epoch_table_schema.is_some() || spec.epoch_table != config::DEFAULT_EPOCH_TABLE {
        builder = builder.epoch_table(spec.epoch_table_display_name());
    }
    if spec.operations_table_schema.is_some()
        || spec.operations_table != config::DEFAULT_OPERATIONS_TABLE
    {
        builder = builder.operations_table(spec.operations_table_display_name());
    }
    if let Some(published_at) = &spec.published_at {
        builder = builder.published_at_column(published_at);
    }
    for column in &spec.columns {
        builder = builder.column(&column.name, column_type(column.column_type));
    }
    Ok(builder)
}

fn column_type(declared: config::ColumnType) -> ColumnType {
    match declared {
        config::ColumnType::Bool => ColumnType::Bool,
        config::ColumnType::BigInt => ColumnType::BigInt,
        config::ColumnType::Double => ColumnType::Double,
        config::ColumnType::Text => ColumnType::Text,
        config::ColumnType::Bytes => ColumnType::Bytes,
        config::ColumnType::Uuid => ColumnType::Uuid,
    }
}

/// The lint's error, with its causes, as the guard's.
fn declaration_error(error: &fenced_lint::Error) -> Error {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    Error::Config(message)
}
