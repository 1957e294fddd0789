//! The GitHub Action (`lint/action.yml`) and its scripts (`lint/action/*.sh`), run as a
//! runner runs a composite action's step: the step's `run:` text written to a file and
//! run by `bash --noprofile --norc -eo pipefail FILE` (GitHub's `shell: bash`), with
//! exactly the environment its `env:` declares, its `${{ inputs.* }}` filled in, plus
//! what the runner sets (`RUNNER_*`, `GITHUB_PATH`, `GITHUB_ACTION_PATH`).
//!
//! The lint step runs the `fenced-lint` this test build made. The install step runs
//! with a fake `curl` and a fake `cargo` first on `PATH`, so nothing reaches the
//! network: one serves an archive that `lint/action/package.sh` packed, as the release
//! workflow does, or fails as for a missing asset; the other records its arguments.
//!
//! Fixture SQL names its table `{T}`, replaced by `FixtureLease` when the file is
//! written, so that this file holds no fenced write when the repository lints itself.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fenced-lint");
const LINT_DIR: &str = env!("CARGO_MANIFEST_DIR");

const CONFIG: &str = "[[table]]\nname = \"FixtureLease\"\nkey = \"ReportId\"\n";

/// A publish that forgot the owner and the expiry: one `unfenced-write`.
const UNFENCED_SQL: &str = "\
UPDATE dbo.{T}
SET Payload = @payload
WHERE ReportId = @reportId AND Generation = @generation;
";

/// The same publish with its fence.
const FENCED_SQL: &str = "\
UPDATE dbo.{T}
SET Payload = @payload
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1);
";

/// The lint step as `action.yml` had it before its scripts moved to `lint/action/`:
/// `set -uo pipefail` does not undo the `-e` GitHub's shell starts with, so a lint
/// that finds errors ended the step before `code=$?`, whatever `fail-on-findings` said.
const OLD_LINT_STEP: &str = r#"set -uo pipefail
# shellcheck disable=SC2086
fenced-lint --format "${FORMAT}" ${ARGS} ${PATHS}
code=$?
if [ "${code}" -eq 1 ] && [ "${FAIL}" != "true" ]; then
  exit 0
fi
exit "${code}"
"#;

/// One step of the composite action.
#[derive(Debug)]
struct Step {
    name: String,
    /// Each variable of the step's `env:`, with its value as written.
    env: Vec<(String, String)>,
    run: String,
}

/// The action's inputs with their defaults, and its steps, read from `action.yml`. The
/// file is YAML of one fixed shape (actionlint and check-jsonschema check it in
/// `.ci/run`); this reads that shape and fails on anything else.
fn action() -> (BTreeMap<String, String>, Vec<Step>) {
    let text = fs::read_to_string(Path::new(LINT_DIR).join("action.yml")).unwrap();
    let mut inputs = BTreeMap::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut section = "";
    let mut input = String::new();
    let mut in_env = false;
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let line = line.trim();
        if indent == 0 {
            section = line.split(':').next().unwrap();
            continue;
        }
        match section {
            "inputs" if indent == 2 => input = line.trim_end_matches(':').to_owned(),
            "inputs" if indent == 4 => {
                if let Some(default) = line.strip_prefix("default: ") {
                    inputs.insert(input.clone(), unquote(default));
                }
            }
            "runs" if indent == 4 => {
                if let Some(name) = line.strip_prefix("- name: ") {
                    steps.push(Step {
                        name: name.to_owned(),
                        env: Vec::new(),
                        run: String::new(),
                    });
                    in_env = false;
                }
            }
            "runs" if indent == 6 => {
                let step = steps.last_mut().expect("a key before the first step");
                in_env = line == "env:";
                if let Some(run) = line.strip_prefix("run: ") {
                    if run == "|" {
                        while let Some(next) =
                            lines.next_if(|l| l.starts_with("        ") || l.is_empty())
                        {
                            step.run.push_str(next.get(8..).unwrap_or(""));
                            step.run.push('\n');
                        }
                    } else {
                        step.run = format!("{run}\n");
                    }
                }
            }
            "runs" if indent == 8 && in_env => {
                let step = steps.last_mut().unwrap();
                let (key, value) = line.split_once(": ").expect("KEY: value");
                step.env.push((key.to_owned(), value.to_owned()));
            }
            _ => {}
        }
    }
    assert_eq!(
        steps.len(),
        2,
        "action.yml has the install and the lint step: {steps:?}"
    );
    (inputs, steps)
}

