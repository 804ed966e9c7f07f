//! Reads engines.toml, the one table of the Rust worker's engines, and generates into OUT_DIR:
//! the engine modules' declarations (for lib.rs), the registry entries (for registry.rs) and the
//! conformance test list (for tests/conformance.rs). An engine whose library is missing still
//! builds: its registry entry says what to install.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Modules that lib.rs declares by hand: they hold engines but also code that is always built
/// (the memory oracle; the HTTP server's wire format, used by `kvbench serve`).
const BY_HAND: &[&str] = &["memory", "http", "servers"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    engine: Vec<Engine>,
    #[serde(default)]
    hosted: Vec<Hosted>,
    libs: BTreeMap<String, Lib>,
}

/// An engine of another runtime whose server Rust starts.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hosted {
    name: String,
    module: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Engine {
    name: String,
    module: String,
    lib: Option<String>,
    feature: Option<String>,
    /// Checked against the descriptor by tests/conformance.rs; nothing here depends on it.
    #[serde(default)]
    #[allow(dead_code)]
    server: bool,
    /// Its module has `shaped_server(options)`: the row's options shape its server.
    #[serde(default)]
    shaped: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Lib {
    header: String,
    link: Vec<String>,
    package: String,
    shim: Option<String>,
}

impl Engine {
    /// The module that is declared in lib.rs (`tokyocabinet` for `tokyocabinet::hash`).
    fn top(&self) -> &str {
        self.module.split("::").next().unwrap_or_default()
    }
}

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for watched in ["build.rs", "engines.toml", "csrc", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={watched}");
    }
    // Installing or removing a -dev package changes what can be built (and its version).
    if Path::new("/var/lib/dpkg/status").exists() {
        println!("cargo:rerun-if-changed=/var/lib/dpkg/status");
    }
    let table = read_table(&dir.join("engines.toml"));
    let missing: BTreeMap<&str, String> =
        table.engine.iter().filter_map(|e| why_missing(&table, e).map(|w| (e.name.as_str(), w))).collect();
    for (name, why) in &missing {
        println!("cargo:warning=engine {name} left out: {why}");
    }
    link_libs(&table, &missing);
    write(&out.join("engine_modules.rs"), &modules(&table, &dir, &missing));
    write(&out.join("registry_entries.rs"), &registry(&table, &missing));
    write(&out.join("conformance_tests.rs"), &conformance(&table));
    write(&out.join("servers_by_name.rs"), &servers_by_name(&table, &missing));
    for (name, lib) in &table.libs {
        let upper = name.to_uppercase().replace('-', "_");
        println!("cargo:rustc-env=KVB_PKG_VERSION_{upper}={}", package_version(&lib.package));
    }
    for (name, version) in crate_versions(&dir.join("Cargo.toml")) {
        let upper = name.to_uppercase().replace('-', "_");
        println!("cargo:rustc-env=KVB_CRATE_VERSION_{upper}={version}");
    }
}

/// The exact versions (`=x.y.z`) this crate's dependencies are pinned to, so an engine built on
/// a Rust crate reports the version from the one place it is written.
fn crate_versions(manifest: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let doc: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let Some(deps) = doc.get("dependencies").and_then(|d| d.as_table()) else { return Vec::new() };
    deps.iter()
        .filter_map(|(name, spec)| {
            let v = spec.as_str().or_else(|| spec.get("version")?.as_str())?;
            Some((name.clone(), v.strip_prefix('=')?.to_string()))
        })
        .collect()
}

/// The parsed table, checked: unique names (hosted ones included), known libs, existing module files, and one library
/// and feature per generated module (its cfg decides all of its engines).
fn read_table(path: &Path) -> Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let table: Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut names = BTreeSet::new();
    let mut by_module: BTreeMap<&str, (&Option<String>, &Option<String>)> = BTreeMap::new();
    for e in &table.engine {
        let at = format!("{}: engine `{}`", path.display(), e.name);
        assert!(names.insert(&e.name), "{at}: listed twice");
        if let Some(lib) = &e.lib {
            let known: Vec<&String> = table.libs.keys().collect();
            assert!(table.libs.contains_key(lib), "{at}: lib `{lib}` is not in [libs] (one of {known:?})");
        }
        let src = path.with_file_name("src");
        let file = src.join(format!("{}.rs", e.top()));
        let dir = src.join(e.top()).join("mod.rs");
        assert!(file.is_file() || dir.is_file(), "{at}: module `{}` needs the file {}", e.module, file.display());
        let prev = by_module.entry(e.top()).or_insert((&e.lib, &e.feature));
        let same = *prev == (&e.lib, &e.feature);
        assert!(
            same || BY_HAND.contains(&e.top()),
            "{at}: module `{}` has engines with different lib or feature",
            e.top()
        );
    }
    for h in &table.hosted {
        let at = format!("{}: hosted `{}`", path.display(), h.name);
        assert!(names.insert(&h.name), "{at}: listed twice (names are unique across [engine] and hosted)");
    }
    table
}

