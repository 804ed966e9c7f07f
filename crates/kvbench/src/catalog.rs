//! Which engines exist and where they run: the Rust registry (this binary is their worker),
//! the Python worker's engines (names starting with `py-`) and the external workers of
//! [`EXTERNAL`]: Go's (`go-`), Java's (`java-`) and Node's (`node-`).

use crate::list_cache;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kvbench_engines::{entries, Entry};
use kvbench_model::engine::{describe_kind, EngineDescriptor, OptionKind, Runtime};
use kvbench_model::options::OptionDecl;
use serde::{Deserialize, Serialize};

/// One engine as `kvbench list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineInfo {
    pub name: String,
    pub runtime: Runtime,
    pub description: String,
    pub version: String,
    pub capabilities: Vec<String>,
    pub options: Vec<OptionInfo>,
    pub available: bool,
    #[serde(default)]
    pub why: String,
    #[serde(default)]
    pub server: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OptionInfo {
    pub name: String,
    pub kind: String,
    pub default: String,
    pub doc: String,
    /// An enum's values (a worker's `--list` declares them; kvbench checks options with them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

fn rust_info(descriptor: &EngineDescriptor) -> EngineInfo {
    let avail = (descriptor.available)();
    EngineInfo {
        name: descriptor.name.into(),
        runtime: Runtime::Rust,
        description: descriptor.description.into(),
        version: (descriptor.version)(),
        capabilities: descriptor.capabilities.names().iter().map(|s| s.to_string()).collect(),
        options: descriptor
            .options
            .iter()
            .map(|o| OptionInfo {
                name: o.name.into(),
                kind: describe_kind(o.kind),
                default: o.default.into(),
                doc: o.doc.into(),
                choices: match o.kind {
                    OptionKind::Enum(c) => c.iter().map(|s| s.to_string()).collect(),
                    _ => Vec::new(),
                },
            })
            .collect(),
        available: avail.is_ok(),
        why: avail.err().unwrap_or_default(),
        server: descriptor.start_server.is_some(),
    }
}

/// Where the workers are (drivers/): $KVBENCH_HOME; else an installed copy's
/// `PREFIX/lib/kvbench` beside `PREFIX/bin/kvbench` (`make install`); else the checkout, the
/// first ancestor of the binary or of the current directory that holds `drivers/`.
pub fn home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("KVBENCH_HOME") {
        return Some(PathBuf::from(h));
    }
    let mut starts = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let installed = exe.parent().and_then(Path::parent).map(|p| p.join("lib/kvbench"));
        if let Some(h) = installed.filter(|h| h.join("drivers").is_dir()) {
            return Some(h);
        }
        starts.push(exe);
    }
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    for s in starts {
        for dir in s.ancestors() {
            if dir.join("drivers").is_dir() && dir.join("Cargo.toml").is_file() {
                return Some(dir.to_path_buf());
            }
        }
    }
    None
}

/// A scenario path as given, or, when a relative one is not here, the same path under
/// kvbench's home (`scenarios/ycsb-a.toml` from any directory with an installed copy).
pub fn scenario_path(path: &Path) -> PathBuf {
    if path.exists() || path.is_absolute() {
        return path.to_path_buf();
    }
    match home().map(|h| h.join(path)).filter(|h| h.is_file()) {
        Some(h) => {
            crate::note!("scenario: {} (from kvbench's home)", h.display());
            h
        }
        None => path.to_path_buf(),
    }
}

/// What the model's flag translation asks of the engines (`kvbench_model::flags::Catalog`),
/// answered from every runtime's registry.
pub struct Engines;

impl kvbench_model::flags::Catalog for Engines {
    fn default_engines(&self) -> Vec<String> {
        default_engines()
    }

    fn all_engines(&self) -> Vec<String> {
        all_engines()
    }

    fn check_options(&self, engine: &str, options: &BTreeMap<String, serde_json::Value>) -> Result<(), String> {
        let Ok(r) = resolve(engine) else { return Ok(()) };
        resolve_options(engine, &r, options).map(|_| ()).map_err(|e| e.message)
    }

    fn is_server(&self, engine: &str) -> bool {
        is_server(engine)
    }
}

/// The interpreter of the Python worker: $KVBENCH_PYTHON or drivers/python/.venv/bin/python.
pub fn python() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("KVBENCH_PYTHON") {
        return Ok(PathBuf::from(p));
    }
    let home = home().ok_or("cannot find the kvbench checkout (set KVBENCH_HOME)")?;
    let py = home.join("drivers/python/.venv/bin/python");
    if py.exists() {
        Ok(py)
    } else {
        Err(format!(
            "Python worker not set up ({} missing): run `make python` or drivers/python/setup.sh",
            py.display()
        ))
    }
}

