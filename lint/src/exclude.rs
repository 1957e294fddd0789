//! The configuration's `exclude` globs: which paths the lint leaves alone.
//!
//! A small gitignore-style subset: patterns are relative to the configuration file's
//! directory; `*` matches within one path segment, `?` one character, `**` any number of
//! segments; a pattern without `/` matches a file or directory name at any depth; a
//! pattern matching a directory excludes everything under it; a trailing `/` is ignored.

use std::path::{Component, Path, PathBuf};

/// Compiled exclusion patterns with the directory they are relative to.
#[derive(Debug, Clone, Default)]
pub struct Exclude {
    base: Option<PathBuf>,
    patterns: Vec<Vec<String>>,
    /// Patterns without `/`: matched against every path segment.
    names: Vec<String>,
    /// The current directory and the normalized `base`, looked up on the first match
    /// rather than for every path.
    anchor: std::sync::OnceLock<(PathBuf, PathBuf)>,
}

/// Equal when the patterns and their base are; the looked-up directories are a cache.
impl PartialEq for Exclude {
    fn eq(&self, other: &Self) -> bool {
        (&self.base, &self.patterns, &self.names) == (&other.base, &other.patterns, &other.names)
    }
}

impl Eq for Exclude {}

impl Exclude {
    /// Compiles `patterns`, relative to `base` (the current directory when `None`).
    pub fn new(base: Option<&Path>, patterns: &[String]) -> Exclude {
        let mut out = Exclude {
            base: base.map(Path::to_path_buf),
            ..Exclude::default()
        };
        for pattern in patterns {
            let trimmed = pattern.trim().trim_end_matches('/');
            let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
            if trimmed.is_empty() {
                continue;
            }
            if trimmed.contains('/') {
                let anchored = trimmed.trim_start_matches('/');
                out.patterns
                    .push(anchored.split('/').map(str::to_owned).collect());
            } else {
                out.names.push(trimmed.to_owned());
            }
        }
        out
    }

    /// Whether there is nothing to exclude.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.names.is_empty()
    }

    /// Whether `path` (absolute, or relative to the current directory) is excluded.
    pub fn matches(&self, path: &Path) -> bool {
        if self.is_empty() {
            return false;
        }
        let (cwd, base) = self.anchor.get_or_init(|| {
            let cwd = std::env::current_dir().unwrap_or_default();
            let base = normalize(&cwd.join(self.base.as_deref().unwrap_or(Path::new("."))));
            (cwd, base)
        });
        let absolute = normalize(&cwd.join(path));
        let Ok(relative) = absolute.strip_prefix(base) else {
            return false;
        };
        let segments: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if segments
            .iter()
            .any(|s| self.names.iter().any(|n| segment_matches(n, s)))
        {
            return true;
        }
        (1..=segments.len()).any(|k| {
            self.patterns
                .iter()
                .any(|p| path_matches(p, &segments[..k]))
        })
    }
}

/// Removes `.` components and resolves `..` lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn path_matches(pattern: &[String], segments: &[String]) -> bool {
    match pattern.split_first() {
        None => segments.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=segments.len()).any(|skip| path_matches(rest, &segments[skip..]))
        }
        Some((first, rest)) => segments
            .split_first()
            .is_some_and(|(s, tail)| segment_matches(first, s) && path_matches(rest, tail)),
    }
}

fn segment_matches(pattern: &str, segment: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = segment.chars().collect();
    // Iterative wildcard matching with backtracking to the last `*`.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((star_p, star_s)) = star {
            pi = star_p + 1;
            si = star_s + 1;
            star = Some((star_p, star_s + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excluded(patterns: &[&str], path: &str) -> bool {
        let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        Exclude::new(Some(Path::new("/repo")), &patterns).matches(Path::new(path))
    }

    #[test]
    fn globs() {
        assert!(excluded(
            &["lint/tests/**"],
            "/repo/lint/tests/corpus/a.sql"
        ));
        assert!(excluded(&["lint/tests"], "/repo/lint/tests/cli.rs"));
        assert!(excluded(
            &["lint/src/rules/*.rs"],
            "/repo/lint/src/rules/fence.rs"
        ));
        assert!(!excluded(
            &["lint/src/rules/*.rs"],
            "/repo/lint/src/linter.rs"
        ));
        assert!(excluded(&["corpus"], "/repo/x/corpus/y.sql"));
        assert!(excluded(&["*.generated.sql"], "/repo/db/a.generated.sql"));
        assert!(excluded(&["**/fixtures/**"], "/repo/a/b/fixtures/c.rs"));
        assert!(excluded(
            &["./lint/tests/"],
            "/repo/./lint/../lint/tests/a.rs"
        ));
        assert!(!excluded(&["lint/tests/**"], "/elsewhere/lint/tests/a.rs"));
        assert!(!excluded(&["lint/tests/**"], "/repo/lint/testsuite.rs"));
        assert!(!excluded(&[], "/repo/a.rs"));
        assert!(segment_matches("a*b?c", "axxbyc"));
        assert!(!segment_matches("a*b?c", "axxbc"));
    }
}
