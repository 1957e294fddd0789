//! `#[fenced_write]`: a repository method that writes a fenced table does not compile
//! unless it takes the lease that authorises the write, and the SQL it sends always
//! carries the fence.
//!
//! Use it through the `fenced` crate, which re-exports it; everything is documented on
//! [`fenced_write`]. The SQL is read by the same reading as `fenced-lint` and the guard
//! (`fenced_sql`), as each database it is sent to reads it.

// docs.rs (`[package.metadata.docs.rs]`) shows each feature-gated item's feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod args;
mod companion;
mod declaration;
#[cfg(test)]
mod differential;
mod expand;
mod literal;
mod signature;
mod statement;
mod table;
mod transaction;

use proc_macro::TokenStream;

/// Makes a repository method a fenced write.
///
/// The method declares its SQL and takes the lease; the body is generated. It sends the
/// statement with the fence appended to its top-level `WHERE`, the method's arguments
/// and the lease bound as parameters, and returns the guard's `fenced::Outcome`:
/// `Applied`, or `Refused` when the lease no longer holds. Driver and SQL errors stay
/// errors.
///
/// ```
/// use fenced::{AsLease, Backend, Executor, Lease, Outcome, Store, fenced_write};
///
/// /// A lease on one report, as the application hands it around.
/// pub struct ReportLease(Lease);
///
/// impl AsLease for ReportLease {
///     fn as_lease(&self) -> &Lease {
///         &self.0
///     }
/// }
///
/// pub struct Reports<B> {
///     store: Store<B>,
/// }
///
/// impl<B: Backend> Reports<B> {
///     /// Saves a draft's body, only while `lease` holds the report.
///     #[fenced_write(
///         table = "ReportPublication",
///         sql = "UPDATE ReportPublication SET Payload = @payload WHERE Draft = @draft",
///         store = self.store,
///     )]
///     pub async fn save(&self, lease: &ReportLease, payload: &str, draft: bool)
///     -> fenced::Result<Outcome>;
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # use std::time::Duration;
/// # use fenced::{ColumnType, Dialect, FencedTable, Sqlite, Value};
/// # let dir = tempfile::tempdir()?;
/// # let table = FencedTable::builder()
/// #     .column("Payload", ColumnType::Text)
/// #     .column("Draft", ColumnType::Bool)
/// #     .build()?;
/// # let store = Store::new(Sqlite::open(dir.path().join("reports.db")).await?, table);
/// # store.create_schema().await?;
/// # let id = uuid::Uuid::new_v4();
/// # store.provision(id).await?;
/// # store.backend().execute(
/// #     "UPDATE ReportPublication SET Draft = 1 WHERE ReportId = ?1",
/// #     &[Value::Uuid(id)],
/// # ).await?;
/// let reports = Reports { store };
/// let lease = ReportLease(reports.store.try_acquire(id, Duration::from_secs(30)).await?.unwrap());
/// assert_eq!(reports.save(&lease, "report body", true).await?, Outcome::Applied);
///
/// // Once the row has moved on (here: released), the same call is refused.
/// reports.store.release(&lease).await?;
/// assert_eq!(reports.save(&lease, "stale body", true).await?, Outcome::Refused);
///
/// // The statement sent, per dialect:
/// let sql = Reports::<Sqlite>::save_sql(reports.store.table(), Dialect::Sqlite)?;
/// assert!(sql.starts_with(
///     "UPDATE \"ReportPublication\" SET Payload = ?1 WHERE (Draft = ?2) AND \"ReportId\" = ?3"
/// ));
/// # Ok(())
/// # }
/// ```
///
/// `save` sends, on each database (from `Reports::<B>::save_sql(table, dialect)`):
///
/// ```text
/// -- PostgreSQL
/// UPDATE "ReportPublication" SET Payload = $1 WHERE (Draft = $2) AND "ReportId" = $3 AND "Generation" = $4 AND "LeaseOwner" = $5 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "FencedEpoch" WHERE "Id" = 1)
/// -- SQLite
/// UPDATE "ReportPublication" SET Payload = ?1 WHERE (Draft = ?2) AND "ReportId" = ?3 AND "Generation" = ?4 AND "LeaseOwner" = ?5 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)
/// -- SQL Server
/// UPDATE [ReportPublication] SET Payload = @P1 WHERE (Draft = @P2) AND [ReportId] = @P3 AND [Generation] = @P4 AND [LeaseOwner] = @P5 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [FencedEpoch] WHERE [Id] = 1)
/// ```
///
/// The caller's `WHERE` is parenthesised, so an `OR` in it cannot reach another row;
/// `@payload` and `@draft` become the database's numbered parameters, followed by the
/// lease's key, generation and owner; `now` is the database's clock.
///
/// # Options
///
/// | option | meaning |
/// |---|---|
/// | `table = "schema.Table"` | the fenced table (required); the SQL must `UPDATE` exactly it |
/// | `sql = "UPDATE ..."` | the statement (required), with `@name` placeholders for the method's parameters |
/// | `store = self.store` | where the `Store` is; default: a parameter of type `&Store<B>` |
/// | `lease = name` | the parameter that carries the lease; default: a parameter marked `#[lease]`, else one whose type is named `Lease` or `…Lease` |
/// | `operation = name` | the parameter (`Uuid` or `&Uuid`) carrying an operation id, recorded in the outcomes table with the write; the method returns `fenced::Result<OperationOutcome>` ([Operation ids](#operation-ids)) |
/// | `publish_once` | also set the published generation to the lease's, and refuse a second publication by the same generation |
/// | `trait_impl` | the method implements a trait's method: leave out the `<method>_sql` companion (below), which a trait's `impl` cannot hold |
/// | `dialect = "postgres"` | the SQL is written for one database, `postgres`, `sqlite` or `mssql` (below); default: all three |
/// | `key`, `generation`, `owner`, `expiry`, `published`, `epoch` | column names, when not the article's `ReportId`, `Generation`, `LeaseOwner`, `LeaseUntilUtc`, `PublishedGeneration`, `LeaseEpoch` |
/// | `crate = "fenced_guard"` | the path of the runtime crate, when `fenced` is not a dependency |
///
/// The lease parameter's type must implement `AsLease`: `Lease`, references and smart
/// pointers to it, or the application's own type. At run time the store's table must
/// have the declared name and columns; otherwise the method returns an error and writes
/// nothing.
///
/// The attribute also generates `fn <method>_sql(table: &FencedTable, dialect: Dialect)
/// -> fenced::Result<&'static str>` beside the method: the final statement the method
/// sends to a store whose table is `table` (its epoch table included), for tests and
/// documentation; an error if `table` is not the declared one, or `dialect` not one the
/// method is written for.
///
/// # Operation ids
///
/// With `operation = op`, the write records `op` in the outcomes table in the same
/// statement (PostgreSQL), batch (SQL Server) or transaction (SQLite), and requires it
/// unrecorded, as `Store::update_op` does: after a lost acknowledgement,
/// `store.resolve(op)` tells whether it landed, and a retry with the same `op` answers
/// `OperationOutcome::AlreadyApplied` and writes nothing.
///
/// ```
/// use fenced::{Backend, Lease, OperationOutcome, Store, fenced_write};
///
/// pub struct Reports<B> {
///     store: Store<B>,
/// }
///
/// impl<B: Backend> Reports<B> {
///     #[fenced_write(
///         table = "ReportPublication",
///         sql = "UPDATE ReportPublication SET Payload = @payload",
///         store = self.store,
///         operation = op,
///     )]
///     pub async fn save(
///         &self,
///         lease: &Lease,
///         op: uuid::Uuid,
///         payload: &str,
///     ) -> fenced::Result<OperationOutcome>;
/// }
/// ```
///
/// A method inside a fenced transaction takes no operation id of its own: the
/// transaction records one for all its writes (`Fenced::record`).
///
/// # In a trait's `impl`
///
/// A repository behind a trait (to swap it in tests, say) declares the method in the
/// trait as usual and puts the attribute on its implementation, with `trait_impl`: an
/// `impl` of a trait may hold only the trait's items, so the `<method>_sql` companion is
/// left out; the method is generated as anywhere else. The trait's own declaration is
/// written without the attribute, and may ask for a `Send` future:
///
/// ```
/// use fenced::{Backend, Executor, Lease, Outcome, Store, fenced_write};
///
/// pub trait ReportRepository {
///     fn save(&self, lease: &Lease, payload: &str)
///     -> impl Future<Output = fenced::Result<Outcome>> + Send;
/// }
///
/// pub struct Reports<B> {
///     store: Store<B>,
/// }
///
/// impl<B: Backend> ReportRepository for Reports<B> {
///     #[fenced_write(
///         table = "ReportPublication",
///         sql = "UPDATE ReportPublication SET Payload = @payload",
///         store = self.store,
///         trait_impl,
///     )]
///     async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
/// }
/// ```
///
/// Without `trait_impl` there, the compiler says so: ``method `save_sql` is not a
/// member of trait `ReportRepository` ``, then `` `save` is in a trait's `impl`: add
/// `trait_impl` to its `#[fenced_write(...)]` `` (for a method that takes `self`: an
/// attribute cannot see the `impl` it is in, so the method refers to its companion,
/// which fails only there). Macros that rewrite a whole `impl` first, such as `#[async_trait]`, see the
/// method before this attribute has generated its body, so they are not supported
/// around it; native `async fn` in traits is.
///
/// # Written for one database
///
/// By default the SQL must mean the same on PostgreSQL, SQLite and SQL Server (the
/// portable subset, below). A method that needs one database's own forms declares it,
/// `dialect = "postgres"` (or `"sqlite"`, `"mssql"`): its SQL is then checked with that
/// database's lexer alone, so `$$...$$`, `E'...'` and `::` compile for PostgreSQL,
/// `` `name` `` and `[name]` for SQLite, `[name]` and `N'...'` for SQL Server. What the
/// macro cannot bind (`$1`, `?`, `@@x`), `;`, and forms read differently by a server's
/// settings or version (a backslash in a PostgreSQL string that is not `E'...'`) are
/// still refused, and so is a text the macro's parser splits differently from that
/// database. On a store of another database the method returns `Error::Config` and
/// sends nothing; so does `<method>_sql` for another dialect.
///
/// ```
/// use fenced::{Backend, Lease, Outcome, Store, fenced_write};
///
/// pub struct Reports<B> {
///     store: Store<B>,
/// }
///
/// impl<B: Backend> Reports<B> {
///     #[fenced_write(
///         table = "ReportPublication",
///         sql = "UPDATE ReportPublication SET Payload = @payload || $$ (draft)$$ \
///                WHERE Draft::int = 1",
///         store = self.store,
///         dialect = "postgres",
///     )]
///     async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
/// }
/// ```
///
/// # In a fenced transaction
///
/// A method may take a fenced transaction, `&Fenced<'_, E>` (from `Store::transaction`,
/// `Store::deferred_transaction` or `Store::fence`; a parameter of another type name is
/// marked `#[fenced]`), instead of a store and a lease:
///
/// - On the lease's table, it sends the same fenced `UPDATE` on the transaction's
///   connection, with the lease the transaction checked, and returns `Outcome`.
/// - A method whose SQL writes any other table (one `INSERT`, `UPDATE` or `DELETE`)
///   compiles only if it takes the transaction: the transaction's lock on the lease's
///   row fences it, so the statement is sent as written, placeholders numbered and no
///   fence appended. It returns `fenced::Result<u64>`, the rows written. The SQL is
///   checked as above (portable subset unless the method declares its `dialect`, one
///   statement, every `@name` a parameter; no `RETURNING`/`OUTPUT`, no `WITH`); at run
///   time the transaction's table must be the declared one, and the statement must not
///   write it or its epoch table. An upsert, `INSERT ... ON CONFLICT`, is refused unless
///   the method declares `dialect = "postgres"` or `"sqlite"`: SQL Server has no
///   `ON CONFLICT`. MySQL's `ON DUPLICATE KEY UPDATE` is refused always.
///
/// ```
/// use fenced::{Executor, Fenced, Outcome, fenced_write};
///
/// pub struct Reports;
///
/// impl Reports {
///     #[fenced_write(
///         table = "ReportPublication",
///         sql = "INSERT INTO ReportLine (Report, Body) VALUES (@report, @body)",
///     )]
///     pub async fn add_line<E: Executor>(&self, fenced: &Fenced<'_, E>, report: String, body: &str)
///     -> fenced::Result<u64>;
///
///     #[fenced_write(
///         table = "ReportPublication",
///         sql = "UPDATE ReportPublication SET Payload = @payload",
///     )]
///     pub async fn save<E: Executor>(&self, fenced: &Fenced<'_, E>, payload: &str)
///     -> fenced::Result<Outcome>;
/// }
/// ```
///
/// `reports.add_line(&tx, ...)` takes the `FencedTransaction` of `Store::transaction`
/// as it is (it derefs to `Fenced`). Without the `fenced` parameter, `add_line` is
/// refused: `` `add_line` writes `ReportLine`, a table other than the lease's
/// `ReportPublication`: only a fenced transaction fences that write ``.
///
/// # What the compiler refuses
///
/// - A method without a lease, on its signature:
///
/// ```text
/// error: `save` writes a fenced table but takes no lease
///        help: add the lease that authorises the write as a parameter, e.g. `lease: &Lease`, or your own lease type that implements `AsLease` marked `#[lease] lease: &ReportLease`
///   --> tests/ui/no_lease.rs:13:9
///    |
/// 13 |     pub async fn save(&self, payload: &str) -> fenced::Result<Outcome>;
///    |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
/// ```
///
/// - SQL outside the portable subset (unless the method declares its `dialect`, above),
///   which PostgreSQL, SQLite and SQL Server all split into the same tokens: ASCII
///   words, `"quoted"` names, `'...'` strings (no backslash, no prefix), decimal
///   numbers, `@name` placeholders, `= <> != < > <= >= + - * / %`, `( ) , .`, `--` and
///   unnested `/* */` comments. Each dialect-only form is refused with what to write
///   instead: `[name]`, `` `name` ``, `U&"name"`, `E''`, `N''`, `X''`, `B''`,
///   `$$...$$`, `$1`, `?`, `:name`, `$name`, `@@name`, `::`, `||`, nested or
///   unterminated comments, a bare carriage return, `GO`, `;`.
/// - Anything but one `UPDATE` of the declared table (or, in a fenced transaction, of
///   another table, above): `DELETE`, `MERGE` and upserts each
///   with the reason and what to write instead; `RETURNING`/`OUTPUT`; a `WITH` list;
///   `UPDATE OR ...`, `WHERE CURRENT OF`, `OPTION (...)`, `ORDER BY`/`LIMIT`.
/// - `SET` of the generation, owner, expiry, epoch or key column, or of the published
///   generation without `publish_once`.
/// - Every `@name` that is not a value parameter, and every value parameter no `@name`
///   uses, all reported at once.
/// - SQL that cannot be parsed, with the line and column.
///
/// Then each dialect's final statement is rendered as the guard renders it and re-read
/// with that dialect's lexer (`FencedSql::new`): it must be one `UPDATE` of the table
/// whose one top-level `WHERE` is `(<your condition>) AND <fence>`, with no parameter
/// the macro did not bind. The guard runs the same check again, at run time, on the
/// statement rendered for the store's own table.
///
/// On a stable compiler an error in the SQL points at the whole literal, and its message
/// names the fragment and its line and column.
///
/// ```compile_fail
/// use fenced::{Outcome, Sqlite, Store, fenced_write};
///
/// #[fenced_write(
///     table = "ReportPublication",
///     sql = "UPDATE ReportPublication SET Payload = @payload",
/// )]
/// async fn save(store: &Store<Sqlite>, payload: &str) -> fenced::Result<Outcome>;
/// ```
#[proc_macro_attribute]
pub fn fenced_write(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut parsed = args::Args::default();
    let parser = syn::meta::parser(|meta| parsed.parse_one(meta));
    if let Err(error) = syn::parse::Parser::parse(parser, args) {
        return fallback(error, item);
    }
    let method = match syn::parse::<signature::Method>(item.clone()) {
        Ok(method) => method,
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("`#[fenced_write]` goes on an `async fn`: {error}"),
            );
            return fallback(error, item);
        }
    };
    expand::expand(parsed, method).into()
}

