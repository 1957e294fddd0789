//! Comments the databases end in different places.

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload /* a /* b */ ) OR (1 = 1 */",
)]
async fn nested_comment(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload /* open",
)]
async fn unterminated_comment(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload -- note\r) OR (1 = 1",
)]
async fn carriage_return(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE Note = 'a\\'",
)]
async fn backslash_in_string(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
