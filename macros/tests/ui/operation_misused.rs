// `operation = ...` names the parameter carrying the write's operation id; the method
// then returns `OperationOutcome`, and only a write of the lease's own table, outside a
// fenced transaction, carries one.
use fenced::{Executor, Fenced, Lease, OperationOutcome, Outcome, Sqlite, Store, fenced_write};
use uuid::Uuid;

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
        operation = operation_id,
    )]
    pub async fn no_such_parameter(
        &self,
        lease: &Lease,
        op: Uuid,
        payload: &str,
    ) -> fenced::Result<OperationOutcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
        operation = op,
    )]
    pub async fn plain_outcome(&self, lease: &Lease, op: Uuid, payload: &str) -> fenced::Result<Outcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        operation = op,
    )]
    pub async fn in_a_transaction<E: Executor>(
        &self,
        fenced: &Fenced<'_, E>,
        op: Uuid,
        payload: &str,
    ) -> fenced::Result<OperationOutcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (ReportId, Line) VALUES (@id, @line)",
        operation = op,
    )]
    pub async fn other_table<E: Executor>(
        &self,
        fenced: &Fenced<'_, E>,
        op: Uuid,
        id: Uuid,
        line: &str,
    ) -> fenced::Result<u64>;
}

fn main() {}
