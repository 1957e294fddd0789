// A second declared fenced table, or its operations table, written under the lease of
// the first.
use fenced::{Executor, Fenced, fenced_write};

pub struct Sneaky;

impl Sneaky {
    #[fenced_write(
        table = "Report",
        declarations = "../../../../macros/tests/ui/declarations/two_tables.toml",
        sql = "UPDATE Invoice SET Generation = @generation",
    )]
    pub async fn steal<E: Executor>(&self, fenced: &Fenced<'_, E>, generation: i64) -> fenced::Result<u64>;

    #[fenced_write(
        table = "Report",
        declarations = "../../../../macros/tests/ui/declarations/two_tables.toml",
        sql = "DELETE FROM InvoiceOps WHERE OperationId = @id",
    )]
    pub async fn forget<E: Executor>(&self, fenced: &Fenced<'_, E>, id: uuid::Uuid) -> fenced::Result<u64>;

    // The control: a plain table under the same declaration compiles (no error here).
    #[fenced_write(
        table = "Report",
        declarations = "../../../../macros/tests/ui/declarations/two_tables.toml",
        sql = "INSERT INTO ReportLine (ReportId, Body) VALUES (@id, @body)",
    )]
    pub async fn line<E: Executor>(&self, fenced: &Fenced<'_, E>, id: uuid::Uuid, body: &str) -> fenced::Result<u64>;
}

fn main() {}
