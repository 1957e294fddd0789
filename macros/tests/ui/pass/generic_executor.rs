use std::sync::Arc;

use fenced::{Backend, Executor, Dialect, FencedTable, Lease, Outcome, Store, fenced_write};

pub struct Reports<B> {
    store: Arc<Store<B>>,
}

impl<B: Backend> Reports<B> {
    #[fenced_write(
        table = "dbo.ReportPublication",
        sql = "UPDATE dbo.ReportPublication SET Payload = @payload WHERE Draft = 1",
        store = self.store,
    )]
    pub async fn save(&self, lease: &Lease, payload: Option<String>) -> fenced::Result<Outcome>;
}

#[fenced_write(
    table = "jobs.Job",
    sql = "UPDATE jobs.Job SET State = @state",
    key = "JobId",
    generation = "Epoch",
    owner = "Holder",
    expiry = "HeldUntil",
)]
pub async fn finish<B: Backend>(store: &Store<B>, lease: &Lease, state: i64) -> fenced::Result<Outcome>;

fn main() {
    let reports = FencedTable::builder().table("dbo.ReportPublication").build().unwrap();
    let jobs = FencedTable::builder()
        .table("jobs.Job")
        .key_column("JobId")
        .generation_column("Epoch")
        .owner_column("Holder")
        .expiry_column("HeldUntil")
        .build()
        .unwrap();
    assert!(Reports::<fenced::Sqlite>::save_sql(&reports, Dialect::Mssql).unwrap().starts_with(
        // fenced-lint: allow(unfenced-write) the expected start of the generated statement; the fence follows
        "UPDATE [dbo].[ReportPublication] SET Payload = @P1 WHERE (Draft = 1) AND [ReportId] = @P2"
    ));
    assert!(finish_sql(&jobs, Dialect::Postgres).unwrap().contains("\"Epoch\" = $3"));
}
