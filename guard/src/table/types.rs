//! The types a fenced table's columns can have: its key's and the application's own.
//! Apart from the table, so that an error can name a key type without depending on
//! the table that returns errors.

use std::fmt;

/// The type of the fenced table's key column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum KeyType {
    /// `uuid` / `uniqueidentifier` / SQLite `TEXT` (hyphenated lowercase). The default,
    /// as in the article.
    #[default]
    Uuid,
    /// `bigint` / SQLite `INTEGER`.
    BigInt,
    /// `text` / `nvarchar(450)` / SQLite `TEXT`.
    Text,
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyType::Uuid => "uuid",
            KeyType::BigInt => "bigint",
            KeyType::Text => "text",
        })
    }
}

/// A portable column type for the application's own columns, used only by schema
/// creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// `boolean` / `bit` / SQLite `INTEGER`.
    Bool,
    /// `bigint` / SQLite `INTEGER`.
    BigInt,
    /// `double precision` / `float` / SQLite `REAL`.
    Double,
    /// `text` / `nvarchar(max)` / SQLite `TEXT`.
    Text,
    /// `bytea` / `varbinary(max)` / SQLite `BLOB`.
    Bytes,
    /// `uuid` / `uniqueidentifier` / SQLite `TEXT`.
    Uuid,
}
