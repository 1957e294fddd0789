//! The configuration: which tables are fenced, and the names of their fence columns.
//!
//! ```toml
//! [[table]]
//! name = "dbo.ReportPublication"   # optionally schema-qualified
//! key = "ReportId"
//! generation = "Generation"        # default
//! owner = "LeaseOwner"             # default
//! expiry = "LeaseUntilUtc"         # default
//! epoch = "LeaseEpoch"             # default; `false`: the table has no epoch column
//! epoch_table = "FencedEpoch"      # default; optionally schema-qualified
//! # The rest is read by the guard and `#[fenced_write]`, not by the lint's rules:
//! published = "PublishedGeneration" # default
//! published_at = "PublishedAtUtc"  # default: none
//! operations_table = "FencedOperation" # default; optionally schema-qualified
//! key_type = "uuid"                # default; or "bigint", "text"
//! stamp_timeline = true            # default (PostgreSQL's timeline in the epoch)
//! columns = [{ name = "Payload", type = "text" }] # for schema creation
//!
//! # optional: paths the walk skips, gitignore-style globs relative to this file
//! exclude = ["tests/fixtures/**"]
//! ```
//!
//! (`exclude` is a top-level key: write it before the first `[[table]]`.)
//!
//! This file is the application's one declaration of its fenced tables: the lint checks
//! the SQL against it, `#[fenced_write(table = "...")]` takes the table's column names
//! from it at compile time, `fenced::table!` builds the guard's `FencedTable` from it,
//! and `fenced schema` prints its DDL. Its name is `fenced.toml`; `fenced-lint.toml`,
//! its earlier name, is still read.
//!
//! The lint matches an epoch or operations table named without a schema in any schema;
//! the guard creates one left at its default name beside the fenced table.
//!
//! `epoch` names the recovery-epoch column the guard stamps at each acquisition and
//! every fenced write compares with the epoch table (`LeaseEpoch = (SELECT Epoch FROM
//! FencedEpoch WHERE Id = 1)`), checked by `epochless-write`. Write `epoch = false` for
//! a table created before the epoch existed, which has no such column: its writes are
//! then not required to check one. A table discovered from a `CREATE TABLE` has the
//! epoch only when that statement declares the column.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;

/// The name of the configuration file looked for by [`Config::discover`].
pub const CONFIG_FILE_NAME: &str = "fenced.toml";

/// The configuration file's earlier name, still looked for, after
/// [`CONFIG_FILE_NAME`], in each directory.
pub const LEGACY_CONFIG_FILE_NAME: &str = "fenced-lint.toml";

/// The lint's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The fenced tables. Tables declared by `CREATE TABLE` in the scanned files are
    /// added to these by [`Linter::with_discovered`](crate::Linter::with_discovered).
    pub tables: Vec<TableSpec>,
    /// Paths not to check: gitignore-style globs, relative to the directory of the
    /// configuration file. Applied by the walk, on top of `.gitignore`.
    pub exclude: Vec<String>,
    /// The directory `exclude` patterns are relative to: the configuration file's
    /// directory when it was loaded from a file, else the current directory.
    pub base_dir: Option<PathBuf>,
}

/// One fenced table and the names of its fence columns.
///
/// Names are stored as written, without `[brackets]` or `"quotes"`; matching ignores
/// ASCII case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableSpec {
    /// The schema, when the configured name is qualified (`dbo.ReportPublication`).
    /// An unqualified entry matches the table in any schema.
    pub schema: Option<String>,
    /// The table name.
    pub name: String,
    /// The key column that identifies the protected row. Default `ReportId` (the article's).
    pub key: String,
    /// The ownership generation column. Default `Generation`.
    pub generation: String,
    /// The owner column. Default `LeaseOwner`.
    pub owner: String,
    /// The lease expiry column, compared with the database clock. Default `LeaseUntilUtc`.
    pub expiry: String,
    /// The recovery-epoch column, which every fenced write requires to equal the epoch
    /// table's current epoch. Default `LeaseEpoch` (the guard's); `None` for a table
    /// without one (`epoch = false`).
    pub epoch: Option<String>,
    /// The schema of the epoch table, when the configured name is qualified. An
    /// unqualified epoch table matches a reference in any schema.
    pub epoch_table_schema: Option<String>,
    /// The epoch table: one row holding the current recovery epoch. Default
    /// `FencedEpoch` (the guard's).
    pub epoch_table: String,
    /// The published-generation column. Default `PublishedGeneration`.
    pub published: String,
    /// A column set to the database's clock at each publication. Default: none.
    pub published_at: Option<String>,
    /// The schema of the operations (outcomes) table, when the configured name is
    /// qualified.
    pub operations_table_schema: Option<String>,
    /// The operations table, where operation ids' outcomes are recorded. Default
    /// `FencedOperation` (the guard's).
    pub operations_table: String,
    /// The key column's type. Default [`KeyType::Uuid`].
    pub key_type: KeyType,
    /// The application's columns, for schema creation.
    pub columns: Vec<ColumnSpec>,
    /// Whether PostgreSQL's timeline is stamped into the epoch. Default `true`.
    pub stamp_timeline: bool,
}