/// `python -m kvbench_driver`; an installed copy's worker core (`HOME/lib/libkvbench_ffi.so`,
/// which the installed package cannot find beside its source) is named in KVBENCH_FFI_LIB.
pub fn python_command(python: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.args(["-m", "kvbench_driver"]);
    let core = home().map(|h| h.join("lib/libkvbench_ffi.so")).filter(|c| c.is_file());
    if let (Some(core), None) = (core, std::env::var_os("KVBENCH_FFI_LIB")) {
        cmd.env("KVBENCH_FFI_LIB", core);
    }
    cmd
}

/// Ask the Python worker for its engines.
pub fn python_engines() -> Result<Vec<EngineInfo>, String> {
    let py = python()?;
    let mut cmd = python_command(&py);
    cmd.arg("--list");
    // What the answer depends on: the interpreter, the installed packages, the driver's
    // sources and the worker core it loads.
    let venv = py.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let site =
        std::fs::read_dir(venv.join("lib")).into_iter().flatten().flatten().map(|e| e.path().join("site-packages"));
    let home = home().unwrap_or_default();
    let deps = list_cache::Deps {
        files: vec![py.clone(), home.join("target/release/libkvbench_ffi.so"), home.join("lib/libkvbench_ffi.so")],
        dirs: site.collect(),
        trees: vec![home.join("drivers/python/src")],
    };
    worker_engines(cmd, &deps, &format!("{} -m kvbench_driver --list", py.display()), Runtime::Python)
}

/// A worker in another language that is one program (the Python worker, an interpreter and a
/// module, is the one that is not): where it is, how it is built, which engines it runs.
pub struct External {
    pub runtime: Runtime,
    /// The language as messages name it.
    pub label: &'static str,
    /// The worker is `<home>/drivers/DIR/bin/kvbench-DIR-worker`, built by `make DIR`.
    pub dir: &'static str,
    /// A variable naming a worker that runs every engine of this runtime instead.
    pub env: &'static str,
    /// Every engine of this runtime is named `PREFIX...` (a name alone says which worker to
    /// wait for when that worker is down).
    pub prefix: &'static str,
    /// Each engine runs in its own build of the worker, `bin/engines/ENGINE` (Go's: one
    /// engine's dependencies per binary, docs/decisions.md).
    pub per_engine: bool,
    /// What the worker's `--list` answer depends on beside the worker itself, relative to
    /// the home: files, and directories whose every file counts.
    pub list_deps: &'static [&'static str],
}

/// The external runtimes, in the order `kvbench list` and `--engines all` show them.
pub const EXTERNAL: &[External] = &[
    External {
        runtime: Runtime::Go,
        label: "Go",
        dir: "go",
        env: "KVBENCH_GO_WORKER",
        prefix: "go-",
        per_engine: true,
        list_deps: &[],
    },
    External {
        runtime: Runtime::Java,
        label: "Java",
        dir: "java",
        env: "KVBENCH_JAVA_WORKER",
        prefix: "java-",
        per_engine: false,
        list_deps: &[
            "drivers/java/target/kvbench-java-worker.jar",
            "drivers/java/target/lib",
            "target/release/libkvbench_ffi.so",
            "lib/libkvbench_ffi.so",
        ],
    },
    External {
        runtime: Runtime::Node,
        label: "Node",
        dir: "node",
        env: "KVBENCH_NODE_WORKER",
        prefix: "node-",
        per_engine: false,
        // The worker's sources, its installed packages (build.sh's stamp changes with every
        // npm ci) and the worker core's Node-API addon it loads (a checkout's or an install's).
        list_deps: &[
            "drivers/node/lib",
            "drivers/node/package-lock.json",
            "drivers/node/node_modules/.kvbench-install",
            "target/release/libkvbench_node.so",
            "lib/libkvbench_node.so",
        ],
    },
];

impl External {
    /// The worker: `$ENV`, else `<home>/drivers/DIR/bin/kvbench-DIR-worker`.
    pub fn worker(&self) -> Result<PathBuf, String> {
        match std::env::var_os(self.env) {
            Some(p) => Ok(PathBuf::from(p)),
            None => self.worker_in(home()),
        }
    }

    fn worker_in(&self, home: Option<PathBuf>) -> Result<PathBuf, String> {
        let home = home.ok_or("cannot find the kvbench checkout (set KVBENCH_HOME)")?;
        let bin = home.join(format!("drivers/{0}/bin/kvbench-{0}-worker", self.dir));
        if bin.exists() {
            Ok(bin)
        } else {
            Err(format!("{} worker not built ({} missing): run `make {}`", self.label, bin.display(), self.dir))
        }
    }

    /// The worker that runs engine `name`: `$ENV`, else (per-engine runtimes) the build
    /// linked with that engine alone, `bin/engines/NAME`, as a program using the library
    /// would be; else the worker.
    pub fn engine_worker(&self, name: &str) -> Result<PathBuf, String> {
        let full = self.worker()?;
        if !self.per_engine || std::env::var_os(self.env).is_some() {
            return Ok(full);
        }
        let bin = full.with_file_name("engines").join(name);
        if bin.exists() {
            Ok(bin)
        } else {
            Err(format!(
                "{name}'s {} worker not built ({} missing): run `make {}`",
                self.label,
                bin.display(),
                self.dir
            ))
        }
    }