fn unquote(value: &str) -> String {
    value.trim_matches('"').to_owned()
}

/// A step's `env:` value with its expression evaluated as the runner does.
fn evaluate(value: &str, inputs: &BTreeMap<String, String>) -> String {
    let Some(expression) = value
        .strip_prefix("${{ ")
        .and_then(|v| v.strip_suffix(" }}"))
    else {
        return value.to_owned();
    };
    if let Some(name) = expression.strip_prefix("inputs.") {
        return inputs
            .get(name)
            .unwrap_or_else(|| panic!("no input `{name}`"))
            .clone();
    }
    // `github.action_repository` is empty here, as in some composite-action runs.
    if let Some(fallback) = expression.strip_prefix("github.action_repository || ") {
        return fallback.trim_matches('\'').to_owned();
    }
    panic!("action.yml uses an expression this test does not evaluate: {value}");
}

/// A runner of its own: a workspace to lint, `RUNNER_TEMP`, `GITHUB_PATH` and a
/// directory of fake commands, all in one temporary directory.
struct Runner {
    dir: tempfile::TempDir,
    os: &'static str,
    arch: &'static str,
    /// Directories before `/usr/bin:/bin` on the step's `PATH`.
    path: Vec<PathBuf>,
}

impl Runner {
    fn new() -> Runner {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["workspace", "temp", "fakes"] {
            fs::create_dir(dir.path().join(sub)).unwrap();
        }
        fs::write(dir.path().join("github_path"), "").unwrap();
        let fakes = dir.path().join("fakes");
        Runner {
            dir,
            os: "Linux",
            arch: "X64",
            path: vec![fakes],
        }
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    fn temp(&self) -> PathBuf {
        self.dir.path().join("temp")
    }

    fn fakes(&self) -> PathBuf {
        self.dir.path().join("fakes")
    }

    fn github_path(&self) -> String {
        fs::read_to_string(self.dir.path().join("github_path")).unwrap()
    }

    /// Writes `{T}`-templated SQL and the configuration into the workspace.
    fn sql(&self, name: &str, sql: &str) {
        let ws = self.workspace();
        fs::write(ws.join("fenced-lint.toml"), CONFIG).unwrap();
        fs::write(ws.join(name), sql.replace("{T}", "FixtureLease")).unwrap();
    }

    /// A fake command: a shell script first on the step's `PATH`.
    fn fake(&self, name: &str, script: &str) {
        let path = self.fakes().join(name);
        fs::write(&path, format!("#!/bin/sh\n{script}")).unwrap();
        make_executable(&path);
    }

    /// Runs `run` as the runner runs a `shell: bash` step with `env`.
    fn bash(&self, run: &str, env: &[(String, String)]) -> Output {
        let script = self.dir.path().join("step.sh");
        fs::write(&script, run).unwrap();
        let mut path: Vec<String> = self.path.iter().map(|p| p.display().to_string()).collect();
        path.push("/usr/bin:/bin".to_owned());
        Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script)
            .current_dir(self.workspace())
            .env_clear()
            .env("PATH", path.join(":"))
            .env("HOME", self.dir.path())
            .env("RUNNER_OS", self.os)
            .env("RUNNER_ARCH", self.arch)
            .env("RUNNER_TEMP", self.temp())
            .env("GITHUB_PATH", self.dir.path().join("github_path"))
            .env("GITHUB_ACTION_PATH", LINT_DIR)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap()
    }

    /// Runs the action's step `name` with `with` over the inputs' defaults.
    fn step(&self, name: &str, with: &[(&str, &str)]) -> Output {
        let (mut inputs, steps) = action();
        for (key, value) in with {
            assert!(inputs.contains_key(*key), "no input `{key}`");
            inputs.insert((*key).to_owned(), (*value).to_owned());
        }
        let step = steps
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no step `{name}` in {steps:?}"));
        let env: Vec<(String, String)> = step
            .env
            .iter()
            .map(|(k, v)| (k.clone(), evaluate(v, &inputs)))
            .collect();
        self.bash(&step.run, &env)
    }

    /// The lint step, with the `fenced-lint` of this test build on `PATH`.
    fn lint(&mut self, with: &[(&str, &str)]) -> Output {
        self.path
            .push(Path::new(BIN).parent().unwrap().to_path_buf());
        self.step("Run fenced-lint", with)
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("the step exited")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    )
}

