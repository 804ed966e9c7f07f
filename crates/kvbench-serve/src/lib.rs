//! kvbench-serve (`kvbench serve`): any Rust registry engine behind an HTTP/1.1 server, the way RocksServer
//! serves RocksDB. Two APIs share one port (docs/servers.md):
//! - RocksServer's own (`/get?key`, `/mget?k1&k2`, `/set`, `/mset`, `/del`, `/mdel`,
//!   `/exist?key`, `/incr`, `/stats`) with its exact reply bytes, so its clients work
//!   unchanged ([`rocks`]);
//! - kvbench's binary, length-prefixed API under `/kv/` plus `/open`, `/close` and `/health`,
//!   which the `http-*` engines use ([`api`]).
//!
//! The server is hyper 1.x on tokio: one current-thread runtime per worker thread, fed
//! connections in turn by one acceptor, so a connection lives on one thread from accept to
//! close and a request is never handed between threads ([`net`]; the measured choice of where
//! engine calls run is in docs/decisions.md). Hardening: databases only under the `--dir` root,
//! a bearer token, a request-body limit with a server-wide body budget, a keys-per-request
//! limit, header and body read timeouts, a connection limit, and a warning when run as root.
//!
//! The binary only parses the command line and hands [`main`] its way of speaking ([`Say`]);
//! nothing here knows of runs, scenarios or reports (docs/decisions.md, "Crate
//! structure").
//!
//! The main types: [`ServeArgs`] (the command line, a `clap::Args` the binary flattens into its
//! own parser), [`Exec`] and [`Runtime`] (where engine calls run, how threads share
//! connections) and [`Say`]. Every setting is checked before anything listens: a bad one is the
//! exit status 2 and one line naming the flag and its allowed values, as here:
//!
//! ```
//! use clap::Parser;
//! use kvbench_serve::{main, ServeArgs};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     serve: ServeArgs,
//! }
//! fn say(line: std::fmt::Arguments<'_>) {
//!     assert_eq!(line.to_string(), "error: no engine `no-such-engine` (kvbench list)");
//! }
//!
//! let cli = Cli::parse_from(["serve", "--engine", "no-such-engine", "--dir", "/nonexistent"]);
//! assert_eq!((cli.serve.listen.as_str(), cli.serve.max_connections), ("127.0.0.1:8080", 512));
//! assert_eq!(main(cli.serve, say), 2);
//!
//! let refused = Cli::try_parse_from(["serve", "--engine", "lmdb", "--dir", "d", "--max-connections", "0"]);
//! assert!(refused.err().unwrap().to_string().contains("out of range (allowed: 1 to 65536)"));
//! ```

mod api;
#[cfg(test)]
mod fuzz_tests;
mod ledger;
mod net;
mod reply;
mod rocks;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use kvbench_engines::http::OpenRequest;
use kvbench_engines::{find, Entry};
use kvbench_model::engine::{Engine, EngineDescriptor, OpenArgs, OpenMode, Options, SyncMode};

