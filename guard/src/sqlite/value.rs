//! How the guard's values cross rusqlite: each [`Value`] and [`Key`] bound to a
//! statement, and each column read back. Shared by the guard's pool (`pool.rs`) and
//! the caller's connections (`caller.rs`), which both run statements this way.

use rusqlite::types::{ToSqlOutput, ValueRef};

use crate::value::{Key, Value};

/// A UUID as SQLite stores it: hyphenated lowercase text. Encoded directly rather than
/// through `Display`, whose formatting machinery cost more than the encoding itself.
fn uuid_text(uuid: &uuid::Uuid) -> String {
    let mut buffer = uuid::Uuid::encode_buffer();
    uuid.hyphenated().encode_lower(&mut buffer).to_owned()
}

/// The values of a statement as the statement binds them: [`Bound`] for each.
pub(crate) fn bound(params: &[Value]) -> impl Iterator<Item = Bound<'_>> {
    params.iter().map(Bound::from)
}

/// One value as a statement binds it. A UUID's text is encoded into the value itself,
/// so binding it borrows that text: `impl ToSql for Value` has to return a new `String`
/// for a UUID, an allocation and a free on every statement that carries a lease's
/// owner. SQLite copies bound text either way.
pub(crate) enum Bound<'a> {
    Value(&'a Value),
    UuidText([u8; uuid::fmt::Hyphenated::LENGTH]),
}

impl<'a> From<&'a Value> for Bound<'a> {
    fn from(value: &'a Value) -> Self {
        match value {
            Value::Uuid(uuid) => {
                let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
                uuid.hyphenated().encode_lower(&mut text);
                Bound::UuidText(text)
            }
            other => Bound::Value(other),
        }
    }
}

impl rusqlite::ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Bound::Value(value) => value.to_sql(),
            Bound::UuidText(text) => Ok(ToSqlOutput::Borrowed(ValueRef::Text(text))),
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Bool(v) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*v))),
            Value::I64(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::F64(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Value::Bytes(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
            Value::Uuid(v) => ToSqlOutput::Owned(rusqlite::types::Value::Text(uuid_text(v))),
        })
    }
}

impl rusqlite::ToSql for Key {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Key::BigInt(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Key::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Key::Uuid(v) => ToSqlOutput::Owned(rusqlite::types::Value::Text(uuid_text(v))),
        })
    }
}

pub(crate) fn decode(index: usize, value: ValueRef<'_>) -> rusqlite::Result<Value> {
    Ok(match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => Value::I64(v),
        ValueRef::Real(v) => Value::F64(v),
        ValueRef::Text(v) => Value::Text(
            std::str::from_utf8(v)
                .map_err(|e| rusqlite::Error::Utf8Error(index, e))?
                .to_owned(),
        ),
        ValueRef::Blob(v) => Value::Bytes(v.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_stored_as_hyphenated_lowercase_text() {
        let uuid = uuid::Uuid::from_u128(0x0123_4567_89AB_CDEF_0123_4567_89AB_CDEF);
        assert_eq!(uuid_text(&uuid), "01234567-89ab-cdef-0123-456789abcdef");
        assert_eq!(uuid_text(&uuid), uuid.hyphenated().to_string());
    }
}