    /// Ask the worker for its engines (from the list cache while nothing it reads changed).
    pub fn engines(&self) -> Result<Vec<EngineInfo>, String> {
        let bin = self.worker()?;
        let mut cmd = worker_command(&bin, None);
        cmd.arg("--list");
        let home = home().unwrap_or_default();
        let deps: Vec<PathBuf> =
            std::iter::once(bin.clone()).chain(self.list_deps.iter().map(|d| home.join(d))).collect();
        let deps = list_cache::Deps { files: deps.clone(), dirs: vec![], trees: deps };
        worker_engines(cmd, &deps, &format!("{} --list", bin.display()), self.runtime)
    }

    /// Its engines, asked once per process (starting a worker costs ~0.1–0.5 s).
    pub fn cached(&'static self) -> &'static Result<Vec<EngineInfo>, String> {
        type List = std::sync::OnceLock<Result<Vec<EngineInfo>, String>>;
        static LISTS: [List; EXTERNAL.len()] = [const { List::new() }; EXTERNAL.len()];
        let i = EXTERNAL.iter().position(|e| std::ptr::eq(e, self)).expect("an entry of EXTERNAL");
        LISTS[i].get_or_init(|| self.engines())
    }
}

/// `run --classpath CP`: the entries (`:`-separated; `DIR/*` is every jar in DIR) checked and
/// made absolute, for every Java worker the run starts (`$KVBENCH_YCSB_CLASSPATH`).
pub fn checked_classpath(cp: &str) -> Result<String, String> {
    let mut out = Vec::new();
    for entry in cp.split(':').filter(|e| !e.is_empty()) {
        let (path, all) = match entry.strip_suffix('*') {
            Some(dir) if dir.is_empty() || dir.ends_with('/') => {
                (Path::new(if dir.is_empty() { "." } else { dir }), true)
            }
            _ => (Path::new(entry), false),
        };
        let ok = if all { path.is_dir() } else { path.exists() };
        if !ok {
            let what = if all { "no directory" } else { "not found" };
            return Err(format!("--classpath entry `{entry}`: {} is {what}", path.display()));
        }
        let abs = std::path::absolute(path).map_err(|e| format!("--classpath entry `{entry}`: {e}"))?;
        let abs = abs.display().to_string();
        out.push(if all { format!("{}/*", abs.trim_end_matches('/')) } else { abs });
    }
    if out.is_empty() {
        return Err("--classpath: no entry (JAR:DIR/*:..., `:`-separated)".into());
    }
    Ok(out.join(":"))
}

/// An external worker's command; an installed copy's worker core (`HOME/lib/libkvbench_ffi.so`)
/// is named in KVBENCH_FFI_LIB for the workers that load it at run time (Java's, Node's), and
/// `--classpath` (checked) in KVBENCH_YCSB_CLASSPATH for the Java worker's YCSB bindings.
pub fn worker_command(worker: &Path, ycsb_classpath: Option<&str>) -> Command {
    let mut cmd = Command::new(worker);
    if let Some(cp) = ycsb_classpath {
        cmd.env(YCSB_CLASSPATH_ENV, cp);
    }
    let core = home().map(|h| h.join("lib/libkvbench_ffi.so")).filter(|c| c.is_file());
    if let (Some(core), None) = (core, std::env::var_os("KVBENCH_FFI_LIB")) {
        cmd.env("KVBENCH_FFI_LIB", core);
    }
    cmd
}

/// A worker's `--list` JSON array (docs/protocol.md), from the cache while `deps` are unchanged.
fn worker_engines(
    mut cmd: Command,
    deps: &list_cache::Deps,
    what: &str,
    runtime: Runtime,
) -> Result<Vec<EngineInfo>, String> {
    let stdout = list_cache::output(&mut cmd, deps, |cmd| {
        let out = cmd.output().map_err(|e| format!("running {what}: {e}"))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("").to_string();
            return Err(format!("{what} failed ({}): {why}", died_how(out.status)));
        }
        Ok(out.stdout)
    })?;
    let mut list: Vec<serde_json::Value> =
        serde_json::from_slice(&stdout).map_err(|e| format!("{what} printed invalid JSON: {e}"))?;
    Ok(list
        .drain(..)
        .filter_map(|v| {
            let opts = v.get("options").and_then(|o| o.as_array()).cloned().unwrap_or_default();
            Some(EngineInfo {
                name: v.get("name")?.as_str()?.to_string(),
                runtime,
                description: v.get("description").and_then(|s| s.as_str()).unwrap_or("").into(),
                version: v.get("version").and_then(|s| s.as_str()).unwrap_or("").into(),
                capabilities: v
                    .get("capabilities")
                    .and_then(|c| c.as_array())
                    .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
                    .unwrap_or_default(),
                options: opts
                    .iter()
                    .map(|o| {
                        let f = |k: &str| {
                            o.get(k)
                                .map(|s| s.as_str().map(String::from).unwrap_or_else(|| s.to_string()))
                                .unwrap_or_default()
                        };
                        let choices = o.get("choices").and_then(|c| c.as_array());
                        let choices = choices.map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect());
                        OptionInfo {
                            name: f("name"),
                            kind: f("kind"),
                            default: f("default"),
                            doc: f("doc"),
                            choices: choices.unwrap_or_default(),
                        }
                    })
                    .collect(),
                available: v.get("available").and_then(|b| b.as_bool()).unwrap_or(false),
                why: v.get("why").and_then(|s| s.as_str()).unwrap_or("").into(),
                server: false,
            })
        })
        .collect())
}

