//! Feeds arbitrary bytes to the lint's whole per-file analysis, as a `.sql` file and as a
//! `.rs` file, against a configuration with a fenced table so that the parsing and rule
//! paths are reached, not only the "mentions no fenced table" shortcut. It also holds the
//! walk's path (decode once, one search for both passes: `scan_text`, `check_scanned`)
//! to the same report as `check_file`.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use fenced_lint::Linter;
use fenced_lint::config::Config;
use fenced_lint::source::decode;
use libfuzzer_sys::fuzz_target;

const CONFIG: &str = r#"
[[table]]
name = "dbo.ReportPublication"

[[table]]
name = "Jobs"
key = "Id"
"#;

fn config() -> &'static Config {
    static CONFIG_CELL: OnceLock<Config> = OnceLock::new();
    CONFIG_CELL.get_or_init(|| Config::from_toml(CONFIG).expect("the fuzz configuration parses"))
}

fuzz_target!(|data: &[u8]| {
    let linter = Linter::new(config());
    for path in ["fuzz.sql", "fuzz.rs"] {
        let path = Path::new(path);
        let tables = linter.discover_tables(path, data);
        let report = linter
            .clone()
            .with_discovered(tables.clone())
            .check_file(path, data);
        if let Ok(text) = decode(data) {
            let scan = linter.scan_text(path, &text);
            assert_eq!(scan.tables, tables);
            let walked = linter
                .clone()
                .with_discovered(scan.tables.clone())
                .check_scanned(path, &text, &scan);
            assert_eq!(walked, report);
        }
    }
});