/// The type of a fenced table's key column, as the guard names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyType {
    /// `uuid` / `uniqueidentifier`.
    #[default]
    Uuid,
    /// `bigint`.
    BigInt,
    /// `text` / `nvarchar(450)`.
    Text,
}

/// The portable type of an application column, as the guard names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// `boolean` / `bit`.
    Bool,
    /// `bigint`.
    BigInt,
    /// `double precision` / `float`.
    Double,
    /// `text` / `nvarchar(max)`.
    Text,
    /// `bytea` / `varbinary(max)`.
    Bytes,
    /// `uuid` / `uniqueidentifier`.
    Uuid,
}

/// One application column of a declared table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// The column's name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub column_type: ColumnType,
}

/// The default key column name.
pub const DEFAULT_KEY: &str = "ReportId";
/// The default generation column name (the article's).
pub const DEFAULT_GENERATION: &str = "Generation";
/// The default owner column name (the article's).
pub const DEFAULT_OWNER: &str = "LeaseOwner";
/// The default expiry column name (the article's).
pub const DEFAULT_EXPIRY: &str = "LeaseUntilUtc";
/// The default recovery-epoch column name (the guard's).
pub const DEFAULT_EPOCH: &str = "LeaseEpoch";
/// The default epoch table name (the guard's).
pub const DEFAULT_EPOCH_TABLE: &str = "FencedEpoch";
/// The default published-generation column name (the article's).
pub const DEFAULT_PUBLISHED: &str = "PublishedGeneration";
/// The default operations table name (the guard's).
pub const DEFAULT_OPERATIONS_TABLE: &str = "FencedOperation";

impl TableSpec {
    /// A table with the article's column names, the guard's epoch column, epoch table
    /// and operations table, and the given key column. `name`
    /// may be schema-qualified and may carry brackets or quotes.
    pub fn new(name: &str, key: &str) -> TableSpec {
        let (schema, name) = split_qualified(name);
        TableSpec::named(schema, name, unquote(key))
    }

    /// [`new`](TableSpec::new) for names already split and unquoted.
    pub(crate) fn named(schema: Option<String>, name: String, key: String) -> TableSpec {
        TableSpec {
            epoch_table_schema: None,
            operations_table_schema: None,
            schema,
            name,
            key,
            generation: DEFAULT_GENERATION.to_owned(),
            owner: DEFAULT_OWNER.to_owned(),
            expiry: DEFAULT_EXPIRY.to_owned(),
            epoch: Some(DEFAULT_EPOCH.to_owned()),
            epoch_table: DEFAULT_EPOCH_TABLE.to_owned(),
            published: DEFAULT_PUBLISHED.to_owned(),
            published_at: None,
            operations_table: DEFAULT_OPERATIONS_TABLE.to_owned(),
            key_type: KeyType::Uuid,
            columns: Vec::new(),
            stamp_timeline: true,
        }
    }

    /// The operations table's name: `schema.name` or `name`.
    pub fn operations_table_display_name(&self) -> String {
        match &self.operations_table_schema {
            Some(schema) => format!("{schema}.{}", self.operations_table),
            None => self.operations_table.clone(),
        }
    }