/// Every engine with its state; other runtimes' engines only when their worker answers (else
/// one line saying why).
pub fn all() -> Vec<EngineInfo> {
    let mut v: Vec<EngineInfo> = entries()
        .iter()
        .map(|e| match e {
            Entry::Ready(d) => rust_info(d),
            Entry::Missing { name, why } => EngineInfo {
                name: name.to_string(),
                runtime: Runtime::Rust,
                description: String::new(),
                version: String::new(),
                capabilities: vec![],
                options: vec![],
                available: false,
                why: why.clone(),
                server: false,
            },
        })
        .collect();
    match python_engines() {
        Ok(py) => v.extend(py),
        Err(why) => v.push(EngineInfo {
            name: "py-*".into(),
            runtime: Runtime::Python,
            description: "Python worker engines".into(),
            version: String::new(),
            capabilities: vec![],
            options: vec![],
            available: false,
            why,
            server: false,
        }),
    }
    for x in EXTERNAL {
        match x.cached() {
            Ok(list) => v.extend(list.iter().cloned()),
            Err(why) => v.push(EngineInfo {
                name: format!("{}*", x.prefix),
                runtime: x.runtime,
                description: format!("{} worker engines", x.label),
                version: String::new(),
                capabilities: vec![],
                options: vec![],
                available: false,
                why: why.clone(),
                server: false,
            }),
        }
    }
    v
}

/// How to run one engine.
pub enum Resolved {
    Rust(&'static EngineDescriptor),
    Python {
        python: PathBuf,
        info: EngineInfo,
    },
    /// An [`EXTERNAL`] runtime's worker (`info.runtime` says which).
    Worker {
        worker: PathBuf,
        info: EngineInfo,
    },
}

impl Resolved {
    /// The engine's option specs, from the registry or from its worker's `--list`.
    pub fn option_decls(&self) -> Result<Vec<OptionDecl>, String> {
        match self {
            Resolved::Rust(d) => Ok(d.options.iter().map(OptionDecl::from).collect()),
            Resolved::Python { info, .. } | Resolved::Worker { info, .. } => info
                .options
                .iter()
                .map(|o| OptionDecl::from_list(&o.name, &o.kind, &o.default, &o.choices))
                .map(|d| d.map_err(|e| format!("the {:?} worker's --list: engine {}: {e}", info.runtime, info.name)))
                .collect(),
        }
    }
}

/// Engine names that run a YCSB binding in the Java worker: `ycsb:CLASS`.
pub const YCSB_PREFIX: &str = "ycsb:";

/// Where `--classpath` reaches the Java worker (docs/decisions.md, "YCSB bindings as engines").
pub const YCSB_CLASSPATH_ENV: &str = "KVBENCH_YCSB_CLASSPATH";

/// A YCSB binding's row, `ycsb:CLASS`: the Java worker loads CLASS (a `site.ycsb.DB`) and says
/// at the row's start whether it can. A binding declares no options: any property is passed.
fn ycsb_binding(name: &str, class: &str) -> Result<EngineInfo, String> {
    let part_ok = |p: &str| {
        p.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && p.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    if !class.split('.').all(part_ok) {
        return Err(format!(
            "engine `{name}`: `{class}` is no Java class name (ycsb:CLASS, e.g. ycsb:site.ycsb.db.rocksdb.RocksDBClient)"
        ));
    }
    Ok(EngineInfo {
        name: name.into(),
        runtime: Runtime::Java,
        description: format!("YCSB binding {class} (site.ycsb.DB), in the Java worker"),
        version: String::new(),
        // YCSB's scan returns records without their keys: kvbench could not verify them.
        capabilities: vec!["persistent".into(), "delete".into()],
        options: vec![],
        available: true,
        why: String::new(),
        server: false,
    })
}

/// A row's options against its engine's declarations; a YCSB binding's are its properties,
/// each passed to it as a string.
pub fn resolve_options(
    name: &str,
    engine: &Resolved,
    given: &BTreeMap<String, serde_json::Value>,
) -> Result<BTreeMap<String, serde_json::Value>, kvbench_model::options::OptionError> {
    if name.starts_with(YCSB_PREFIX) {
        let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        return Ok(given.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(text(v)))).collect());
    }
    let decls = engine
        .option_decls()
        .map_err(|message| kvbench_model::options::OptionError { option: String::new(), message })?;
    kvbench_model::options::resolve(name, &decls, given)
}