/// Where engine calls run (docs/decisions.md, "kvbench serve").
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Exec {
    /// Point reads on the connection's own thread; everything else on the blocking pool.
    Auto,
    /// Every engine call on the connection's own thread.
    Inline,
    /// Every engine call on the runtime's blocking pool.
    Blocking,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The embedded engine to serve (`kvbench list` shows the names).
    #[arg(long)]
    pub engine: String,
    /// Root directory: the database opened at start lives here, and POST /open may only open
    /// databases inside it.
    #[arg(long)]
    pub dir: PathBuf,
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Engine option k=v (repeatable).
    #[arg(long = "option")]
    pub options: Vec<String>,
    /// Durability of every write: none, commit, always.
    #[arg(long, value_parser = kvbench_model::flags::parse::sync, default_value = "commit")]
    pub sync: SyncMode,
    /// Worker threads, each an event loop of its own (default: the CPU count).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Require `Authorization: Bearer TOKEN` on every request but /health. Visible to other
    /// users in the process list: prefer --token-file or $KVBENCH_SERVE_TOKEN.
    #[arg(long)]
    pub token: Option<String>,
    /// Read the bearer token from this file (first line).
    #[arg(long, conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// Start with no database open (clients open one with POST /open).
    #[arg(long)]
    pub no_open: bool,
    /// Largest request body in bytes (k/m/g suffixes); larger ones get 413.
    #[arg(long, value_parser = parse_bytes, default_value = "64m")]
    pub max_body: u64,
    /// Request bodies buffered at once, in bytes, over all connections; requests wait for room.
    #[arg(long, value_parser = parse_bytes, default_value = "256m")]
    pub body_budget: u64,
    /// Most keys (or pairs) one request may name; more get 413.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_keys: usize,
    /// Largest reply to one request in bytes (k/m/g suffixes); a multi-get or scan whose reply
    /// would be larger gets 413.
    #[arg(long, value_parser = parse_bytes, default_value = "64m")]
    pub max_reply: u64,
    /// Bytes of replies being read or waiting to be sent, over all connections (k/m/g
    /// suffixes; at least --max-reply); a reply past it gets 503 at once.
    #[arg(long, value_parser = parse_bytes, default_value = "256m")]
    pub reply_budget: u64,
    /// Most open connections (1 to 65536); further ones wait in the listen queue.
    #[arg(long, default_value_t = 512, value_parser = parse_connections)]
    pub max_connections: usize,
    /// Seconds a client may take to send a request's head, and then its body.
    #[arg(long, default_value_t = 10)]
    pub read_timeout: u64,
    #[arg(long, value_enum, default_value = "auto", hide = true)]
    pub exec: Exec,
    /// How worker threads share connections (docs/decisions.md, "kvbench
    /// serve").
    #[arg(long, value_enum, default_value = "per-core", hide = true)]
    pub runtime: Runtime,
}

/// Per-core current-thread runtimes fed by one acceptor, or tokio's work-stealing runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Runtime {
    PerCore,
    Multi,
}

/// Most connections `serve` may hold open: a bound on its memory, never 0 (nothing served).
const MAX_CONNECTIONS: usize = 65_536;

fn parse_connections(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n @ 1..=MAX_CONNECTIONS) => Ok(n),
        _ => Err(format!("`{text}` is out of range (allowed: 1 to {MAX_CONNECTIONS})")),
    }
}

fn parse_bytes(text: &str) -> Result<u64, String> {
    match kvbench_model::engine::parse_size(text) {
        Some(n) if n > 0 => Ok(n as u64),
        _ => Err(format!("`{text}`: expected a positive size such as 65536, 64k, 64m or 1g")),
    }
}

/// The limits a connection enforces.
pub(crate) struct Limits {
    pub max_body: u64,
    pub max_keys: usize,
    pub max_reply: usize,
    pub reply_budget: usize,
    pub read_timeout: Duration,
}

