//! How the guard's values cross tiberius: each [`Value`] and [`Key`] sent as a
//! parameter, each row read back, and a statement's count read as a row of its own.
//! Shared by the guard's pool (`pool.rs`) and the caller's clients (`caller.rs`),
//! which both run statements this way.

use std::borrow::Cow;

use tiberius::ColumnData;

use crate::error::{Error, Result};
use crate::value::{Key, Value};

/// `sql`, then the number of rows it changed as a one-row result. `@@ROWCOUNT` is read
/// right after the statement, in its scope: an `AFTER` trigger's own statements do not
/// change it there (the count Entity Framework relies on for tables with triggers),
/// and `SET NOCOUNT ON` does not suppress it. The line break ends a trailing `--`
/// comment; trailing semicolons are dropped so that none is doubled.
pub(crate) fn with_row_count(sql: &str) -> String {
    let statement = sql.trim_end().trim_end_matches(';');
    format!("{statement}\n;SELECT CAST(@@ROWCOUNT AS bigint)")
}

impl tiberius::ToSql for Value {
    fn to_sql(&self) -> ColumnData<'_> {
        match self {
            Value::Null => ColumnData::String(None),
            Value::Bool(v) => ColumnData::Bit(Some(*v)),
            Value::I64(v) => ColumnData::I64(Some(*v)),
            Value::F64(v) => ColumnData::F64(Some(*v)),
            Value::Text(v) => ColumnData::String(Some(Cow::Borrowed(v))),
            Value::Bytes(v) => ColumnData::Binary(Some(Cow::Borrowed(v))),
            Value::Uuid(v) => ColumnData::Guid(Some(*v)),
        }
    }
}

impl tiberius::ToSql for Key {
    fn to_sql(&self) -> ColumnData<'_> {
        match self {
            Key::Uuid(v) => ColumnData::Guid(Some(*v)),
            Key::BigInt(v) => ColumnData::I64(Some(*v)),
            Key::Text(v) => ColumnData::String(Some(Cow::Borrowed(v))),
        }
    }
}

impl<'a> tiberius::IntoSql<'a> for Value {
    fn into_sql(self) -> ColumnData<'a> {
        match self {
            Value::Null => ColumnData::String(None),
            Value::Bool(v) => ColumnData::Bit(Some(v)),
            Value::I64(v) => ColumnData::I64(Some(v)),
            Value::F64(v) => ColumnData::F64(Some(v)),
            Value::Text(v) => ColumnData::String(Some(Cow::Owned(v))),
            Value::Bytes(v) => ColumnData::Binary(Some(Cow::Owned(v))),
            Value::Uuid(v) => ColumnData::Guid(Some(v)),
        }
    }
}

pub(crate) fn decode(row: tiberius::Row) -> Result<Vec<Value>> {
    row.into_iter()
        .map(|cell| {
            Ok(match cell {
                ColumnData::U8(v) => v.map(|v| Value::I64(v.into())),
                ColumnData::I16(v) => v.map(|v| Value::I64(v.into())),
                ColumnData::I32(v) => v.map(|v| Value::I64(v.into())),
                ColumnData::I64(v) => v.map(Value::I64),
                ColumnData::F32(v) => v.map(|v| Value::F64(v.into())),
                ColumnData::F64(v) => v.map(Value::F64),
                ColumnData::Bit(v) => v.map(Value::Bool),
                ColumnData::String(v) => v.map(|v| Value::Text(v.into_owned())),
                ColumnData::Guid(v) => v.map(Value::Uuid),
                ColumnData::Binary(v) => v.map(|v| Value::Bytes(v.into_owned())),
                other => {
                    return Err(Error::UnexpectedResult(format!(
                        "a column of a type that is not decoded ({other:?}); cast it in the query"
                    )));
                }
            }
            .unwrap_or(Value::Null))
        })
        .collect()
}