/// How to run `name`: by the runtime whose worker declares it (the Rust registry, then the
/// Python and Go workers' `--list`), not by the shape of its name.
pub fn resolve(name: &str) -> Result<Resolved, String> {
    if let Some(class) = name.strip_prefix(YCSB_PREFIX) {
        let java = EXTERNAL.iter().find(|x| x.runtime == Runtime::Java).expect("the Java runtime is external");
        return Ok(Resolved::Worker { worker: java.worker()?, info: ycsb_binding(name, class)? });
    }
    match kvbench_engines::find(name) {
        Some(Entry::Ready(d)) => {
            (d.available)().map_err(|why| format!("{name} unavailable: {why}"))?;
            return Ok(Resolved::Rust(d));
        }
        Some(Entry::Missing { why, .. }) => return Err(format!("{name} was not built: {why}")),
        None => {}
    }
    let declared = |list: &Result<Vec<EngineInfo>, String>| -> Option<EngineInfo> {
        list.as_ref().ok().and_then(|l| l.iter().find(|e| e.name == name).cloned())
    };
    if let Some(info) = declared(cached_python()) {
        if !info.available {
            return Err(format!("{name} unavailable: {}", info.why));
        }
        return Ok(Resolved::Python { python: python()?, info });
    }
    for x in EXTERNAL {
        if let Some(info) = declared(x.cached()) {
            if !info.available {
                return Err(format!("{name} unavailable: {}", info.why));
            }
            return Ok(Resolved::Worker { worker: x.engine_worker(name)?, info });
        }
    }
    // A worker that died while listing its engines (killed, crashed) is the likelier cause
    // than a misspelt name: say so.
    // A worker that is not built is no such cause.
    let mut lists = vec![(python().is_ok(), cached_python())];
    lists.extend(EXTERNAL.iter().map(|x| (x.worker().is_ok(), x.cached())));
    let died: Vec<&str> =
        lists.iter().filter_map(|(built, l)| l.as_ref().err().filter(|_| *built)).map(|e| e.as_str()).collect();
    if !died.is_empty() {
        return Err(format!(
            "engine `{name}`: not a Rust engine, and a worker that may declare it died listing its engines: {}",
            died.join("; ")
        ));
    }
    let names: Vec<String> = all_names();
    Err(format!("unknown engine `{name}` (known: {}; see `kvbench list`)", names.join(", ")))
}

/// How a worker process ended: its exit code, or the signal that killed it.
fn died_how(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(9)) => "killed by SIGKILL".into(),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "ended".into(),
    }
}

/// The Python worker's engine list, asked once per process (starting it costs ~0.1–0.5 s).
fn cached_python() -> &'static Result<Vec<EngineInfo>, String> {
    static LIST: std::sync::OnceLock<Result<Vec<EngineInfo>, String>> = std::sync::OnceLock::new();
    LIST.get_or_init(python_engines)
}

/// Whether `name` is a server engine (kvbench starts a server for it, or a URL names one).
pub fn is_server(name: &str) -> bool {
    matches!(kvbench_engines::find(name), Some(Entry::Ready(d)) if d.start_server.is_some())
        || kvbench_engines::server_for(name).is_some()
}

/// Every engine name any runtime declares.
pub fn all_names() -> Vec<String> {
    let mut names: Vec<String> = entries().iter().map(|e| e.name().to_string()).collect();
    let lists = std::iter::once(cached_python()).chain(EXTERNAL.iter().map(External::cached));
    for l in lists.flatten() {
        names.extend(l.iter().map(|e| e.name.clone()));
    }
    names
}

/// The default comparison's rows: one engine per storage design in each runtime, so `make run`
/// shows the designs side by side in seconds; `--engines all` runs every available one.
const REPRESENTATIVE: &[&str] = &[
    // Rust/C: mmap B+tree, LSM, small LSM, SQL B-tree, cached B-tree, hash file, constant
    // database, modern hash, Rust B-tree, Rust LSM.
    "lmdb",
    "rocksdb",
    "leveldb",
    "sqlite",
    "wiredtiger",
    "tokyocabinet-hash",
    "tinycdb",
    "tkrzw-hash",
    "redb",
    "fjall",
    // Go: B+tree, LSM, LSM with a value log.
    "go-bbolt",
    "go-pebble",
    "go-badger",
    // Python: the bindings article 000 compares.
    "py-lmdb",
    "py-rocksdict",
];

/// The default comparison: the [`REPRESENTATIVE`] engines available here, in runtime order.
pub fn default_engines() -> Vec<String> {
    all_engines().into_iter().filter(|n| REPRESENTATIVE.contains(&n.as_str())).collect()
}

