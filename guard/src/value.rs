//! Values bound as statement parameters, and the keys of fenced rows.
//!
//! Values are always bound as parameters, never spliced into SQL text. Each backend
//! binds them natively (`uuid` on PostgreSQL, `uniqueidentifier` on SQL Server,
//! hyphenated lowercase text on SQLite).

use std::fmt;

use uuid::Uuid;

use crate::table::types::KeyType;

/// A parameter value, or a value read back from a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL `NULL`.
    Null,
    /// A boolean (`boolean`, `bit`, SQLite integer 0/1).
    Bool(bool),
    /// A 64-bit integer.
    I64(i64),
    /// A 64-bit float.
    F64(f64),
    /// A string.
    Text(String),
    /// A byte string.
    Bytes(Vec<u8>),
    /// A UUID (`uuid`, `uniqueidentifier`, SQLite hyphenated lowercase text).
    Uuid(Uuid),
}

impl Value {
    /// The value as an integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::I64(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as a string, if it is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a UUID: a UUID value, or text that parses as one (SQLite stores
    /// UUIDs as text).
    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Value::Uuid(v) => Some(*v),
            Value::Text(v) => Uuid::parse_str(v).ok(),
            _ => None,
        }
    }

    /// `true` for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

macro_rules! value_from {
    ($($ty:ty => $variant:ident $(as $cast:ty)?),* $(,)?) => {$(
        impl From<$ty> for Value {
            fn from(v: $ty) -> Self {
                Value::$variant(v $(as $cast)?)
            }
        }
    )*};
}

value_from! {
    bool => Bool,
    i8 => I64 as i64,
    i16 => I64 as i64,
    i32 => I64 as i64,
    i64 => I64,
    u8 => I64 as i64,
    u16 => I64 as i64,
    u32 => I64 as i64,
    f32 => F64 as f64,
    f64 => F64,
    String => Text,
    Vec<u8> => Bytes,
    Uuid => Uuid,
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_owned())
    }
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Value::Bytes(v.to_vec())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

impl From<Key> for Value {
    fn from(key: Key) -> Self {
        match key {
            Key::Uuid(v) => Value::Uuid(v),
            Key::BigInt(v) => Value::I64(v),
            Key::Text(v) => Value::Text(v),
        }
    }
}

impl From<&Key> for Value {
    fn from(key: &Key) -> Self {
        key.clone().into()
    }
}

/// The key of a fenced row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// A UUID key (`uuid`, `uniqueidentifier`, SQLite text).
    Uuid(Uuid),
    /// A 64-bit integer key.
    BigInt(i64),
    /// A text key.
    Text(String),
}

impl Key {
    /// The type of this key, to compare with the table's [`KeyType`].
    pub fn key_type(&self) -> KeyType {
        match self {
            Key::Uuid(_) => KeyType::Uuid,
            Key::BigInt(_) => KeyType::BigInt,
            Key::Text(_) => KeyType::Text,
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Uuid(v) => v.fmt(f),
            Key::BigInt(v) => v.fmt(f),
            Key::Text(v) => v.fmt(f),
        }
    }
}

impl From<Uuid> for Key {
    fn from(v: Uuid) -> Self {
        Key::Uuid(v)
    }
}

impl From<i64> for Key {
    fn from(v: i64) -> Self {
        Key::BigInt(v)
    }
}

impl From<i32> for Key {
    fn from(v: i32) -> Self {
        Key::BigInt(i64::from(v))
    }
}

impl From<String> for Key {
    fn from(v: String) -> Self {
        Key::Text(v)
    }
}

impl From<&str> for Key {
    fn from(v: &str) -> Self {
        Key::Text(v.to_owned())
    }
}

impl From<&Key> for Key {
    fn from(v: &Key) -> Self {
        v.clone()
    }
}
