//! The docs name what exists: every repository path in backticks in docs/*.md and the README
//! is a file or directory of the repository (a path may start below a crate, as
//! `orchestrate/row_run.rs` does), and every `Type::member` whose type is kvbench's own names a
//! member that is defined. Names from the engines' and tools' own APIs (RocksDB's C++, clap)
//! are theirs to keep.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file of the repository's sources, relative to its root (build output and venvs out).
fn files(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || ["target", "node_modules", "bin"].contains(&name.as_str()) {
            continue;
        }
        let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        match e.file_type() {
            Ok(t) if t.is_dir() => files(&e.path(), &path, out),
            Ok(_) => out.push(path),
            Err(_) => {}
        }
    }
}

/// The docs: (file name, text).
fn docs() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .map(|e| (format!("docs/{}", e.file_name().to_string_lossy()), std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    v.push(("README.md".into(), std::fs::read_to_string(root().join("README.md")).unwrap()));
    v
}

/// The words in backticks, with their line.
fn backticked(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        out.extend(line.split('`').skip(1).step_by(2).map(|w| (i + 1, w)));
    }
    out
}

/// A word that reads as a repository path: lower-case start, a `/`, a source extension or a
/// trailing `/`; run outputs and other projects' headers are not the repository's.
fn repo_path(w: &str) -> bool {
    let shaped = w.contains('/')
        && w.starts_with(|c: char| c.is_ascii_lowercase())
        && w.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    let ext = [".rs", ".sh", ".toml", ".md", ".py", ".go", ".h", ".c", ".json"].iter().any(|x| w.ends_with(x));
    let elsewhere = ["results/", ".kvbench/", "target/", "rocksdb/"].iter().any(|p| w.starts_with(p));
    shaped && (ext || w.ends_with('/')) && !elsewhere
}

#[test]
fn every_path_the_docs_name_exists() {
    let mut all = Vec::new();
    files(&root(), "", &mut all);
    let dirs: BTreeSet<String> =
        all.iter().flat_map(|f| f.match_indices('/').map(move |(i, _)| format!("{}/", &f[..i]))).collect();
    let found = |w: &str| {
        let tail = format!("/{w}");
        match w.ends_with('/') {
            true => dirs.iter().any(|d| d == w || d.ends_with(&tail)),
            false => all.iter().any(|f| f == w || f.ends_with(&tail)),
        }
    };
    let mut missing = Vec::new();
    for (doc, text) in docs() {
        for (line, w) in backticked(&text).into_iter().filter(|(_, w)| repo_path(w)) {
            if !found(w) {
                missing.push(format!("{doc}:{line}: {w}"));
            }
        }
    }
    assert!(missing.is_empty(), "paths the docs name that do not exist:\n{}", missing.join("\n"));
}

/// Names defined in the workspace's Rust sources (items, and enum variants a line each).
fn defined(all: &[String]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for f in all.iter().filter(|f| f.ends_with(".rs")) {
        let Ok(text) = std::fs::read_to_string(root().join(f)) else { continue };
        for line in text.lines().map(str::trim_start) {
            let line = line.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            for kw in ["fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod "] {
                if let Some(rest) = line.strip_prefix(kw) {
                    names.insert(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
                }
            }
            let variant: String = line.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if variant.starts_with(|c: char| c.is_ascii_uppercase()) {
                names.insert(variant);
            }
        }
    }
    names
}

#[test]
fn every_member_of_a_kvbench_type_the_docs_name_is_defined() {
    let mut all = Vec::new();
    files(&root().join("crates"), "crates", &mut all);
    let names = defined(&all);
    let types: BTreeSet<String> = all
        .iter()
        .filter(|f| f.ends_with(".rs"))
        .filter_map(|f| std::fs::read_to_string(root().join(f)).ok())
        .flat_map(|t| {
            t.lines()
                .filter_map(|l| {
                    let l = l.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
                    ["struct ", "enum ", "trait "]
                        .iter()
                        .find_map(|kw| l.strip_prefix(kw))
                        .map(|r| r.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Same-named types of the engines' own APIs that the docs quote.
    let theirs = ["Options", "WriteBatch", "DB"];
    let mut missing = Vec::new();
    for (doc, text) in docs() {
        for (line, w) in backticked(&text) {
            let w = w.trim_end_matches("()");
            let parts: Vec<&str> = w.split("::").collect();
            if parts.len() < 2
                || !parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
            {
                continue;
            }
            let ours = parts[0].starts_with("kvbench_") || types.contains(parts[0]) && !theirs.contains(&parts[0]);
            if ours && !names.contains(*parts.last().unwrap()) {
                missing.push(format!("{doc}:{line}: {w}"));
            }
        }
    }
    assert!(missing.is_empty(), "names the docs give that the code does not define:\n{}", missing.join("\n"));
}

/// The sources' text: the docs and every Rust file under crates/.
fn texts() -> Vec<(String, String)> {
    let mut all = Vec::new();
    files(&root().join("crates"), "crates", &mut all);
    let mut v = docs();
    v.extend(
        all.into_iter()
            .filter(|f| f.ends_with(".rs") && !f.ends_with("tests/docs_names.rs"))
            .filter_map(|f| std::fs::read_to_string(root().join(&f)).ok().map(|t| (f, t))),
    );
    v
}

#[test]
fn every_section_of_decisions_md_cited_by_title_exists() {
    let decisions = std::fs::read_to_string(root().join("docs/decisions.md")).unwrap();
    let headings: Vec<String> = decisions.lines().filter_map(|l| l.strip_prefix("## ")).map(String::from).collect();
    let mut missing = Vec::new();
    for (file, text) in texts() {
        // `decisions.md, "Title"` or `decisions.md "Title"`, the title possibly wrapped (and
        // continued behind `//` or `///` in code).
        for (at, _) in text.match_indices("decisions.md") {
            let rest = text[at + "decisions.md".len()..].trim_start_matches([',', ' ']);
            let Some(quoted) = rest.strip_prefix('"') else { continue };
            let Some(end) = quoted.find('"') else { continue };
            let title = quoted[..end].split_whitespace().filter(|w| !w.starts_with("//")).collect::<Vec<_>>().join(" ");
            if !headings.iter().any(|h| h.starts_with(&title)) {
                missing.push(format!("{file}: \"{title}\""));
            }
        }
    }
    assert!(missing.is_empty(), "sections of docs/decisions.md cited that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn decisions_are_titled_by_topic_not_by_issue_or_branch() {
    let decisions = std::fs::read_to_string(root().join("docs/decisions.md")).unwrap();
    let diary: Vec<&str> = decisions
        .lines()
        .filter(|l| l.starts_with("## "))
        .filter(|l| ["issue ", "issues ", "branch ", "protocol "].iter().any(|w| l.to_lowercase().contains(w)))
        .collect();
    assert!(diary.is_empty(), "headings that date the design instead of naming its topic: {diary:?}");
}