/// `--engines all`: every available embedded engine of every runtime, grouped by runtime
/// (Rust/C, then Go, Java and Node, then Python); a runtime whose worker is not built is left out and said
/// so by `kvbench list`. Test oracles and engines that need a server are not in it.
pub fn all_engines() -> Vec<String> {
    let mut names: Vec<String> = entries()
        .iter()
        .filter_map(|e| match e {
            Entry::Ready(d) if d.name != "memory" && d.start_server.is_none() && (d.available)().is_ok() => {
                Some(d.name.to_string())
            }
            _ => None,
        })
        .collect();
    let lists = EXTERNAL.iter().map(External::cached).chain(std::iter::once(cached_python()));
    for list in lists.flatten() {
        names.extend(
            list.iter()
                .filter(|e| {
                    e.available && !e.name.ends_with("-memory") && kvbench_engines::server_for(&e.name).is_none()
                })
                .map(|e| e.name.clone()),
        );
    }
    names
}

/// Width of `kvbench list` outside a terminal (and the least it assumes): one engine a line
/// within a classic terminal.
const LIST_WIDTH: usize = 80;

/// The width `list` fills: the terminal's (or `COLUMNS`), at least [`LIST_WIDTH`].
fn list_width() -> usize {
    kvbench_report::terminal_width().map_or(LIST_WIDTH, |w| usize::from(w).max(LIST_WIDTH))
}

/// `kvbench list`: one engine a line (name, runtime, version, status) within 80 columns;
/// `kvbench list ENGINE` shows that engine's capabilities and options.
pub fn print_list(engine: Option<&str>, json: bool) -> Result<String, String> {
    let all = all();
    if let Some(name) = engine {
        let e = all.iter().find(|e| e.name == name).ok_or_else(|| {
            let near = closest(name, &all.iter().map(|e| e.name.clone()).collect::<Vec<_>>());
            let hint = if near.is_empty() { String::new() } else { format!(" — did you mean {}?", near.join(", ")) };
            format!("unknown engine `{name}`{hint} (`kvbench list` shows every engine)")
        })?;
        return Ok(if json { serde_json::to_string_pretty(e).expect("serialises") + "\n" } else { engine_page(e) });
    }
    if json {
        return Ok(serde_json::to_string_pretty(&all).expect("serialises") + "\n");
    }
    let width = list_width();
    let full = list_rows(&all, |v| v.to_string());
    // Full versions where they leave the status room; the short form (`7.0.15…`) otherwise.
    let before: usize = (0..3).map(|c| full.iter().map(|r| r[c].chars().count()).max().unwrap_or(0) + 2).sum();
    let t = if before + STATUS_ROOM <= width { full } else { list_rows(&all, kvbench_report::short_version) };
    let mut out = render_plain(&t, width);
    out.push_str("`kvbench list ENGINE` shows an engine's capabilities and options.\n");
    out.push_str("`default`: in the default comparison (`--engines all` runs every available one).\n");
    out.push_str(&runtimes());
    Ok(out)
}

/// Columns the status needs beside the others before versions are shortened.
const STATUS_ROOM: usize = 30;

/// `list`'s rows (engine, runtime, version, status) under their header.
fn list_rows(all: &[EngineInfo], version: impl Fn(&str) -> String) -> Vec<Vec<String>> {
    let mut t: Vec<Vec<String>> = vec![["engine", "runtime", "version", "status"].map(String::from).to_vec()];
    for e in all {
        let runtime = format!("{:?}", e.runtime).to_lowercase() + if e.server { " (server)" } else { "" };
        let mut status = match (e.available, REPRESENTATIVE.contains(&e.name.as_str())) {
            (true, true) => "ok, default".into(),
            (true, false) => "ok".into(),
            (false, _) => format!("unavailable: {}", e.why),
        };
        // The short version column would cut the mark off: it goes with the status.
        if e.version.contains("(unmaintained)") {
            status.push_str(", unmaintained upstream");
        }
        t.push(vec![e.name.clone(), runtime, version(&e.version), status]);
    }
    t
}

/// Which runtimes this kvbench found and where (or why not), one a line.
fn runtimes() -> String {
    let here = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
    let found = |r: Result<PathBuf, String>| {
        r.map(|p| p.display().to_string()).unwrap_or_else(|why| format!("not found: {why}"))
    };
    let home = match home() {
        Some(h) => h.display().to_string(),
        None => "not found (set KVBENCH_HOME, or install with `make install`)".into(),
    };
    let mut out = String::from("runtimes:\n");
    let mut rows = vec![("rust", here)];
    rows.extend(EXTERNAL.iter().map(|x| (x.dir, found(x.worker()))));
    rows.extend([("python", found(python())), ("home", home)]);
    for (k, v) in rows {
        out.push_str(&wrap(&format!("  {k:<8}"), &v, LIST_WIDTH, 10));
    }
    out
}