    /// Whether a table reference written in code denotes this table's operations
    /// table, by the rule of [`matches`](TableSpec::matches).
    pub fn matches_operations_table(&self, schema: Option<&str>, name: &str) -> bool {
        names_match(
            self.operations_table_schema.as_deref(),
            &self.operations_table,
            schema,
            name,
        )
    }

    /// The name as shown in findings: `schema.name` or `name`.
    pub fn display_name(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{schema}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The epoch table's name as shown in findings: `schema.name` or `name`.
    pub fn epoch_table_display_name(&self) -> String {
        match &self.epoch_table_schema {
            Some(schema) => format!("{schema}.{}", self.epoch_table),
            None => self.epoch_table.clone(),
        }
    }

    /// Whether a table reference written in code (`schema` optional) denotes this table.
    ///
    /// An unqualified reference matches by name in any schema; a qualified one matches
    /// only this schema, or an unqualified configuration entry.
    pub fn matches(&self, schema: Option<&str>, name: &str) -> bool {
        names_match(self.schema.as_deref(), &self.name, schema, name)
    }

    /// Whether a table reference written in code denotes this table's epoch table, by
    /// the rule of [`matches`](TableSpec::matches).
    pub fn matches_epoch_table(&self, schema: Option<&str>, name: &str) -> bool {
        names_match(
            self.epoch_table_schema.as_deref(),
            &self.epoch_table,
            schema,
            name,
        )
    }
}

/// Whether the reference `schema.name` denotes the configured `mine_schema.mine`.
fn names_match(mine_schema: Option<&str>, mine: &str, schema: Option<&str>, name: &str) -> bool {
    if !mine.eq_ignore_ascii_case(name) {
        return false;
    }
    match (mine_schema, schema) {
        (Some(mine), Some(theirs)) => mine.eq_ignore_ascii_case(theirs),
        _ => true,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    table: Vec<RawTable>,
    #[serde(default)]
    exclude: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    name: String,
    key: Option<String>,
    generation: Option<String>,
    owner: Option<String>,
    expiry: Option<String>,
    epoch: Option<RawEpoch>,
    epoch_table: Option<String>,
    published: Option<String>,
    published_at: Option<String>,
    operations_table: Option<String>,
    #[serde(default)]
    key_type: KeyType,
    #[serde(default)]
    columns: Vec<ColumnSpec>,
    stamp_timeline: Option<bool>,
}

/// `epoch = "Column"` or `epoch = false`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawEpoch {
    Column(String),
    Enabled(bool),
}

impl Config {
    /// Parses the TOML text of a configuration: `[[table]]` entries with `name`
    /// (required, optionally schema-qualified), `key`, `generation`, `owner`, `expiry`,
    /// `epoch` (a column, or `false`) and `epoch_table` (optionally schema-qualified).
    pub fn from_toml(text: &str) -> Result<Config, Error> {
        Self::from_toml_at(text, None)
    }

