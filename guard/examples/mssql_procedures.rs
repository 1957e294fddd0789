//! Writes the SQL Server stored procedures and the permission script for the article's
//! table (with a `Payload` column) to `OUT_DIR` (default: the current directory):
//! `procedures.sql` and `permissions.sql`, batches separated by `GO`.
//!
//! ```text
//! cargo run -p fenced-guard --example mssql_procedures -- OUT_DIR [TABLE] [ROLE]
//! ```

use std::path::PathBuf;

use fenced_guard::{ColumnType, FencedTable, MssqlProcedures};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().unwrap_or_else(|| ".".into()));
    let table = args
        .next()
        .unwrap_or_else(|| "dbo.ReportPublication".into());
    let table = FencedTable::builder()
        .table(table)
        .published_at_column("PublishedAtUtc")
        .column("Payload", ColumnType::Text)
        .build()?;
    let mut procedures = MssqlProcedures::new(&table)?;
    if let Some(role) = args.next() {
        procedures = procedures.with_role(&role)?;
    }
    std::fs::create_dir_all(&out)?;
    let written = [
        ("procedures.sql", procedures.procedures_script()),
        ("permissions.sql", procedures.permissions_script()),
    ];
    for (name, text) in written {
        let path = out.join(name);
        std::fs::write(&path, text)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