/// The errors, then the item unchanged apart from what only this macro understands.
fn fallback(error: syn::Error, item: TokenStream) -> TokenStream {
    let mut out = error.to_compile_error();
    match syn::parse::<signature::Method>(item.clone()) {
        Ok(method) => {
            let attrs = &method.attrs;
            let vis = &method.vis;
            let sig = signature::stripped(&method.sig);
            out.extend(quote::quote! {
                #(#attrs)*
                #[allow(unused_variables)]
                #vis #sig {
                    ::core::unimplemented!()
                }
            });
        }
        Err(_) => out.extend(proc_macro2::TokenStream::from(item)),
    }
    out.into()
}

/// The fenced table declared in the application's `fenced.toml`, as a
/// `fenced::Result<fenced::FencedTable>`.
///
/// The table is read and checked when the crate compiles (a name the guard refuses, or a
/// table the file does not declare, is a compile error) and built at run time by the
/// same builder calls, so the running service, its `#[fenced_write]` methods and
/// `fenced-lint` read one declaration. The file is the nearest `fenced.toml` (or
/// `fenced-lint.toml`) in the crate's directory or a parent of it; `declarations =
/// "path"` names another, relative to the crate's directory. The crate is compiled again
/// when the file changes.
///
/// ```ignore
/// let store = fenced::Store::new(backend, fenced::table!("jobs")?);
/// let store = fenced::Store::new(backend, fenced::table!("jobs", declarations = "db/fenced.toml")?);
/// ```
///
/// `crate = "fenced_guard"` names the guard's crate where `fenced` is not a dependency.
#[proc_macro]
pub fn table(input: TokenStream) -> TokenStream {
    match syn::parse::<table::TableArgs>(input).and_then(table::expand) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}
