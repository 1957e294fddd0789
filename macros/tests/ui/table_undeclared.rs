// `fenced::table!` names a table the declaration does not have, or gives no name.
fn main() {
    let _ = fenced::table!("Invoices");
    let _ = fenced::table!(Invoices);
    let _ = fenced::table!("ReportPublication", declarations = "nowhere/fenced.toml");
}