    fn from_toml_at(text: &str, path: Option<&Path>) -> Result<Config, Error> {
        let raw: RawConfig = toml::from_str(text).map_err(|source| Error::ParseConfig {
            path: path.map(Path::to_path_buf),
            source,
        })?;
        let mut tables = Vec::with_capacity(raw.table.len());
        for entry in raw.table {
            let (schema, name) = split_qualified(&entry.name);
            let column = |value: Option<String>, default: &str, what: &str| {
                let value = value
                    .map(|v| unquote(&v))
                    .unwrap_or_else(|| default.to_owned());
                if valid_identifier(&value) {
                    Ok(value)
                } else {
                    Err(Error::InvalidConfig(format!(
                        "table `{}`: `{what}` column name `{value}` is not an identifier",
                        entry.name
                    )))
                }
            };
            if !valid_identifier(&name) || schema.as_deref().is_some_and(|s| !valid_identifier(s)) {
                return Err(Error::InvalidConfig(format!(
                    "table name `{}` is not an identifier or schema.identifier",
                    entry.name
                )));
            }
            let epoch = match entry.epoch {
                None => Some(DEFAULT_EPOCH.to_owned()),
                Some(RawEpoch::Column(value)) => Some(column(Some(value), DEFAULT_EPOCH, "epoch")?),
                Some(RawEpoch::Enabled(false)) => None,
                Some(RawEpoch::Enabled(true)) => {
                    return Err(Error::InvalidConfig(format!(
                        "table `{}`: `epoch` is the epoch column's name, or `false` for a table without one",
                        entry.name
                    )));
                }
            };
            let protocol_table = |given: Option<&str>, default: &str, what: &str| {
                let (given_schema, name) = split_qualified(given.unwrap_or(default));
                if !valid_identifier(&name)
                    || given_schema
                        .as_deref()
                        .is_some_and(|s| !valid_identifier(s))
                {
                    return Err(Error::InvalidConfig(format!(
                        "table `{}`: `{what}` `{}` is not an identifier or schema.identifier",
                        entry.name,
                        given.unwrap_or_default()
                    )));
                }
                Ok((given_schema, name))
            };
            let (epoch_table_schema, epoch_table) = protocol_table(
                entry.epoch_table.as_deref(),
                DEFAULT_EPOCH_TABLE,
                "epoch_table",
            )?;
            let (operations_table_schema, operations_table) = protocol_table(
                entry.operations_table.as_deref(),
                DEFAULT_OPERATIONS_TABLE,
                "operations_table",
            )?;
            let published_at = entry
                .published_at
                .map(|value| column(Some(value), "", "published_at"))
                .transpose()?;
            let mut columns = entry.columns;
            for spec in &mut columns {
                spec.name = unquote(&spec.name);
                if !valid_identifier(&spec.name) {
                    return Err(Error::InvalidConfig(format!(
                        "table `{}`: column name `{}` is not an identifier",
                        entry.name, spec.name
                    )));
                }
            }
            let spec = TableSpec {
                key: column(entry.key, DEFAULT_KEY, "key")?,
                generation: column(entry.generation, DEFAULT_GENERATION, "generation")?,
                owner: column(entry.owner, DEFAULT_OWNER, "owner")?,
                expiry: column(entry.expiry, DEFAULT_EXPIRY, "expiry")?,
                epoch,
                epoch_table_schema,
                epoch_table,
                published: column(entry.published, DEFAULT_PUBLISHED, "published")?,
                published_at,
                operations_table_schema,
                operations_table,
                key_type: entry.key_type,
                columns,
                stamp_timeline: entry.stamp_timeline.unwrap_or(true),
                schema,
                name,
            };
            tables.push(spec);
        }
        Ok(Config {
            tables,
            exclude: raw.exclude,
            base_dir: path.and_then(Path::parent).map(Path::to_path_buf),
        })
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<Config, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadConfig {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml_at(&text, Some(path))
    }

    /// Looks for `fenced.toml`, then `fenced-lint.toml`, in `start_dir` and its
    /// ancestors; the first found is loaded. `Ok(None)` when there is none.
    pub fn discover(start_dir: &Path) -> Result<Option<(PathBuf, Config)>, Error> {
        match Self::find(start_dir) {
            Some(path) => {
                let config = Self::load(&path)?;
                Ok(Some((path, config)))
            }
            None => Ok(None),
        }
    }

    /// The file [`discover`](Config::discover) would load from `start_dir`, if any.
    pub fn find(start_dir: &Path) -> Option<PathBuf> {
        start_dir.ancestors().find_map(|dir| {
            [CONFIG_FILE_NAME, LEGACY_CONFIG_FILE_NAME]
                .iter()
                .map(|name| dir.join(name))
                .find(|candidate| candidate.is_file())
        })
    }

    /// The configured table a reference written in code (`schema` optional) denotes.
    pub fn table(&self, schema: Option<&str>, name: &str) -> Option<&TableSpec> {
        self.tables.iter().find(|t| t.matches(schema, name))
    }
}

/// Strips one level of `[brackets]`, `"quotes"` or `` `backticks` `` and surrounding
/// whitespace.
pub(crate) fn unquote(part: &str) -> String {
    let part = part.trim();
    let inner = if part.len() >= 2
        && ((part.starts_with('[') && part.ends_with(']'))
            || (part.starts_with('"') && part.ends_with('"'))
            || (part.starts_with('`') && part.ends_with('`')))
    {
        &part[1..part.len() - 1]
    } else {
        part
    };
    inner.to_owned()
}

/// Splits `schema.name` (each part possibly quoted) into its parts; a name with more
/// than two parts keeps the last two.
pub(crate) fn split_qualified(name: &str) -> (Option<String>, String) {
    let parts = split_dotted(name);
    match parts.len() {
        0 => (None, String::new()),
        1 => (None, parts[0].clone()),
        n => (Some(parts[n - 2].clone()), parts[n - 1].clone()),
    }
}

fn split_dotted(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut close: Option<char> = None;
    for c in name.chars() {
        match close {
            Some(end) if c == end => {
                close = None;
                current.push(c);
            }
            Some(_) => current.push(c),
            None if c == '[' => {
                close = Some(']');
                current.push(c);
            }
            None if c == '"' || c == '`' => {
                close = Some(c);
                current.push(c);
            }
            None if c == '.' => parts.push(unquote(&std::mem::take(&mut current))),
            None => current.push(c),
        }
    }
    parts.push(unquote(&current));
    parts
}

fn valid_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 128
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ' ' || c == '#')
        && !name.starts_with(' ')
        && !name.ends_with(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tables_with_defaults() {
        let config = Config::from_toml(
            "[[table]]\nname = \"[dbo].[ReportPublication]\"\nkey = \"ReportId\"\n\n[[table]]\nname = \"leases\"\nkey = \"id\"\nexpiry = \"until\"\n",
        )
        .unwrap();
        assert_eq!(config.tables.len(), 2);
        assert_eq!(config.tables[0].schema.as_deref(), Some("dbo"));
        assert_eq!(config.tables[0].name, "ReportPublication");
        assert_eq!(config.tables[0].generation, "Generation");
        assert_eq!(config.tables[1].expiry, "until");
        assert_eq!(config.tables[1].owner, "LeaseOwner");
        assert!(config.exclude.is_empty());
        let config =
            Config::from_toml("exclude = [\"tests/corpus/**\"]\n[[table]]\nname = \"T\"\n")
                .unwrap();
        assert_eq!(config.exclude, ["tests/corpus/**"]);
    }

    #[test]
    fn parses_the_epoch() {
        let table = |extra: &str| {
            Config::from_toml(&format!("[[table]]\nname = \"T\"\n{extra}"))
                .map(|c| c.tables[0].clone())
        };
        let default = table("").unwrap();
        assert_eq!(default.epoch.as_deref(), Some(DEFAULT_EPOCH));
        assert_eq!(default.epoch_table_display_name(), DEFAULT_EPOCH_TABLE);
        assert_eq!(default, TableSpec::new("T", DEFAULT_KEY));
        assert_eq!(table("epoch = false\n").unwrap().epoch, None);
        let custom =
            table("epoch = \"[Recovery]\"\nepoch_table = \"ops.\\\"Epochs\\\"\"\n").unwrap();
        assert_eq!(custom.epoch.as_deref(), Some("Recovery"));
        assert_eq!(custom.epoch_table_display_name(), "ops.Epochs");
        assert!(custom.matches_epoch_table(Some("OPS"), "epochs"));
        assert!(custom.matches_epoch_table(None, "Epochs"));
        assert!(!custom.matches_epoch_table(Some("audit"), "Epochs"));
        assert!(!custom.matches_epoch_table(Some("ops"), "FencedEpoch"));
        for bad in [
            "epoch = true",
            "epoch = \"\"",
            "epoch = \"a;b\"",
            "epoch_table = \"x;y\"",
        ] {
            assert!(
                matches!(table(&format!("{bad}\n")), Err(Error::InvalidConfig(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            table("epoch = 1\n"),
            Err(Error::ParseConfig { .. })
        ));
    }

    #[test]
    fn parses_what_the_guard_reads() {
        let config = Config::from_toml(
            "[[table]]\nname = \"jobs.queue\"\nkey = \"job_id\"\nkey_type = \"bigint\"\n\
             published = \"published_generation\"\npublished_at = \"published_at\"\n\
             stamp_timeline = false\n\
             columns = [{ name = \"payload\", type = \"text\" }, { name = \"[size]\", type = \"bigint\" }]\n",
        )
        .unwrap();
        let table = &config.tables[0];
        assert_eq!(table.key_type, KeyType::BigInt);
        assert_eq!(table.published, "published_generation");
        assert_eq!(table.published_at.as_deref(), Some("published_at"));
        assert!(!table.stamp_timeline);
        assert_eq!(
            table.columns,
            [
                ColumnSpec {
                    name: "payload".into(),
                    column_type: ColumnType::Text
                },
                ColumnSpec {
                    name: "size".into(),
                    column_type: ColumnType::BigInt
                },
            ]
        );
        assert_eq!(table.epoch_table_display_name(), "FencedEpoch");
        assert_eq!(table.operations_table_display_name(), "FencedOperation");
        assert!(table.matches_operations_table(Some("jobs"), "fencedoperation"));
        let placed =
            &Config::from_toml("[[table]]\nname = \"T\"\noperations_table = \"audit.Ops\"\n")
                .unwrap()
                .tables[0];
        assert!(placed.matches_operations_table(None, "ops"));
        assert!(!placed.matches_operations_table(Some("public"), "Ops"));
        assert_eq!(config.table(Some("JOBS"), "Queue"), Some(table));
        assert_eq!(config.table(Some("public"), "queue"), None);
        let defaults = &Config::from_toml("[[table]]\nname = \"T\"\n")
            .unwrap()
            .tables[0];
        assert_eq!(defaults.key_type, KeyType::Uuid);
        assert_eq!(defaults.published, DEFAULT_PUBLISHED);
        assert!(defaults.stamp_timeline && defaults.columns.is_empty());
        for bad in [
            "key_type = \"int\"",
            "columns = [{ name = \"a\", type = \"varchar\" }]",
            "columns = [{ name = \"a\" }]",
            "stamp_timeline = \"yes\"",
        ] {
            assert!(
                matches!(
                    Config::from_toml(&format!("[[table]]\nname = \"T\"\n{bad}\n")),
                    Err(Error::ParseConfig { .. })
                ),
                "{bad}"
            );
        }
        for bad in [
            "columns = [{ name = \"a;b\", type = \"text\" }]",
            "operations_table = \"x.y;z\"",
            "published = \"\"",
        ] {
            assert!(
                matches!(
                    Config::from_toml(&format!("[[table]]\nname = \"T\"\n{bad}\n")),
                    Err(Error::InvalidConfig(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn rejects_bad_config() {
        assert!(matches!(
            Config::from_toml("[[table]]\nkey = \"x\""),
            Err(Error::ParseConfig { .. })
        ));
        assert!(matches!(
            Config::from_toml("[[tables]]\nname = \"x\""),
            Err(Error::ParseConfig { .. })
        ));
        assert!(matches!(
            Config::from_toml("[[table]]\nname = \"x\"\nkey = \"a;drop\""),
            Err(Error::InvalidConfig(_))
        ));
    }

    #[test]
    fn matching_respects_schema() {
        let qualified = TableSpec::new("dbo.T", "Id");
        assert!(qualified.matches(None, "t"));
        assert!(qualified.matches(Some("DBO"), "T"));
        assert!(!qualified.matches(Some("audit"), "T"));
        let bare = TableSpec::new("\"T\"", "Id");
        assert!(bare.matches(Some("audit"), "T"));
        assert!(!bare.matches(None, "U"));
    }

    #[test]
    fn discovers_upwards() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE_NAME),
            "[[table]]\nname = \"T\"\n",
        )
        .unwrap();
        let nested = dir.path().join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        let (path, config) = Config::discover(&nested).unwrap().unwrap();
        assert_eq!(path, dir.path().join(CONFIG_FILE_NAME));
        assert_eq!(config.tables[0].key, DEFAULT_KEY);
        // The earlier name is read where the new one is absent, and loses to it.
        std::fs::write(
            nested.join(LEGACY_CONFIG_FILE_NAME),
            "[[table]]\nname = \"Old\"\n",
        )
        .unwrap();
        assert_eq!(
            Config::find(&nested),
            Some(nested.join(LEGACY_CONFIG_FILE_NAME))
        );
        std::fs::write(nested.join(CONFIG_FILE_NAME), "").unwrap();
        assert_eq!(Config::find(&nested), Some(nested.join(CONFIG_FILE_NAME)));
        assert_eq!(Config::find(Path::new("/")), None);
    }
}
