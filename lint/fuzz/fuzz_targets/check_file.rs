//! Feeds arbitrary bytes to the lint's whole per-file analysis, as a `.sql` file and as a
//! `.rs` file, against a configuration with a fenced table so that the parsing and rule
//! paths are reached, not only the "mentions no fenced table" shortcut.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use fenced_lint::Linter;
use fenced_lint::config::Config;
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
        let linter = Linter::new(config()).with_discovered(tables);
        let _ = linter.check_file(path, data);
    }
});
