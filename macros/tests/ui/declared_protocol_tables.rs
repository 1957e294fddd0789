// On the other-table path, the declaration's protected tables: the epoch and operations
// tables of `ReportPublication` (declared in the repository's `fenced.toml`).
use fenced::{Executor, Fenced, fenced_write};

pub struct Sneaky;

impl Sneaky {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE FencedEpoch SET Epoch = @epoch",
    )]
    pub async fn rewind<E: Executor>(&self, fenced: &Fenced<'_, E>, epoch: i64) -> fenced::Result<u64>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "DELETE FROM FencedOperation WHERE OperationId = @id",
    )]
    pub async fn forget<E: Executor>(&self, fenced: &Fenced<'_, E>, id: uuid::Uuid) -> fenced::Result<u64>;
}

fn main() {}
