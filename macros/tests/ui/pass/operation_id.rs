use fenced::{Lease, OperationOutcome, Sqlite, Store, fenced_write};
use uuid::Uuid;

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    // The operation id, by value or by reference, is no value of the SQL's.
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
        operation = op,
    )]
    pub async fn save(
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
        publish_once,
    )]
    pub async fn publish(
        &self,
        op: &Uuid,
        lease: &Lease,
        payload: &str,
    ) -> fenced::Result<OperationOutcome>;
}

fn main() {}