/// One engine: what it is, what it can do, and its options with their defaults.
fn engine_page(engine: &EngineInfo) -> String {
    let mut out = format!("{} ({:?}{})\n", engine.name, engine.runtime, if engine.server { ", server" } else { "" })
        .to_lowercase();
    let mut line = |k: &str, v: &str| {
        if !v.is_empty() {
            out.push_str(&wrap(&format!("{k:<13} "), v, LIST_WIDTH, 14));
        }
    };
    line("description", &engine.description);
    line("version", &engine.version);
    line("status", &if engine.available { "ok".to_string() } else { format!("unavailable: {}", engine.why) });
    line("capabilities", &engine.capabilities.join(" "));
    if engine.options.is_empty() {
        out.push_str("options       none\n");
    } else {
        out.push_str("options (set with `-o ENGINE.OPTION=VALUE` or a scenario's `options`):\n");
        for o in &engine.options {
            let default = if o.default.is_empty() { "engine default".to_string() } else { o.default.clone() };
            out.push_str(&wrap("  ", &format!("{} ({}, default {default})", o.name, o.kind), LIST_WIDTH, 4));
            if !o.doc.is_empty() {
                out.push_str(&wrap("    ", &o.doc, LIST_WIDTH, 4));
            }
        }
    }
    out
}

/// `first` then `text` wrapped at word boundaries within `width`, later lines indented by `indent`.
fn wrap(first: &str, text: &str, width: usize, indent: usize) -> String {
    let (mut out, mut line) = (String::new(), first.to_string());
    for word in text.split_whitespace() {
        if line.len() == first.len() {
            line.push_str(word);
        } else if line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = " ".repeat(indent) + word;
        } else {
            line.push(' ');
            line.push_str(word);
        }
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A plain aligned text table, the first row its header; the last column wraps under itself
/// to fit `width` (cut with a `…` only where the other columns leave it no room).
fn render_plain(rows: &[Vec<String>], width: usize) -> String {
    let cols = rows[0].len();
    let mut widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let before: usize = widths[..cols - 1].iter().map(|w| w + 2).sum();
    widths[cols - 1] = widths[cols - 1].min(width.saturating_sub(before));
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let line: Vec<String> =
            r[..cols - 1].iter().enumerate().map(|(c, s)| format!("{s:<w$}", w = widths[c])).collect();
        let head = line.join("  ") + "  ";
        let last = wrap(&head, &r[cols - 1], width, before);
        last.lines().for_each(|l| {
            out.push_str(&cut(l.trim_end(), width));
            out.push('\n');
        });
        if i == 0 {
            out.push_str(&cut(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "), width));
            out.push('\n');
        }
    }
    out
}

fn cut(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    line.chars().take(width - 1).collect::<String>() + "…"
}

/// The names closest to `name`, best first (at most three).
pub fn closest(name: &str, known: &[String]) -> Vec<String> {
    let mut scored: Vec<(f64, &String)> =
        known.iter().map(|k| (strsim::jaro_winkler(name, k), k)).filter(|(s, _)| *s >= 0.75).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, k)| k.clone()).collect()
}