// ---- the lint step ----

#[test]
fn findings_do_not_fail_the_step_when_fail_on_findings_is_false() {
    let mut runner = Runner::new();
    runner.sql("publish.sql", UNFENCED_SQL);
    let out = runner.lint(&[("fail-on-findings", "false")]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    // The findings are still reported, as annotations.
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("::error file=publish.sql,line=1,"),
        "{}",
        show(&out)
    );
    assert!(stdout.contains("FL001 unfenced-write"), "{}", show(&out));
}

#[test]
fn findings_fail_the_step_by_default() {
    let mut runner = Runner::new();
    runner.sql("publish.sql", UNFENCED_SQL);
    let out = runner.lint(&[]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    assert!(
        text(&out.stdout).contains("FL001 unfenced-write"),
        "{}",
        show(&out)
    );

    let out = runner.lint(&[("fail-on-findings", "true")]);
    assert_eq!(code(&out), 1, "{}", show(&out));
}

#[test]
fn a_clean_tree_passes() {
    for fail in ["true", "false"] {
        let mut runner = Runner::new();
        runner.sql("publish.sql", FENCED_SQL);
        let out = runner.lint(&[("fail-on-findings", fail)]);
        assert_eq!(code(&out), 0, "{}", show(&out));
        assert_eq!(text(&out.stdout), "", "{}", show(&out));
    }
}

#[test]
fn a_usage_error_fails_the_step_whatever_fail_on_findings_says() {
    let mut runner = Runner::new();
    runner.sql("publish.sql", UNFENCED_SQL);
    let out = runner.lint(&[("fail-on-findings", "false"), ("paths", "missing.sql")]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(
        text(&out.stderr).contains("missing.sql: no such file"),
        "{}",
        show(&out)
    );

    let out = runner.lint(&[("fail-on-findings", "yes")]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(
        text(&out.stderr).contains("it takes true or false"),
        "{}",
        show(&out)
    );
}

#[test]
fn inputs_reach_the_lint() {
    let mut runner = Runner::new();
    runner.sql("publish.sql", UNFENCED_SQL);
    runner.sql("other.sql", FENCED_SQL);
    // Only the named path is linted, in the named format, with the named config.
    let ws = runner.workspace();
    fs::rename(ws.join("fenced-lint.toml"), ws.join("lint.toml")).unwrap();
    let out = runner.lint(&[
        ("paths", "other.sql publish.sql"),
        ("args", "--config lint.toml"),
        ("format", "json"),
    ]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(r#""rule": "unfenced-write""#),
        "{}",
        show(&out)
    );
    assert!(
        stdout.contains(r#""path": "publish.sql""#),
        "{}",
        show(&out)
    );
    assert!(stdout.contains(r#""files_scanned": 2"#), "{}", show(&out));
}

/// Negative control: the step as it was, under the same shell and with the same
/// findings, fails with `fail-on-findings: false`.
#[test]
fn the_old_inline_step_failed_with_fail_on_findings_false() {
    let mut runner = Runner::new();
    runner.sql("publish.sql", UNFENCED_SQL);
    runner
        .path
        .push(Path::new(BIN).parent().unwrap().to_path_buf());
    let env = [
        ("FORMAT", "github"),
        ("ARGS", ""),
        ("PATHS", "."),
        ("FAIL", "false"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let out = runner.bash(OLD_LINT_STEP, &env);
    assert_eq!(code(&out), 1, "{}", show(&out));
    // Without `-e` the same script does what it meant to: the harness is what differs.
    let out = runner.bash(&format!("set +e\n{OLD_LINT_STEP}"), &env);
    assert_eq!(code(&out), 0, "{}", show(&out));
}

// ---- the install step ----

/// A fake `curl` that logs its arguments and fails as `--fail` does on a 404.
fn curl_not_found(runner: &Runner) -> PathBuf {
    let log = runner.dir.path().join("curl.log");
    runner.fake(
        "curl",
        &format!(
            "printf '%s\\n' \"$@\" >> '{}'\necho 'curl: (22) The requested URL returned error: 404' >&2\nexit 22\n",
            log.display()
        ),
    );
    log
}

/// A fake `cargo` that logs its arguments and installs a stand-in `fenced-lint` where
/// `cargo install --root ROOT` would.
fn cargo_recording(runner: &Runner) -> PathBuf {
    let log = runner.dir.path().join("cargo.log");
    runner.fake(
        "cargo",
        &format!(
            r#"printf '%s\n' "$@" > '{log}'
root=""
while [ "$#" -gt 0 ]; do
    if [ "$1" = --root ]; then root="$2"; fi
    shift
done
mkdir -p "$root/bin"
printf '#!/bin/sh\necho "fenced-lint (built by cargo)"\n' > "$root/bin/fenced-lint"
chmod 755 "$root/bin/fenced-lint"
"#,
            log = log.display()
        ),
    );
    log
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn without_a_release_asset_the_tag_is_built_with_cargo_install_git() {
    let runner = Runner::new();
    let curl = curl_not_found(&runner);
    let cargo = cargo_recording(&runner);
    let out = runner.step("Install fenced-lint", &[("version", "0.1.0")]);
    assert_eq!(code(&out), 0, "{}", show(&out));

    let url = "https://github.com/fenced-rs/fenced/releases/download/v0.1.0/\
               fenced-lint-0.1.0-x86_64-unknown-linux-musl.tar.gz";
    assert_eq!(
        lines(&curl).last().map(String::as_str),
        Some(url),
        "{}",
        show(&out)
    );
    let root = runner.temp().join("fenced-lint-0.1.0");
    assert_eq!(
        lines(&cargo),
        [
            "install",
            "fenced-lint",
            "--git",
            "https://github.com/fenced-rs/fenced",
            "--tag",
            "v0.1.0",
            "--locked",
            "--root",
            &root.display().to_string(),
        ],
        "{}",
        show(&out)
    );
    // The step ran what it installed, and put it on the job's PATH.
    assert!(
        text(&out.stdout).contains("fenced-lint (built by cargo)"),
        "{}",
        show(&out)
    );
    assert_eq!(
        runner.github_path(),
        format!("{}\n", root.join("bin").display())
    );
}

#[test]
fn a_runner_without_a_release_target_builds_with_cargo() {
    let mut runner = Runner::new();
    runner.arch = "ARM";
    let curl = curl_not_found(&runner);
    let cargo = cargo_recording(&runner);
    let out = runner.step("Install fenced-lint", &[("version", "v0.1.0")]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert!(
        lines(&curl).is_empty(),
        "nothing to download for Linux ARM: {}",
        show(&out)
    );
    assert_eq!(
        lines(&cargo)[..6],
        [
            "install",
            "fenced-lint",
            "--git",
            "https://github.com/fenced-rs/fenced",
            "--tag",
            "v0.1.0"
        ]
    );
}

#[test]
fn without_an_asset_or_cargo_the_step_says_what_to_do() {
    let runner = Runner::new();
    curl_not_found(&runner);
    // No fake cargo, and /usr/bin:/bin has none: a runner without Rust.
    assert!(!Path::new("/usr/bin/cargo").exists() && !Path::new("/bin/cargo").exists());
    let out = runner.step("Install fenced-lint", &[]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    assert!(
        text(&out.stderr).contains("install Rust first"),
        "{}",
        show(&out)
    );
    assert_eq!(runner.github_path(), "");
}

#[test]
fn a_version_that_is_not_a_release_is_refused() {
    let runner = Runner::new();
    let curl = curl_not_found(&runner);
    let out = runner.step("Install fenced-lint", &[("version", "main; rm -rf /")]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(
        text(&out.stderr).contains("is not a release"),
        "{}",
        show(&out)
    );
    assert!(lines(&curl).is_empty());
}

/// A fake `curl` that serves `archive` for `url` and fails for any other.
fn curl_serving(runner: &Runner, url: &str, archive: &Path) {
    runner.fake(
        "curl",
        &format!(
            r#"out=""
for arg in "$@"; do
    if [ "$prev" = --output ]; then out="$arg"; fi
    prev="$arg"
done
if [ "$arg" != '{url}' ]; then echo "curl: (22) 404 for $arg" >&2; exit 22; fi
cp '{archive}' "$out"
"#,
            archive = archive.display()
        ),
    );
}

/// Packs this build's `fenced-lint` with `lint/action/package.sh`, as the release
/// workflow does, and returns the archive.
fn package(runner: &Runner, version: &str, target: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(Path::new(LINT_DIR).join("action/package.sh"))
        .args([version, target, BIN])
        .arg(runner.dir.path().join("dist"))
        .output()
        .unwrap();
    assert!(out.status.success(), "package.sh: {}", show(&out));
    PathBuf::from(text(&out.stdout).trim())
}

#[test]
fn a_release_asset_is_downloaded_unpacked_and_put_on_the_path() {
    let mut runner = Runner::new();
    let target = "x86_64-unknown-linux-musl";
    let archive = package(&runner, "0.1.0", target);
    assert_eq!(
        archive.file_name().unwrap(),
        "fenced-lint-0.1.0-x86_64-unknown-linux-musl.tar.gz"
    );
    let url = format!(
        "https://github.com/fenced-rs/fenced/releases/download/v0.1.0/fenced-lint-0.1.0-{target}.tar.gz"
    );
    curl_serving(&runner, &url, &archive);
    runner.fake(
        "cargo",
        "echo 'cargo must not run when the asset exists' >&2\nexit 99\n",
    );

    let out = runner.step("Install fenced-lint", &[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let bin_dir = runner.temp().join("fenced-lint-0.1.0/bin");
    assert!(
        text(&out.stdout).contains(&format!("fenced-lint {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        show(&out)
    );
    assert_eq!(runner.github_path(), format!("{}\n", bin_dir.display()));
    // Only the executable is unpacked there.
    let names: Vec<_> = fs::read_dir(&bin_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["fenced-lint"]);

    // The next step finds it through GITHUB_PATH, as the runner adds it to PATH.
    runner.sql("publish.sql", UNFENCED_SQL);
    runner.path.push(bin_dir);
    let out = runner.step("Run fenced-lint", &[("fail-on-findings", "false")]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert!(
        text(&out.stdout).contains("FL001 unfenced-write"),
        "{}",
        show(&out)
    );
}

/// Windows assets are zip archives holding `fenced-lint.exe`. Needs `zip` and `unzip`;
/// without them this passes with a note, unless `CI` is set.
#[test]
fn a_windows_asset_is_a_zip_with_the_exe() {
    let have = |tool: &str| {
        Command::new(tool)
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !(have("zip") && have("unzip")) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but zip or unzip is missing"
        );
        eprintln!("note: zip or unzip is missing; the Windows asset was not checked");
        return;
    }
    let mut runner = Runner::new();
    runner.os = "Windows";
    let target = "x86_64-pc-windows-msvc";
    let archive = package(&runner, "0.1.0", target);
    assert_eq!(
        archive.file_name().unwrap(),
        "fenced-lint-0.1.0-x86_64-pc-windows-msvc.zip"
    );
    let url = format!(
        "https://github.com/fenced-rs/fenced/releases/download/v0.1.0/fenced-lint-0.1.0-{target}.zip"
    );
    curl_serving(&runner, &url, &archive);
    runner.fake("cargo", "exit 99\n");

    let out = runner.step("Install fenced-lint", &[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let exe = runner.temp().join("fenced-lint-0.1.0/bin/fenced-lint.exe");
    assert!(exe.is_file(), "{}", show(&out));
}

// ---- the action and the release workflow agree ----

/// The targets `install.sh` maps runners to, in the order it lists them.
fn install_targets() -> Vec<String> {
    let script = fs::read_to_string(Path::new(LINT_DIR).join("action/install.sh")).unwrap();
    script
        .lines()
        .filter_map(|line| line.split("target=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|target| !target.starts_with('"') && !target.starts_with('$'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_release_workflow_builds_every_target_the_action_downloads() {
    let workflow =
        fs::read_to_string(Path::new(LINT_DIR).join("../.github/workflows/release.yml")).unwrap();
    let built: Vec<String> = workflow
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- target: "))
        .map(str::to_owned)
        .collect();
    let downloaded = install_targets();
    assert_eq!(downloaded.len(), 5, "{downloaded:?}");
    assert_eq!(built, downloaded);
    // The tag the workflow runs on is the tag the action downloads from.
    assert!(workflow.contains(r#"tags: ["v[0-9]+.[0-9]+.[0-9]+*"]"#));
    let script = fs::read_to_string(Path::new(LINT_DIR).join("action/install.sh")).unwrap();
    assert!(script.contains(r#"tag="v${release}""#));
}

#[test]
fn the_action_runs_this_release_by_default() {
    let (inputs, _) = action();
    assert_eq!(
        inputs["version"],
        env!("CARGO_PKG_VERSION"),
        "bump action.yml's default version with the crates'"
    );
}