/// How the server tells its operator something: one line on standard error, written the way the
/// caller writes its own (kvbench's redacts secrets and escapes control characters).
pub type Say = fn(std::fmt::Arguments<'_>);

/// What every connection shares: the engine, the root, the token and the limits.
pub(crate) struct State {
    pub desc: &'static EngineDescriptor,
    pub root: PathBuf,
    pub engine: RwLock<Option<Box<dyn Engine>>>,
    /// Where the open database lives (for /stats).
    pub open_dir: Mutex<Option<PathBuf>>,
    /// Serialises /incr's read-modify-write.
    pub incr: Mutex<()>,
    pub token: Option<String>,
    pub limits: Limits,
    pub exec: Exec,
    pub stats: net::Counters,
    /// The reply budget's ledger (`--reply-budget`).
    pub replies: std::sync::Arc<ledger::Ledger>,
    pub say: Say,
}

/// Serve until killed; the exit status (2: the arguments or the start failed, said through `say`).
pub fn main(args: ServeArgs, say: Say) -> i32 {
    match serve(args, say) {
        Ok(()) => 0,
        Err(e) => {
            say(format_args!("error: {e}"));
            2
        }
    }
}

fn serve(args: ServeArgs, say: Say) -> Result<(), String> {
    let desc = match find(&args.engine) {
        Some(Entry::Ready(d)) => d,
        Some(Entry::Missing { why, .. }) => return Err(format!("engine {} is not available: {why}", args.engine)),
        None => return Err(format!("no engine `{}` (kvbench list)", args.engine)),
    };
    if desc.start_server.is_some() {
        return Err(format!("{} is a server engine already; serve an embedded one", desc.name));
    }
    if args.max_body > u64::from(u32::MAX) || args.body_budget < args.max_body {
        return Err(format!(
            "--max-body {} must be at most 4 GiB and at most --body-budget {}",
            args.max_body, args.body_budget
        ));
    }
    if args.reply_budget < args.max_reply {
        return Err(format!("--reply-budget {} must be at least --max-reply {}", args.reply_budget, args.max_reply));
    }
    std::fs::create_dir_all(&args.dir).map_err(|e| format!("--dir {}: {e}", args.dir.display()))?;
    let root = args.dir.canonicalize().map_err(|e| format!("--dir {}: {e}", args.dir.display()))?;
    let token = read_token(&args)?;
    let state = State {
        desc,
        root: root.clone(),
        engine: RwLock::new(None),
        open_dir: Mutex::new(None),
        incr: Mutex::new(()),
        token,
        limits: Limits {
            max_body: args.max_body,
            max_keys: args.max_keys,
            max_reply: usize::try_from(args.max_reply).unwrap_or(usize::MAX),
            reply_budget: usize::try_from(args.reply_budget).unwrap_or(usize::MAX),
            read_timeout: Duration::from_secs(args.read_timeout.max(1)),
        },
        exec: args.exec,
        stats: net::Counters::default(),
        replies: ledger::Ledger::new(usize::try_from(args.reply_budget).unwrap_or(usize::MAX)),
        say,
    };
    if !args.no_open {
        let req = OpenRequest {
            dir: root.clone(),
            options: parse_options(&args.options)?,
            sync: args.sync,
            mode: OpenMode::ReadWrite,
            expected_records: 1_000_000,
            expected_bytes: 1 << 30,
        };
        let engine = open_engine(desc, &req, &root)?;
        *state.engine.write().map_err(|_| "lock poisoned")? = Some(engine);
        *state.open_dir.lock().map_err(|_| "lock poisoned")? = Some(root.clone());
    }
    warn_if_exposed(&state, &args.listen);
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())).max(1);
    let listener =
        std::net::TcpListener::bind(&args.listen).map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    say(format_args!(
        "kvbench serve: {} under {} on http://{} ({threads} threads{})",
        desc.name,
        root.display(),
        args.listen,
        if state.token.is_some() { ", bearer token required" } else { "" }
    ));
    let server = net::Server {
        threads,
        max_connections: args.max_connections,
        body_budget: args.body_budget,
        runtime: args.runtime,
    };
    net::run(state, listener, &server)
}

fn read_token(args: &ServeArgs) -> Result<Option<String>, String> {
    let t = match &args.token_file {
        Some(f) => {
            let limit = kvbench_model::input::limits::TOKEN_BYTES;
            let s = kvbench_model::input::read_regular_text(f, "--token-file", limit)?;
            Some(s.lines().next().unwrap_or("").trim().to_string())
        }
        None => args.token.clone().or_else(|| std::env::var("KVBENCH_SERVE_TOKEN").ok()),
    };
    match t {
        Some(t) if t.is_empty() => Err("the bearer token is empty".into()),
        Some(t) if !t.bytes().all(|b| b.is_ascii_graphic()) => {
            Err("the bearer token must be printable ASCII without spaces".into())
        }
        t => Ok(t),
    }
}