/// Every engine a scenario names exists, checked before anything runs. A py-/go-/java-/node-
/// engine is only checked when its worker answers (else the run reports the worker's own reason).
/// Every row's engine is known here; an unknown one is named with where it was given: the
/// scenario `file` and line, or the `--engines` flag (`file` None).
pub fn check_names(given: &kvbench_model::scenario::Scenario, file: Option<&std::path::Path>) -> Result<(), String> {
    for (i, v) in given.all_variants().into_iter().enumerate() {
        let n = &v.name;
        // The Rust registry answers without starting a worker.
        let worker_down = (n.starts_with("py-") && cached_python().is_err())
            || EXTERNAL.iter().any(|x| n.starts_with(x.prefix) && x.cached().is_err());
        if kvbench_engines::find(n).is_some() || worker_down {
            continue;
        }
        if let Some(class) = n.strip_prefix(YCSB_PREFIX) {
            ycsb_binding(n, class)?;
            continue;
        }
        let known = all_names();
        if known.contains(n) {
            continue;
        }
        let near = closest(n, &known);
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!(" — did you mean {}?", near.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "))
        };
        let place = match file {
            Some(f) => kvbench_model::scenario::place_in_file(f, &given.row_path(i, "name")),
            None => "--engines".into(),
        };
        return Err(format!("{place}: unknown engine `{n}`{hint} (`kvbench list` shows every engine)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_lines_fit_80_columns_and_long_words_wrap_whole() {
        let rows = vec![
            vec!["engine".to_string(), "status".to_string()],
            vec!["py-rocksdict".to_string(), "unavailable: ".to_string() + &"why ".repeat(40)],
        ];
        let text = render_plain(&rows, LIST_WIDTH);
        assert!(text.lines().all(|l| l.chars().count() <= LIST_WIDTH), "{text}");
        // The status wraps under itself: nothing of it is cut.
        assert!(text.lines().nth(2).unwrap().starts_with("py-rocksdict  unavailable: why") && !text.contains('…'));
        assert_eq!(text.matches("why").count(), 40, "{text}");
        assert!(text.lines().skip(3).all(|l| l.starts_with("              why")), "{text}");
        let w = wrap("  ", &format!("name (kind, default x) {}", "word ".repeat(30)), LIST_WIDTH, 4);
        assert!(
            w.lines().all(|l| l.chars().count() <= LIST_WIDTH) && w.lines().skip(1).all(|l| l.starts_with("    word")),
            "{w}"
        );
    }

    #[test]
    fn every_engine_of_the_default_comparison_is_in_the_readme_engine_table() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
        let table: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `")).collect();
        for name in REPRESENTATIVE {
            assert!(
                table.iter().any(|l| l.contains(&format!("`{name}`"))),
                "{name} is no engine of the README's table"
            );
        }
    }

    #[test]
    fn a_misspelt_engine_gets_the_closest_names() {
        let known: Vec<String> = ["lmdb", "leveldb", "rocksdb", "sqlite", "go-bbolt"].map(String::from).to_vec();
        assert_eq!(closest("lmbd", &known)[0], "lmdb");
        assert_eq!(closest("rocksbd", &known)[0], "rocksdb");
        assert!(closest("zzzzzz", &known).is_empty());
    }

    #[test]
    fn an_external_worker_not_built_says_which_make_target_builds_it() {
        let home = tempfile::tempdir().unwrap();
        for x in EXTERNAL {
            assert_eq!(x.prefix, format!("{}-", x.dir), "engine names say their runtime's directory");
            let e = x.worker_in(Some(home.path().into())).unwrap_err();
            let bin = format!("drivers/{0}/bin/kvbench-{0}-worker", x.dir);
            assert!(e.contains(&bin) && e.ends_with(&format!("run `make {}`", x.dir)), "{e}");
            let path = home.path().join(&bin);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
            assert_eq!(x.worker_in(Some(home.path().into())).unwrap(), path);
        }
        let runtimes: std::collections::BTreeSet<&str> = EXTERNAL.iter().map(|x| x.runtime.name()).collect();
        assert_eq!(runtimes, ["go", "java", "node"].into());
    }

    #[test]
    fn a_ycsb_row_is_a_java_class_run_by_the_java_worker_with_any_property() {
        assert!(ycsb_binding("ycsb:site.ycsb.db.rocksdb.RocksDBClient", "site.ycsb.db.rocksdb.RocksDBClient").is_ok());
        assert!(ycsb_binding("ycsb:a.B$Inner", "a.B$Inner").is_ok());
        for bad in ["", "a..B", "1a.B", "a.B;rm", "a b"] {
            let e = ycsb_binding(&format!("ycsb:{bad}"), bad).unwrap_err();
            assert!(e.contains("is no Java class name"), "{e}");
        }
        let info = ycsb_binding("ycsb:x.Y", "x.Y").unwrap();
        assert_eq!(info.runtime, Runtime::Java);
        assert!(!info.capabilities.contains(&"scan".to_string()), "YCSB's scan returns no keys to verify");
        let row = Resolved::Worker { worker: "java".into(), info };
        let given: BTreeMap<String, serde_json::Value> =
            [("rocksdb.dir", serde_json::json!("{dir}/r")), ("threads", serde_json::json!(4))]
                .map(|(k, v)| (k.to_string(), v))
                .into();
        let props = resolve_options("ycsb:x.Y", &row, &given).unwrap();
        assert_eq!(props["rocksdb.dir"], "{dir}/r");
        assert_eq!(props["threads"], "4", "properties reach the binding as strings");
    }

    #[test]
    fn a_classpath_entry_that_is_missing_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("a.jar");
        std::fs::write(&jar, "").unwrap();
        let cp = format!("{}:{}/*", jar.display(), dir.path().display());
        assert_eq!(checked_classpath(&cp).unwrap(), cp);
        let e = checked_classpath(&format!("{cp}:/no/such.jar")).unwrap_err();
        assert_eq!(e, "--classpath entry `/no/such.jar`: /no/such.jar is not found");
        let e = checked_classpath("/no/dir/*").unwrap_err();
        assert_eq!(e, "--classpath entry `/no/dir/*`: /no/dir/ is no directory");
        assert!(checked_classpath(":").unwrap_err().contains("no entry"));
    }

    #[test]
    fn a_rows_worker_gets_the_runs_classpath_and_a_listing_none() {
        let env = |cmd: &Command| {
            cmd.get_envs().find(|(k, _)| *k == YCSB_CLASSPATH_ENV).and_then(|(_, v)| v.map(|v| v.to_owned()))
        };
        let row = worker_command(Path::new("/bin/true"), Some("/opt/a.jar:/opt/lib/*"));
        assert_eq!(env(&row), Some("/opt/a.jar:/opt/lib/*".into()));
        assert_eq!(env(&worker_command(Path::new("/bin/true"), None)), None);
    }

    /// Issue 42: a worker killed while it lists its engines is named as killed (the run then
    /// says so instead of calling its engine unknown).
    #[test]
    fn regression_a_worker_killed_while_listing_is_said_killed() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo partial >&2; kill -9 $$"]);
        let deps = list_cache::Deps { files: vec![], dirs: vec![], trees: vec![] };
        let e = worker_engines(cmd, &deps, "probe --list", Runtime::Python).unwrap_err();
        assert_eq!(e, "probe --list failed (killed by SIGKILL): partial");
    }
}
