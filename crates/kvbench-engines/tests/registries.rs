//! The engine names of every place that lists them agree: the README's engine table, engines.toml
//! (the Rust worker's engines and the `hosted` servers), the Go worker's registry (each engine
//! file's descriptor) and the Python worker's `REGISTRY`; and a name belongs to one runtime only,
//! since kvbench resolves a name by asking the runtimes in turn and the first one wins.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// engines.toml: the Rust worker's engines, and the engines of other runtimes whose server Rust
/// starts (`hosted`).
fn engines_toml() -> (Vec<String>, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("engines.toml");
    let table: toml::Value = toml::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let names = |key: &str| -> Vec<String> {
        let lines = table.get(key).and_then(|v| v.as_array()).cloned().unwrap_or_default();
        lines.iter().map(|l| l["name"].as_str().expect("every line has a name").to_string()).collect()
    };
    (names("engine"), names("hosted"))
}

/// The Go worker's engines: the `Name:` of each engine file's descriptor (a line of its own at
/// one tab; option specs are written `{Name: ...}` inline). Files that are alternatives of one
/// engine under build tags (`_nocgo`) name it twice, hence a set.
fn go_registry() -> BTreeSet<String> {
    let dir = root().join("drivers/go/internal/engines");
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if !file.ends_with(".go") || file.ends_with("_test.go") {
            continue;
        }
        for line in read(&path).lines() {
            if let Some(rest) = line.strip_prefix("\tName:") {
                names.insert(rest.trim().trim_end_matches(',').trim_matches('"').to_string());
            }
        }
    }
    assert!(!names.is_empty(), "no Go engine found in {}", dir.display());
    names
}

/// The Python worker's engines: the names of `REGISTRY`'s `("name", "module")` lines, in order.
fn python_registry() -> Vec<String> {
    let path = root().join("drivers/python/src/kvbench_driver/engines/__init__.py");
    let text = read(&path);
    let start = text.find("REGISTRY").unwrap_or_else(|| panic!("{}: no REGISTRY", path.display()));
    let block = &text[start..text[start..].find("\n]").map_or(text.len(), |e| start + e)];
    let names: Vec<String> =
        block.lines().filter_map(|l| l.trim().strip_prefix("(\"")?.split('"').next().map(str::to_string)).collect();
    assert!(!names.is_empty(), "no Python engine found in {}", path.display());
    names
}

/// The Java worker's engines: the names its engines' `new Descriptor("java-…"` lines declare.
fn java_registry() -> Vec<String> {
    let dir = root().join("drivers/java/src/main/java/kvbench/engines");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let text = read(&entry.path());
        names.extend(
            text.split("new Descriptor(\"").skip(1).filter_map(|rest| rest.split('"').next().map(str::to_string)),
        );
    }
    assert!(!names.is_empty(), "no Java engine found in {}", dir.display());
    names
}

/// The Node worker's engines: the files `drivers/node/lib/engines/index.js` requires (each file
/// is named after its engine).
fn node_registry() -> Vec<String> {
    let path = root().join("drivers/node/lib/engines/index.js");
    let text = read(&path);
    let names: Vec<String> =
        text.split("require('./").skip(1).filter_map(|rest| rest.split('\'').next().map(str::to_string)).collect();
    assert!(!names.is_empty(), "no Node engine found in {}", path.display());
    names
}

/// The README's engine table (the one whose header starts `| engine | store |`): every name in
/// backticks in its first column.
fn readme_table() -> Vec<String> {
    let text = read(&root().join("README.md"));
    let mut rows = text.lines().skip_while(|l| !l.starts_with("| engine | store |")).skip(2);
    let mut names = Vec::new();
    while let Some(row) = rows.next().filter(|l| l.starts_with('|')) {
        let first = row.split('|').nth(1).unwrap_or_default();
        names.extend(first.split('`').skip(1).step_by(2).map(str::to_string));
    }
    assert!(!names.is_empty(), "README.md: no engine table (a header `| engine | store | ...`)");
    names
}

fn duplicates(names: &[String]) -> Vec<&String> {
    let mut seen = BTreeSet::new();
    names.iter().filter(|n| !seen.insert(*n)).collect()
}

#[test]
fn the_readme_engine_table_lists_every_engine_of_every_runtime_and_no_other() {
    let (rust, _) = engines_toml();
    let runtimes: BTreeSet<String> = rust
        .into_iter()
        .chain(go_registry())
        .chain(python_registry())
        .chain(java_registry())
        .chain(node_registry())
        .collect();
    let readme = readme_table();
    assert_eq!(duplicates(&readme), Vec::<&String>::new(), "README.md's engine table names these twice");
    // `ycsb:CLASS` names a family (any YCSB binding loaded by class), not an engine a registry holds.
    let readme: BTreeSet<String> = readme.into_iter().filter(|n| !n.starts_with("ycsb:")).collect();
    let missing: Vec<_> = runtimes.difference(&readme).collect();
    let unknown: Vec<_> = readme.difference(&runtimes).collect();
    assert!(missing.is_empty(), "engines missing from README.md's engine table: {missing:?}");
    assert!(unknown.is_empty(), "README.md's engine table names engines no runtime has: {unknown:?}");
}

#[test]
fn an_engine_name_belongs_to_one_runtime() {
    let (rust, _) = engines_toml();
    let python = python_registry();
    assert_eq!(duplicates(&python), Vec::<&String>::new(), "the Python REGISTRY names these twice");
    let runtimes = [("Rust (engines.toml)", rust), ("Go", go_registry().into_iter().collect()), ("Python", python)];
    for (i, (a, names_a)) in runtimes.iter().enumerate() {
        for (b, names_b) in &runtimes[i + 1..] {
            let both: Vec<_> = names_a.iter().filter(|n| names_b.contains(n)).collect();
            assert!(both.is_empty(), "{both:?} are engines of both {a} and {b}: the first runtime asked would win");
        }
    }
}

#[test]
fn every_hosted_server_belongs_to_an_engine_of_the_go_or_python_worker() {
    let (rust, hosted) = engines_toml();
    let (go, python) = (go_registry(), python_registry());
    for name in &hosted {
        assert!(!rust.contains(name), "engines.toml: hosted `{name}` is a Rust engine: its line says `server = true`");
        assert!(
            go.contains(name) || python.contains(name),
            "engines.toml: hosted `{name}` is an engine of neither the Go nor the Python worker"
        );
    }
}