fn warn_if_exposed(state: &State, listen: &str) {
    if kvbench_engines::servers::lifecycle::is_root() {
        (state.say)(format_args!(
            "warning: kvbench serve runs as root: a client that holds the token can write files under {} as root",
            state.root.display()
        ));
    }
    if state.token.is_none() {
        (state.say)(format_args!("note: no token (--token, --token-file or $KVBENCH_SERVE_TOKEN): anyone who reaches {listen} can read and write the database"));
    }
}

/// `k=v` options from the command line: JSON values where they parse (numbers, booleans),
/// strings otherwise.
fn parse_options(list: &[String]) -> Result<BTreeMap<String, serde_json::Value>, String> {
    let mut m = BTreeMap::new();
    for o in list {
        let (k, v) = o.split_once('=').ok_or_else(|| format!("--option {o}: expected k=v"))?;
        let val = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        m.insert(k.trim().to_string(), val);
    }
    Ok(m)
}

/// One request, by path: RocksServer's endpoints first, then kvbench's own.
pub(crate) fn route(st: &State, parts: &hyper::http::request::Parts, body: &[u8]) -> net::Reply {
    let path = parts.uri.path();
    let query = parts.uri.query();
    let post = parts.method == hyper::Method::POST;
    if let Some(r) = rocks::route(st, path, query, post, body) {
        return r;
    }
    let text = parts.headers.get(hyper::header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/"));
    api::route(st, &parts.method, path, query, body, text)
}

/// `dir` resolved inside `root`: relative paths are taken from the root; `..`, and anything
/// that resolves (through symbolic links) outside the root, is refused. Creates the directory.
pub(crate) fn confine(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    if dir.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!("{}: `..` is not allowed; databases live under {}", dir.display(), root.display()));
    }
    let full = if dir.is_absolute() { dir.to_path_buf() } else { root.join(dir) };
    let inside = |p: &Path| p.starts_with(root);
    // The nearest existing ancestor, resolved, must already be inside the root, so that
    // creating the rest cannot leave it.
    let existing = full.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
    let resolved = existing.canonicalize().map_err(|e| format!("{}: {e}", existing.display()))?;
    if !inside(&resolved) {
        return Err(format!("{} is outside the served root {}", dir.display(), root.display()));
    }
    std::fs::create_dir_all(&full).map_err(|e| format!("{}: {e}", full.display()))?;
    let done = full.canonicalize().map_err(|e| format!("{}: {e}", full.display()))?;
    if !inside(&done) {
        return Err(format!("{} is outside the served root {}", dir.display(), root.display()));
    }
    Ok(done)
}

pub(crate) fn open_engine(desc: &EngineDescriptor, req: &OpenRequest, root: &Path) -> Result<Box<dyn Engine>, String> {
    let options = Options::parse(desc.name, desc.options, &req.options)?;
    let dir = confine(root, &req.dir)?;
    let args = OpenArgs {
        dir: &dir,
        options: &options,
        sync: req.sync,
        mode: req.mode,
        expected_records: req.expected_records,
        expected_bytes: req.expected_bytes,
        url: None,
        token: None,
    };
    (desc.open)(&args).map_err(|e| format!("open {} in {}: {e}", desc.name, dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confine_refuses_escapes_and_accepts_the_inside() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(confine(&root, Path::new("a/b")).unwrap(), root.join("a/b"));
        assert_eq!(confine(&root, &root.join("c")).unwrap(), root.join("c"));
        assert!(confine(&root, Path::new("../x")).unwrap_err().contains(".."));
        assert!(confine(&root, Path::new("/etc")).unwrap_err().contains("outside"));
        assert!(confine(&root, &tmp.path().join("elsewhere")).unwrap_err().contains("outside"));
        std::os::unix::fs::symlink(tmp.path(), root.join("link")).unwrap();
        assert!(confine(&root, Path::new("link/escaped")).unwrap_err().contains("outside"));
        assert!(!tmp.path().join("escaped").exists(), "nothing is created outside the root");
    }
}