/// Why the engine cannot be built here, None when it can.
fn why_missing(table: &Table, engine: &Engine) -> Option<String> {
    if let Some(f) = &engine.feature {
        let var = format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"));
        if std::env::var_os(var).is_none() {
            return Some(format!("built without cargo feature `{f}`"));
        }
    }
    let lib = &table.libs[engine.lib.as_ref()?];
    (!Path::new(&lib.header).exists()).then(|| {
        format!("{} is not installed (no {}): apt-get install {} and rebuild", lib.package, lib.header, lib.package)
    })
}

/// Links (and compiles the shim of) every library that a buildable engine needs.
fn link_libs(table: &Table, missing: &BTreeMap<&str, String>) {
    let used: BTreeSet<&str> = table
        .engine
        .iter()
        .filter(|e| !missing.contains_key(e.name.as_str()))
        .filter_map(|e| e.lib.as_deref())
        .collect();
    for name in &used {
        let lib = &table.libs[*name];
        for l in &lib.link {
            println!("cargo:rustc-link-lib={l}");
        }
        if let Some(shim) = &lib.shim {
            cc::Build::new()
                .file(format!("csrc/{shim}"))
                .warnings(true)
                .compile(&format!("kvb_{}", name.replace('-', "_")));
        }
    }
}

/// `#[cfg(kvb_x)] #[path = "…/src/x.rs"] pub mod x;` for every module not declared by hand;
/// `kvb_x` is set when its engines can be built.
fn modules(table: &Table, dir: &Path, missing: &BTreeMap<&str, String>) -> String {
    let mut s = String::new();
    let mut seen = BTreeSet::new();
    for e in table.engine.iter().filter(|e| !BY_HAND.contains(&e.top())) {
        let top = e.top();
        if !seen.insert(top) {
            continue;
        }
        println!("cargo::rustc-check-cfg=cfg(kvb_{top})");
        if !missing.contains_key(e.name.as_str()) {
            println!("cargo:rustc-cfg=kvb_{top}");
        }
        let file = dir.join("src").join(format!("{top}.rs"));
        writeln!(s, "#[cfg(kvb_{top})]\n#[path = {:?}]\npub mod {top};", file.display().to_string()).unwrap();
    }
    s
}

/// The body of `registry::entries()`: one entry per table line, in table order.
fn registry(table: &Table, missing: &BTreeMap<&str, String>) -> String {
    let mut s = String::from("vec![\n");
    for e in &table.engine {
        match missing.get(e.name.as_str()) {
            None => writeln!(s, "    Entry::Ready(&crate::{}::DESCRIPTOR),", e.module).unwrap(),
            Some(why) => writeln!(s, "    Entry::Missing {{ name: {:?}, why: {why:?}.into() }},", e.name).unwrap(),
        }
    }
    s + "]\n"
}

/// The bodies of `registry::server_for` (`hosted` lines) and `registry::shaped_server`
/// (`shaped` lines) as two macros, so that no engine name is written in the registry's code.
fn servers_by_name(table: &Table, missing: &BTreeMap<&str, String>) -> String {
    let mut s = String::from("macro_rules! hosted_server {\n    ($name:expr) => {\n        match $name {\n");
    for h in &table.hosted {
        writeln!(s, "            {:?} => Some(crate::{}::start_server as StartServer),", h.name, h.module).unwrap();
    }
    s += "            _ => None,\n        }\n    };\n}\n";
    s += "macro_rules! shaped_server {\n    ($name:expr, $options:expr) => {\n        match $name {\n";
    for e in table.engine.iter().filter(|e| e.shaped && !missing.contains_key(e.name.as_str())) {
        writeln!(s, "            {:?} => crate::{}::shaped_server($options),", e.name, e.module).unwrap();
    }
    s + "            _ => None,\n        }\n    };\n}\n"
}

/// The `conformance!` invocation of tests/conformance.rs: one test per table line.
fn conformance(table: &Table) -> String {
    let mut s = String::from("conformance! {\n");
    for e in &table.engine {
        writeln!(s, "    {} => {:?},", e.name.replace('-', "_"), e.name).unwrap();
    }
    s + "}\n"
}

fn package_version(package: &str) -> String {
    std::process::Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", package])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
