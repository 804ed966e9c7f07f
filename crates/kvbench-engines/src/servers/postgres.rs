//! `postgres`: PostgreSQL 15 over its private Unix socket, or loopback TCP with `connection =
//! "tcp"` (a role with a password generated at the server's start). One table `(k bytea primary
//! key, v bytea)` (or `text COLLATE "C"` with `types = text`).
//!
//! The load phase (every write before `finish_load`, into an empty table) uses the `load`
//! method: one INSERT per row, multi-row INSERTs, COPY FROM STDIN in text or binary format; a
//! batch is one transaction (one COPY for the copy methods). Later writes (updates, deletes)
//! are upserts and deletes, one transaction per batch. Reads: get by primary key with a prepared
//! statement, multi-get with `k = ANY($1)`, scans ordered by key. Each reader has its own
//! connection (kept in a pool across phases so reconnecting is not measured).
//!
//! Clients: a writer thread's one-statement writes and COPY loads go through libpq
//! ([`super::libpq`]); multi-row INSERT, reads, set-up and the engine's shared connection
//! through the `postgres` crate (synchronous client).
//!
//! Durability: `sync = none` → `fsync = off` (ALTER SYSTEM + reload, one server serves every
//! variant) and `synchronous_commit = off`; `commit`/`always` → both on. settings() reads them
//! back with SHOW.
//!
//! The untimed `prepare` step applies `sync`, gives the job a fresh table on its first open, and
//! then runs CHECKPOINT and waits for the WAL to settle, so each load method starts from the
//! same server state (stated as `server_state`). A caller that skips `prepare` gets it on first
//! use (then inside whatever it times).

use std::collections::{BTreeMap, HashMap};
use std::error::Error as StdError;
use std::ffi::{CStr, CString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::types::{FromSql, IsNull, ToSql, Type};
use ::postgres::{Client, Config, NoTls, Statement};
use bytes::BytesMut;
use kvbench_model::engine::*;

use super::libpq;
use super::process::{self, ServerProcess, SocketHome, SocketServer};

pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The marker kvbench puts on the tables it creates; only such tables are ever dropped.
const TABLE_COMMENT: &str = "created by kvbench; the next kvbench run using this table name drops it";

pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    name: "postgres",
    description: "PostgreSQL 15 over its socket or loopback TCP (libpq + postgres crate): INSERT/COPY loads, prepared gets, ANY() multi-get",
    capabilities: Capabilities {
        ordered_scan: true,
        multi_get: true,
        batch: true,
        read_only_open: false,
        secondary_open: false,
        persistent: true,
        build_once: false,
        delete: true,
    },
    options: &[
        OptionSpec {
            name: "load",
            kind: OptionKind::Enum(&["insert", "multi-insert", "copy-text", "copy-binary"]),
            default: "insert",
            doc: "load method: one INSERT per row, multi-row INSERT, COPY FROM STDIN text or binary (a batch is one transaction)",
        },
        OptionSpec {
            name: "rows_per_insert",
            kind: OptionKind::Int,
            default: "1000",
            doc: "rows of one INSERT statement with load = multi-insert (at most 32767)",
        },
        OptionSpec {
            name: "types",
            kind: OptionKind::Enum(&["bytea", "text"]),
            default: "bytea",
            doc: "column types; text (COLLATE \"C\") needs UTF-8 keys and values without NUL",
        },
        OptionSpec {
            name: "table",
            kind: OptionKind::Text,
            default: "kvbench_kv",
            doc: "table name; kvbench drops it only if it carries kvbench's comment",
        },
        OptionSpec {
            name: "connection",
            kind: OptionKind::Enum(&["socket", "tcp"]),
            default: "socket",
            doc: "how the client reaches kvbench's server: its private Unix socket, or loopback TCP (127.0.0.1, a role with a generated password)",
        },
        OptionSpec {
            name: "prepared",
            kind: OptionKind::Bool,
            default: "true",
            doc: "one-row writes as statements prepared once per connection; false sends each with its SQL text, parsed and planned every time (a client that does not prepare)",
        },
        OptionSpec {
            name: "configure",
            kind: OptionKind::Bool,
            default: "true",
            doc: "apply `sync` (ALTER SYSTEM fsync + reload, SET synchronous_commit); false leaves the server as it is",
        },
    ],
    version: || {
        let server = process::first_line_of(&Path::new(PG_BIN).join("postgres"), &["--version"]);
        let server = if server.is_empty() { "postgresql-15 not installed".to_string() } else { server };
        format!("{server}; client: libpq {} (pq-sys 0.7.8) and postgres crate 0.19.9 (sync)", libpq::version())
    },
    available: || Ok(()),
    open,
    start_server: Some(start_server),
};

// ---------------------------------------------------------------------------------------------
// Server

/// The port of the socket-only server, which only names its socket file (`.s.PGSQL.PORT`).
const SOCKET_PORT: u16 = 5432;
/// The role a TCP client logs in as, with the password generated at the server's start.
const TCP_ROLE: &str = "kvbench_tcp";

fn start_server(dir: &Path) -> std::result::Result<Box<dyn RunningServer>, String> {
    let (server, _) = start(dir, false)?;
    Ok(Box::new(server))
}

/// The server of a row with `connection = "tcp"`: the same server with a TCP listener too,
/// named apart in the run's pool. None: the socket-only start serves the row.
pub fn shaped_server(options: &BTreeMap<String, serde_json::Value>) -> Option<(String, crate::ShapedStart)> {
    let tcp = options.get("connection").and_then(|v| v.as_str()) == Some("tcp");
    tcp.then(|| ("postgres-tcp".to_string(), Box::new(start_tcp) as crate::ShapedStart))
}

/// The environment variable that sets the TCP role's password (else one is generated): a test
/// plants a known secret through it, then looks for it in every output.
pub const PASSWORD_ENV: &str = "KVBENCH_PG_PASSWORD";

/// A private server that also listens on 127.0.0.1 at a free port, where only [`TCP_ROLE`]
/// may log in, with a password generated now (scram-sha-256).
fn start_tcp(dir: &Path) -> std::result::Result<Box<dyn RunningServer>, String> {
    let (server, port) = start(dir, true)?;
    let password = match std::env::var(PASSWORD_ENV) {
        Ok(p) if !p.is_empty() => p,
        _ => super::cluster::random_secret()?,
    };
    let tcp = TcpServer { socket: server, port, password };
    tcp.create_role()?;
    Ok(Box::new(tcp))
}

/// initdb, then the server on its private socket (and, with `tcp`, on a free loopback port,
/// retried when another process took it); returns the server and its port.
fn start(dir: &Path, tcp: bool) -> std::result::Result<(SocketServer, u16), String> {
    let bin = Path::new(PG_BIN);
    let postgres = bin.join("postgres");
    let initdb = bin.join("initdb");
    if !postgres.is_file() || !initdb.is_file() {
        return Err(format!(
            "PostgreSQL 15 not found ({} missing): apt-get install postgresql-15, or give --url postgres://USER@HOST:PORT/DB",
            postgres.display()
        ));
    }
    // PostgreSQL refuses to run as root: as root, kvbench runs it as the postgres user. The
    // socket's name carries the port: the longest one bounds the path.
    let home = SocketHome::new(dir, "postgres", ".s.PGSQL.65535", &["postgres"])?;
    let (run_as, log, data) = (home.user, &home.log, home.dir.join("data"));
    std::fs::File::create(log).map_err(|e| format!("postgres: cannot create {}: {e}", log.display()))?;
    // Local (socket) connections only, and only through the private directory; TCP refused
    // unless `tcp` opens it to one role below.
    let init_args: Vec<String> = [
        "-D",
        &data.to_string_lossy(),
        "-U",
        "postgres",
        "--auth-local=trust",
        "--auth-host=reject",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    process::run_to_completion_as("initdb", &initdb, &init_args, log, run_as)?;
    if tcp {
        write_hba(&data)?;
    }
    let (proc, port) = if tcp {
        process::with_free_port(|port| spawn(&home, &data, Some(port)).map(|p| (p, port)))?
    } else {
        (spawn(&home, &data, None)?, SOCKET_PORT)
    };
    let version = process::first_line_of(&postgres, &["--version"]);
    // Each job sets these from its `sync` in its prepare step (the row's own `fsync` and
    // `synchronous_commit` settings); a value read from the server would be the previous row's.
    let facts = [
        ("fsync", "per row, from sync (ALTER SYSTEM + reload in prepare)".into()),
        ("synchronous_commit", "per row, from sync (SET per connection)".into()),
        ("data_dir", data.display().to_string()),
    ];
    let url = pg_url(home.sockets.path(), port);
    let server = SocketServer::new(proc, home, url, ["postgres".into(), version], &facts);
    Ok((server.with_live_info(server_settings), port))
}

/// pg_hba.conf of a server with a TCP listener: the socket as before (trust, reachable by
/// kvbench alone), and from 127.0.0.1 only [`TCP_ROLE`] with its scram-sha-256 password.
fn write_hba(data: &Path) -> std::result::Result<(), String> {
    let hba = data.join("pg_hba.conf");
    let text = format!(
        "# written by kvbench: the private socket, and {TCP_ROLE} over loopback TCP with its password\n\
         local all all trust\n\
         local replication all trust\n\
         host postgres {TCP_ROLE} 127.0.0.1/32 scram-sha-256\n"
    );
    std::fs::write(&hba, text).map_err(|e| format!("postgres: cannot write {}: {e}", hba.display()))
}

/// Spawn the postmaster on `data` (with a TCP listener on 127.0.0.1:`tcp`) and wait until its
/// socket answers.
fn spawn(home: &SocketHome, data: &Path, tcp: Option<u16>) -> std::result::Result<ServerProcess, String> {
    let postgres = Path::new(PG_BIN).join("postgres");
    let port = tcp.unwrap_or(SOCKET_PORT);
    let listen = if tcp.is_some() { "127.0.0.1" } else { "" };
    // fsync and synchronous_commit stay at their defaults (on) and out of the command line,
    // where they would override the ALTER SYSTEM that each job uses to apply its `sync`.
    let args: Vec<String> = vec![
        "-D".into(),
        data.to_string_lossy().into_owned(),
        "-p".into(),
        port.to_string(),
        "-c".into(),
        format!("listen_addresses={listen}"),
        "-c".into(),
        format!("unix_socket_directories={}", home.sockets.path().display()),
        "-c".into(),
        "unix_socket_permissions=0700".into(),
        "-c".into(),
        "max_connections=200".into(),
        "-c".into(),
        "logging_collector=off".into(),
    ];
    let mut proc = ServerProcess::spawn_with("postgres", &postgres, &args, &home.log, home.user, libc::SIGINT)?;
    let url = pg_url(home.sockets.path(), port);
    proc.wait_ready(process::START_TIMEOUT, || {
        let mut c = probe_config(&url)?.connect(NoTls).map_err(|e| e.to_string())?;
        c.simple_query("SELECT 1").map(|_| ()).map_err(|e| e.to_string())
    })?;
    // Fast shutdown (SIGINT) instead of SIGTERM's "smart" one, which waits for every client.
    let pid = proc.pid();
    proc.set_polite_stop(libc::SIGINT, Some(pid));
    Ok(proc)
}

fn probe_config(url: &str) -> std::result::Result<Config, String> {
    let mut cfg: Config = url.parse().map_err(|e: ::postgres::Error| e.to_string())?;
    cfg.connect_timeout(Duration::from_secs(1));
    Ok(cfg)
}

/// Connection string for the server's socket directory (key=value form: any path quotes).
fn pg_url(socket_dir: &Path, port: u16) -> String {
    let quoted = socket_dir.to_string_lossy().replace('\\', "\\\\").replace('\'', "\\'");
    format!("host='{quoted}' port={port} user=postgres dbname=postgres")
}

/// kvbench's server with its TCP listener: jobs get the TCP url and the role's password.
struct TcpServer {
    socket: SocketServer,
    port: u16,
    password: String,
}

impl TcpServer {
    /// Create [`TCP_ROLE`] over the socket, with what a job needs: the table in `public`,
    /// `fsync` (ALTER SYSTEM + reload), CHECKPOINT. Only the password's scram-sha-256 verifier
    /// is sent, so the password reaches no server log; then one login over TCP proves it.
    fn create_role(&self) -> std::result::Result<(), String> {
        let verifier = postgres_protocol::password::scram_sha_256(self.password.as_bytes());
        let mut c = Client::connect(&self.socket.url(), NoTls).map_err(|e| format!("postgres: {e}"))?;
        c.batch_execute(&format!(
            "CREATE ROLE {TCP_ROLE} LOGIN PASSWORD '{verifier}';\
             GRANT CREATE ON SCHEMA public TO {TCP_ROLE};\
             GRANT pg_checkpoint TO {TCP_ROLE};\
             GRANT ALTER SYSTEM ON PARAMETER fsync TO {TCP_ROLE};\
             GRANT EXECUTE ON FUNCTION pg_reload_conf() TO {TCP_ROLE};"
        ))
        .map_err(|e| format!("postgres: creating the TCP role {TCP_ROLE}: {e}"))?;
        let mut cfg = probe_config(&self.url())?;
        cfg.password(&self.password);
        let mut tcp = cfg.connect(NoTls).map_err(|e| format!("postgres: logging in over TCP as {TCP_ROLE}: {e}"))?;
        tcp.simple_query("SELECT 1").map(|_| ()).map_err(|e| format!("postgres: over TCP: {e}"))
    }
}

impl RunningServer for TcpServer {
    fn url(&self) -> String {
        format!("host=127.0.0.1 port={} user={TCP_ROLE} dbname=postgres", self.port)
    }

    fn info(&self) -> BTreeMap<String, String> {
        let mut m = self.socket.info();
        m.insert(
            "access".into(),
            format!(
                "TCP on 127.0.0.1:{} for role {TCP_ROLE} only (scram-sha-256, a password generated at start), \
                 and the Unix socket in a directory private to the server",
                self.port
            ),
        );
        m
    }

    fn token(&self) -> Option<String> {
        Some(self.password.clone())
    }

    fn process_groups(&self) -> Vec<i32> {
        self.socket.process_groups()
    }

    fn stop(self: Box<Self>) -> std::result::Result<(), String> {
        Box::new(self.socket).stop()
    }
}

/// The server settings that matter for the numbers, as the running server reports them.
fn server_settings(url: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Ok(mut c) = Client::connect(url, NoTls) {
        for name in ["shared_buffers", "wal_level", "max_connections", "checkpoint_timeout", "max_wal_size"] {
            if let Ok(rows) = c.query(&format!("SHOW {name}"), &[]) {
                if let Some(v) = rows.first().and_then(|r| r.try_get::<_, String>(0).ok()) {
                    m.insert(name.into(), v);
                }
            }
        }
    }
    m
}

// ---------------------------------------------------------------------------------------------
// Parameters and results: raw bytes for both bytea and text columns.

/// A parameter sent as its raw bytes; accepted for bytea and text columns (the server checks
/// that text is valid UTF-8 without NUL).
#[derive(Debug, Clone, Copy)]
struct Bin<'a>(&'a [u8]);

impl ToSql for Bin<'_> {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, Box<dyn StdError + Sync + Send>> {
        out.extend_from_slice(self.0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::BYTEA | Type::TEXT | Type::VARCHAR)
    }

    ::postgres::types::to_sql_checked!();
}

/// A column read as its raw bytes (bytea or text).
struct Raw<'a>(&'a [u8]);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> std::result::Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Raw(raw))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::BYTEA | Type::TEXT | Type::VARCHAR)
    }
}

fn pg(what: &str) -> impl Fn(::postgres::Error) -> EngineError + '_ {
    move |e| {
        let detail =
            e.as_db_error().map(|d| format!("{}: {}", d.code().code(), d.message())).unwrap_or_else(|| e.to_string());
        EngineError::Store(format!("postgres {what}: {detail}"))
    }
}

// ---------------------------------------------------------------------------------------------
// Engine

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Load {
    Insert,
    MultiInsert,
    CopyText,
    CopyBinary,
}

/// A writer connection's prepared statements and COPY buffer.
struct Stmts {
    insert: Statement,
    upsert: Statement,
    delete: Statement,
    multi: HashMap<usize, Statement>,
    copy_buf: Vec<u8>,
}

struct ReadConn {
    client: Client,
    get: Statement,
    mget: Statement,
    scan_from: Statement,
    scan_all: Statement,
}

pub struct Postgres {
    config: Config,
    table: String,
    text: bool,
    load: Load,
    rows_per_insert: usize,
    /// One-row writes as prepared statements (else sent with their SQL text every time).
    prepared_writes: bool,
    sync_commit: Option<&'static str>,
    /// True until finish_load, when the table was empty after the prepare step.
    loading: AtomicBool,
    /// The writer's connection, with its statements once the table is in place.
    writer: Mutex<(Client, Option<Stmts>)>,
    pool: Mutex<Vec<ReadConn>>,
    /// One-row and COPY writers' connections, kept across phases as the readers' are, and one
    /// made by `setup`: connecting (a TCP login hashes the password) is never inside a timed
    /// phase, as the article's client connected before its timer.
    spare: Mutex<Vec<LibWriter>>,
    settings: Mutex<BTreeMap<String, String>>,
    setup: Setup,
    /// Set once the job's server state is in place (by `prepare`, or on first use).
    prepared: AtomicBool,
}

/// What `prepare` applies: durability, the job's table and a settled server.
struct Setup {
    configure: bool,
    fsync: &'static str,
    /// Exists once this job created its table (a reopen keeps the data).
    marker: PathBuf,
}

fn valid_ident(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn show(c: &mut Client, name: &str) -> String {
    c.query_one(&format!("SHOW {name}"), &[]).ok().and_then(|r| r.try_get::<_, String>(0).ok()).unwrap_or_default()
}

fn connect(config: &Config, sync_commit: Option<&str>) -> Result<Client> {
    let mut c = config.connect(NoTls).map_err(pg("connect"))?;
    if let Some(v) = sync_commit {
        c.batch_execute(&format!("SET synchronous_commit = {v}")).map_err(pg("SET synchronous_commit"))?;
    }
    Ok(c)
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let url = args.url.ok_or_else(|| {
        EngineError::Option(
            "postgres needs a server: kvbench starts one, or give --url postgres://USER@HOST:PORT/DB".into(),
        )
    })?;
    let mut config: Config = url.parse().map_err(|e| EngineError::Option(format!("postgres url `{url}`: {e}")))?;
    config.connect_timeout(Duration::from_secs(10));
    let o = args.options;
    if o.text("connection").as_deref() == Some("tcp") && !on_tcp(&config) {
        return Err(EngineError::Option(format!(
            "postgres option connection = \"tcp\": the url `{url}` reaches a Unix socket; give a TCP url (host=127.0.0.1 ...) or leave connection at \"socket\""
        )));
    }
    if let Some(t) = args.token {
        config.password(t);
    }
    let table = o.text("table").unwrap_or_else(|| "kvbench_kv".into());
    if !valid_ident(&table) {
        return Err(EngineError::Option(format!(
            "postgres table `{table}`: use lower-case letters, digits and _ (≤ 63 bytes)"
        )));
    }
    let text = o.text("types").as_deref() == Some("text");
    let load = match o.text("load").as_deref() {
        Some("multi-insert") => Load::MultiInsert,
        Some("copy-text") => Load::CopyText,
        Some("copy-binary") => Load::CopyBinary,
        _ => Load::Insert,
    };
    let rows_per_insert = o.int("rows_per_insert").unwrap_or(1000).clamp(1, 32767) as usize;
    let configure = o.bool("configure");
    let prepared_writes = o.bool("prepared");
    let (fsync, sync_commit) = match args.sync {
        SyncMode::None => ("off", "off"),
        SyncMode::Commit | SyncMode::Always => ("on", "on"),
    };
    let sync_commit = configure.then_some(sync_commit);
    let mut c = connect(&config, sync_commit)?;
    let mut settings = describe(&config, url, &table, text, load, rows_per_insert);
    settings.insert(
        "one-row writes".into(),
        if prepared_writes {
            "prepared once per connection"
        } else {
            "sent with their SQL text, parsed and planned every time"
        }
        .into(),
    );
    read_settings(&mut c, &mut settings);
    let setup = Setup { configure, fsync, marker: process::job_marker(args.dir, "postgres") };
    let prepared = setup.marker.exists();
    let (writer, empty) = if prepared { prepare_writer(&mut c, &table)? } else { (None, false) };
    Ok(Box::new(Postgres {
        config,
        table,
        text,
        load,
        rows_per_insert,
        prepared_writes,
        sync_commit,
        loading: AtomicBool::new(empty),
        writer: Mutex::new((c, writer)),
        pool: Mutex::new(Vec::new()),
        spare: Mutex::new(Vec::new()),
        settings: Mutex::new(settings),
        setup,
        prepared: AtomicBool::new(prepared),
    }))
}

/// What the engine does, for the result file (the server's values come from [`read_settings`]).
fn describe(
    config: &Config,
    url: &str,
    table: &str,
    text: bool,
    load: Load,
    rows_per_insert: usize,
) -> BTreeMap<String, String> {
    let mut settings = BTreeMap::new();
    settings.insert("url".into(), url.to_string());
    settings.insert(
        "access".into(),
        match (on_tcp(config), config.get_password().is_some()) {
            (false, _) => "Unix socket".into(),
            (true, true) => "TCP with a password".into(),
            (true, false) => "TCP as given by --url / row url (the server's own authentication)".into(),
        },
    );
    settings.insert("connection".into(), connection(config));
    let statements = format!("libpq {} (pq-sys 0.7.8)", libpq::version());
    let client = match load {
        Load::MultiInsert => format!("postgres crate 0.19.9 for the load; {statements} for later writes"),
        _ => format!("{statements} for every write"),
    };
    settings.insert("client".into(), format!("{client}; postgres crate 0.19.9 for reads"));
    settings
        .insert("table".into(), format!("{table} (k {t} PRIMARY KEY, v {t})", t = if text { "text" } else { "bytea" }));
    settings.insert(
        "load".into(),
        match load {
            Load::Insert => "one INSERT per row, one transaction per batch".into(),
            Load::MultiInsert => format!("INSERT of {rows_per_insert} rows per statement, one transaction per batch"),
            Load::CopyText => "COPY FROM STDIN (text format), one COPY per batch".into(),
            Load::CopyBinary => "COPY FROM STDIN (binary format), one COPY per batch".into(),
        },
    );
    settings
        .insert("later writes".into(), "INSERT .. ON CONFLICT DO UPDATE / DELETE, one transaction per batch".into());
    settings
        .insert("readers".into(), "one connection per reader thread; get and multi-get are prepared statements".into());
    settings
}

/// Does the client reach the server over TCP (its first host a name or address)?
fn on_tcp(config: &Config) -> bool {
    matches!(config.get_hosts().first(), Some(::postgres::config::Host::Tcp(_)))
}

/// Which connection the client uses, for the row's settings: `TCP HOST:PORT` or
/// `Unix socket DIR/.s.PGSQL.PORT`.
fn connection(config: &Config) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(::postgres::config::Host::Tcp(h)) => format!("TCP {h}:{port}"),
        Some(::postgres::config::Host::Unix(dir)) => format!("Unix socket {}/.s.PGSQL.{port}", dir.display()),
        None => format!("Unix socket (libpq's default directory), port {port}"),
    }
}

/// The server's settings that matter for the numbers, read back with SHOW.
fn read_settings(c: &mut Client, settings: &mut BTreeMap<String, String>) {
    for name in [
        "server_version",
        "fsync",
        "synchronous_commit",
        "full_page_writes",
        "wal_level",
        "wal_sync_method",
        "shared_buffers",
        "max_wal_size",
    ] {
        settings.insert(name.into(), show(c, name));
    }
    let durability = match (settings["fsync"].as_str(), settings["synchronous_commit"].as_str()) {
        ("on", "on") => "each transaction (batch, or COPY) is durable when COMMIT returns".into(),
        ("off", _) => "NONE: fsync=off, a machine crash can corrupt the database".into(),
        (_, sc) => format!("synchronous_commit={sc}: the last transactions may be lost on a crash"),
    };
    settings.insert("durability".into(), durability);
}

/// Set `fsync` with ALTER SYSTEM and wait until a new session sees the reload.
fn apply_fsync(c: &mut Client, config: &Config, fsync: &str) -> Result<()> {
    if show(c, "fsync") == fsync {
        return Ok(());
    }
    c.batch_execute(&format!("ALTER SYSTEM SET fsync = {fsync}"))
        .map_err(|e| pg("ALTER SYSTEM SET fsync (needs a superuser; or set option configure=false)")(e))?;
    c.batch_execute("SELECT pg_reload_conf()").map_err(pg("pg_reload_conf"))?;
    let t0 = Instant::now();
    loop {
        let mut probe = connect(config, None)?;
        if show(&mut probe, "fsync") == fsync {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(EngineError::Store(format!("postgres: fsync still not {fsync} 10 s after the reload")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Drop kvbench's earlier table of this name (only one carrying kvbench's comment) and create
/// it fresh. Returns a note when something was dropped.
fn fresh_table(c: &mut Client, table: &str, text: bool) -> Result<Option<String>> {
    let existing = c
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL, coalesce(obj_description(to_regclass($1), 'pg_class'), '')",
            &[&table],
        )
        .map_err(pg("look up the table"))?;
    let (exists, comment): (bool, String) = (existing.get(0), existing.get(1));
    let mut note = None;
    if exists {
        if comment != TABLE_COMMENT {
            return Err(EngineError::Store(format!(
                "postgres: table {table} exists and was not created by kvbench; choose another with option table=..."
            )));
        }
        c.batch_execute(&format!("DROP TABLE {table}")).map_err(pg("drop kvbench's earlier table"))?;
        note = Some(format!("dropped kvbench's earlier table {table}"));
    }
    let (kt, vt) = if text { ("text COLLATE \"C\"", "text") } else { ("bytea", "bytea") };
    c.batch_execute(&format!(
        "CREATE TABLE {table} (k {kt} PRIMARY KEY, v {vt}); COMMENT ON TABLE {table} IS '{TABLE_COMMENT}'"
    ))
    .map_err(pg("create the table"))?;
    Ok(note)
}

/// How long the WAL position must stay still to count as settled, and the limit of the wait.
const WAL_QUIET: Duration = Duration::from_millis(200);
const WAL_SETTLE_LIMIT: Duration = Duration::from_secs(60);

/// CHECKPOINT, then wait until the WAL insert position stops moving (no background writes
/// left from the previous row), so every load method starts from the same server state.
/// Returns what was done, for the result.
fn checkpoint_and_settle(c: &mut Client) -> String {
    let t0 = Instant::now();
    if let Err(e) = c.batch_execute("CHECKPOINT") {
        return format!("CHECKPOINT failed ({e}): the server state before this row is not controlled");
    }
    let lsn = |c: &mut Client| -> Option<String> {
        c.query_one("SELECT pg_current_wal_insert_lsn()::text", &[]).ok().and_then(|r| r.try_get(0).ok())
    };
    let mut last = lsn(c);
    let mut still = Instant::now();
    while still.elapsed() < WAL_QUIET && t0.elapsed() < WAL_SETTLE_LIMIT {
        std::thread::sleep(Duration::from_millis(50));
        let now = lsn(c);
        if now != last {
            last = now;
            still = Instant::now();
        }
    }
    let settled = still.elapsed() >= WAL_QUIET;
    format!(
        "CHECKPOINT, then WAL {} (position {}, still for {} ms) in {:.2} s before the first timed step",
        if settled { "settled" } else { "still moving after the limit" },
        last.unwrap_or_else(|| "?".into()),
        WAL_QUIET.as_millis(),
        t0.elapsed().as_secs_f64()
    )
}

impl Postgres {
    /// The job's server state: `sync` applied (ALTER SYSTEM + reload wait), on the first open
    /// of a job a fresh table, then CHECKPOINT and a settled WAL. Untimed when called through
    /// `Engine::prepare`; a caller that skips it gets it on first use.
    fn setup(&self) -> Result<()> {
        if self.prepared.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut w = self.writer.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let mut settings = self.settings.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let c = &mut w.0;
        if self.setup.configure {
            apply_fsync(c, &self.config, self.setup.fsync)?;
        }
        if !self.setup.marker.exists() {
            if let Some(note) = fresh_table(c, &self.table, self.text)? {
                settings.insert("notes".into(), note);
            }
            std::fs::write(&self.setup.marker, &self.table)?;
        }
        settings.insert("server_state".into(), checkpoint_and_settle(c));
        read_settings(c, &mut settings);
        let (writer, empty) = prepare_writer(c, &self.table)?;
        w.1 = writer;
        self.loading.store(empty, Ordering::Relaxed);
        // Readers prepared before the table was replaced would point at the old one.
        self.pool.lock().map_err(|_| EngineError::store("lock poisoned"))?.clear();
        let mut spare = self.spare.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        spare.clear();
        if self.load != Load::MultiInsert {
            spare.push(LibWriter::connect(self)?);
        }
        drop(spare);
        self.prepared.store(true, Ordering::Release);
        Ok(())
    }
}

/// The writer's statements, and whether the table is empty (the load may then use its method).
fn prepare_writer(client: &mut Client, table: &str) -> Result<(Option<Stmts>, bool)> {
    let stmts = prepare_stmts(client, table)?;
    let empty: bool = client
        .query_one(&format!("SELECT NOT EXISTS (SELECT 1 FROM {table})"), &[])
        .map_err(pg("check the table"))?
        .get(0);
    Ok((Some(stmts), empty))
}

fn prepare_stmts(client: &mut Client, table: &str) -> Result<Stmts> {
    let insert = client.prepare(&format!("INSERT INTO {table} (k, v) VALUES ($1, $2)")).map_err(pg("prepare"))?;
    let upsert = client
        .prepare(&format!("INSERT INTO {table} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"))
        .map_err(pg("prepare"))?;
    let delete = client.prepare(&format!("DELETE FROM {table} WHERE k = $1")).map_err(pg("prepare"))?;
    Ok(Stmts { insert, upsert, delete, multi: HashMap::new(), copy_buf: Vec::new() })
}

fn run_one<G: ::postgres::GenericClient>(c: &mut G, put: &Statement, del: &Statement, op: &WriteOp<'_>) -> Result<()> {
    match op.value {
        Some(v) => insert_one(c, put, op.key, v),
        None => c.execute(del, &[&Bin(op.key)]).map(|_| ()).map_err(pg("DELETE")),
    }
}

fn insert_one<G: ::postgres::GenericClient>(c: &mut G, put: &Statement, k: &[u8], v: &[u8]) -> Result<()> {
    c.execute(put, &[&Bin(k), &Bin(v)]).map(|_| ()).map_err(pg("INSERT"))
}

/// The COPY data handed to the client library at a time: libpq's own send buffer size; larger
/// chunks measured no faster (docs/methodology.md, "psql and libpq beside kvbench").
const COPY_CHUNK: usize = 8 * 1024;

fn push_copy_text(buf: &mut Vec<u8>, b: &[u8], text: bool) {
    if text {
        for &c in b {
            match c {
                b'\\' => buf.extend_from_slice(b"\\\\"),
                b'\t' => buf.extend_from_slice(b"\\t"),
                b'\n' => buf.extend_from_slice(b"\\n"),
                b'\r' => buf.extend_from_slice(b"\\r"),
                _ => buf.push(c),
            }
        }
    } else {
        // bytea hex input `\x..`, its backslash escaped for COPY's text format.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        buf.extend_from_slice(b"\\\\x");
        for &c in b {
            buf.push(HEX[(c >> 4) as usize]);
            buf.push(HEX[(c & 15) as usize]);
        }
    }
}

/// A COPY's rows in COPY's text or binary format, handed to the server in chunks.
struct CopyRows<'b> {
    buf: &'b mut Vec<u8>,
    binary: bool,
    text: bool,
}

impl CopyRows<'_> {
    fn header(&mut self) {
        if self.binary {
            self.buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
            self.buf.extend_from_slice(&0i32.to_be_bytes()); // flags
            self.buf.extend_from_slice(&0i32.to_be_bytes()); // header extension length
        }
    }

    fn row(&mut self, k: &[u8], v: &[u8]) {
        if self.binary {
            self.buf.extend_from_slice(&2i16.to_be_bytes());
            self.buf.extend_from_slice(&(k.len() as i32).to_be_bytes());
            self.buf.extend_from_slice(k);
            self.buf.extend_from_slice(&(v.len() as i32).to_be_bytes());
            self.buf.extend_from_slice(v);
        } else {
            push_copy_text(self.buf, k, self.text);
            self.buf.push(b'\t');
            push_copy_text(self.buf, v, self.text);
            self.buf.push(b'\n');
        }
    }

    fn trailer(&mut self) {
        if self.binary {
            self.buf.extend_from_slice(&(-1i16).to_be_bytes());
        }
    }
}

/// A COPY's whole stream for `n` rows, row i derived by `row` as the chunk it belongs to is
/// built in `rows`' buffer, each chunk of about [`COPY_CHUNK`] bytes handed to `send`, so the
/// server parses one chunk while the next is derived.
fn copy_stream(
    rows: &mut CopyRows<'_>,
    n: usize,
    row: &mut RowFn<'_>,
    send: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    rows.buf.clear();
    rows.header();
    for i in 0..n {
        row(i, &mut k, &mut v);
        rows.row(&k, &v);
        if rows.buf.len() >= COPY_CHUNK {
            send(rows.buf)?;
            rows.buf.clear();
        }
    }
    rows.trailer();
    send(rows.buf)?;
    rows.buf.clear();
    Ok(())
}

impl Postgres {
    /// The COPY statement of this engine's load method.
    fn copy_sql(&self) -> String {
        let binary = if self.load == Load::CopyBinary { " (FORMAT binary)" } else { "" };
        format!("COPY {} (k, v) FROM STDIN{binary}", self.table)
    }

    fn copy_rows<'b>(&self, buf: &'b mut Vec<u8>) -> CopyRows<'b> {
        CopyRows { buf, binary: self.load == Load::CopyBinary, text: self.text }
    }

    /// One COPY of `n` rows through the postgres crate (the engine's shared connection).
    fn copy(&self, c: &mut Client, w: &mut Stmts, n: usize, row: &mut RowFn<'_>) -> Result<()> {
        let mut sink = c.copy_in(&self.copy_sql()).map_err(pg("COPY"))?;
        let mut send = |b: &[u8]| sink.write_all(b).map_err(EngineError::from);
        copy_stream(&mut self.copy_rows(&mut w.copy_buf), n, row, &mut send)?;
        sink.finish().map(|_| ()).map_err(pg("COPY"))
    }

    fn multi_insert(&self, c: &mut Client, w: &mut Stmts, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut tx = c.transaction().map_err(pg("BEGIN"))?;
        for chunk in batch.chunks(self.rows_per_insert) {
            let n = chunk.len();
            let stmt = match w.multi.get(&n) {
                Some(s) => s.clone(),
                None => {
                    let mut sql = format!("INSERT INTO {} (k, v) VALUES ", self.table);
                    for i in 0..n {
                        if i > 0 {
                            sql.push(',');
                        }
                        sql.push_str(&format!("(${}, ${})", 2 * i + 1, 2 * i + 2));
                    }
                    let s = tx.prepare(&sql).map_err(pg("prepare multi-row INSERT"))?;
                    w.multi.insert(n, s.clone());
                    s
                }
            };
            let vals: Vec<Bin<'_>> =
                chunk.iter().flat_map(|op| [Bin(op.key), Bin(op.value.unwrap_or_default())]).collect();
            let params: Vec<&(dyn ToSql + Sync)> = vals.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            tx.execute(&stmt, &params).map_err(pg("multi-row INSERT"))?;
        }
        tx.commit().map_err(pg("COMMIT"))
    }

    /// One statement per write (INSERT while loading, upsert/delete after), in one transaction
    /// per batch; a batch of one is a single autocommit statement.
    fn statements(&self, c: &mut Client, w: &mut Stmts, batch: &[WriteOp<'_>], loading: bool) -> Result<()> {
        let put = if loading { w.insert.clone() } else { w.upsert.clone() };
        let del = w.delete.clone();
        if batch.len() == 1 {
            return run_one(c, &put, &del, &batch[0]);
        }
        let mut tx = c.transaction().map_err(pg("BEGIN"))?;
        for op in batch {
            run_one(&mut tx, &put, &del, op)?;
        }
        tx.commit().map_err(pg("COMMIT"))
    }

    fn read_conn(&self) -> Result<ReadConn> {
        if let Some(c) = self.pool.lock().map_err(|_| EngineError::store("lock poisoned"))?.pop() {
            return Ok(c);
        }
        let mut client = connect(&self.config, self.sync_commit)?;
        let t = &self.table;
        let get = client.prepare(&format!("SELECT v FROM {t} WHERE k = $1")).map_err(pg("prepare"))?;
        let mget = client.prepare(&format!("SELECT k, v FROM {t} WHERE k = ANY($1)")).map_err(pg("prepare"))?;
        let scan_from = client
            .prepare(&format!("SELECT k, v FROM {t} WHERE k >= $1 ORDER BY k LIMIT $2"))
            .map_err(pg("prepare"))?;
        let scan_all = client.prepare(&format!("SELECT k, v FROM {t} ORDER BY k LIMIT $1")).map_err(pg("prepare"))?;
        Ok(ReadConn { client, get, mget, scan_from, scan_all })
    }
}

impl Postgres {
    /// Apply `batch` on connection `c` with its statements `w`: while the table is being
    /// loaded, the load method; otherwise one statement per write.
    fn write_on(&self, c: &mut Client, w: &mut Stmts, batch: &[WriteOp<'_>]) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let loading = self.loading.load(Ordering::Relaxed) && batch.iter().all(|op| op.value.is_some());
        match (loading, self.load) {
            (true, Load::CopyText | Load::CopyBinary) => self.copy(c, w, batch.len(), &mut batch_rows(batch)),
            (true, Load::MultiInsert) => self.multi_insert(c, w, batch),
            (loading, _) => self.statements(c, w, batch, loading),
        }
    }
}

/// The names of a libpq writer's prepared statements: INSERT, upsert, DELETE.
const STATEMENTS: [&CStr; 3] = [c"kvbench_insert", c"kvbench_upsert", c"kvbench_delete"];

fn lib(what: &str) -> impl Fn(String) -> EngineError + '_ {
    move |e| EngineError::Store(format!("postgres {what}: {e}"))
}

/// libpq's connection keywords for `config` (what the postgres crate parsed from the url).
fn lib_params(config: &Config) -> Vec<(&'static str, String)> {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            ::postgres::config::Host::Tcp(name) => name.clone(),
            ::postgres::config::Host::Unix(dir) => dir.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(|p| p.to_string()).collect();
    let mut p = vec![("host", hosts.join(",")), ("port", ports.join(","))];
    if let Some(u) = config.get_user() {
        p.push(("user", u.to_string()));
    }
    if let Some(d) = config.get_dbname() {
        p.push(("dbname", d.to_string()));
    }
    if let Some(pw) = config.get_password() {
        p.push(("password", String::from_utf8_lossy(pw).into_owned()));
    }
    if let Some(t) = config.get_connect_timeout() {
        p.push(("connect_timeout", t.as_secs().max(1).to_string()));
    }
    p
}

/// A writer connection through libpq: one statement per write, prepared once, or sent with its
/// SQL text each time (`sql`: INSERT, upsert, DELETE) when the row's `prepared` is false.
struct LibWriter {
    conn: libpq::Conn,
    sql: Option<Box<[CString; 3]>>,
}

impl LibWriter {
    fn connect(e: &Postgres) -> Result<LibWriter> {
        let mut conn = libpq::Conn::connect(&lib_params(&e.config)).map_err(lib("connect (libpq)"))?;
        if let Some(v) = e.sync_commit {
            conn.exec(&format!("SET synchronous_commit = {v}")).map_err(lib("SET synchronous_commit"))?;
        }
        let t = &e.table;
        let sql = [
            format!("INSERT INTO {t} (k, v) VALUES ($1, $2)"),
            format!("INSERT INTO {t} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"),
            format!("DELETE FROM {t} WHERE k = $1"),
        ];
        if !e.prepared_writes {
            let sql = sql.map(|s| CString::new(s).expect("table names are checked identifiers"));
            return Ok(LibWriter { conn, sql: Some(Box::new(sql)) });
        }
        for ((name, sql), n) in STATEMENTS.into_iter().zip(&sql).zip([2, 2, 1]) {
            conn.prepare(name, sql, n).map_err(lib("prepare"))?;
        }
        Ok(LibWriter { conn, sql: None })
    }

    /// One write: INSERT while loading, else upsert; DELETE for a delete.
    fn one(&mut self, loading: bool, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        match value {
            Some(v) if loading => self.exec(0, [key, v]).map_err(lib("INSERT")),
            Some(v) => self.exec(1, [key, v]).map_err(lib("INSERT .. ON CONFLICT")),
            None => self.exec(2, [key]).map_err(lib("DELETE")),
        }
    }

    /// Statement `i` (INSERT, upsert, DELETE): prepared, or sent with its SQL text.
    fn exec<const N: usize>(&mut self, i: usize, params: [&[u8]; N]) -> std::result::Result<(), String> {
        match &self.sql {
            Some(sql) => self.conn.exec_params(&sql[i], params),
            None => self.conn.exec_prepared(STATEMENTS[i], params),
        }
    }

    /// `body` between BEGIN and COMMIT (ROLLBACK when it fails).
    fn transaction(&mut self, body: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        self.conn.exec("BEGIN").map_err(lib("BEGIN"))?;
        match body(self) {
            Ok(()) => self.conn.exec("COMMIT").map_err(lib("COMMIT")),
            Err(e) => {
                let _ = self.conn.exec("ROLLBACK");
                Err(e)
            }
        }
    }

    /// One statement per write, in one transaction per batch; a batch of one is a single
    /// autocommit statement.
    fn write(&mut self, batch: &[WriteOp<'_>], loading: bool) -> Result<()> {
        match batch {
            [] => Ok(()),
            [op] => self.one(loading, op.key, op.value),
            _ => self.transaction(|w| batch.iter().try_for_each(|op| w.one(loading, op.key, op.value))),
        }
    }

    /// One COPY (`sql`) of `n` rows built in `rows` as they go out.
    fn copy(&mut self, sql: &str, rows: &mut CopyRows<'_>, n: usize, row: &mut RowFn<'_>) -> Result<()> {
        let body = |c: &mut libpq::CopyIn<'_>| {
            let mut send = |b: &[u8]| c.send(b).map_err(lib("COPY"));
            copy_stream(rows, n, row, &mut send)
        };
        self.conn.copy_in(sql, body).map_err(lib("COPY"))?
    }

    /// `n` new rows, one INSERT each, row i derived just before its statement; one transaction
    /// (a single row is one autocommit statement).
    fn insert_rows(&mut self, n: usize, row: &mut RowFn<'_>) -> Result<()> {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let mut insert = |w: &mut Self, i: usize| {
            row(i, &mut k, &mut v);
            w.one(true, &k, Some(&v))
        };
        if n == 1 {
            return insert(self, 0);
        }
        self.transaction(|w| (0..n).try_for_each(|i| insert(w, i)))
    }
}

/// A thread's write connection: the postgres crate's for a multi-row INSERT load, libpq's for
/// a COPY load and one statement per write.
enum WriteConn {
    Bulk(Box<(Client, Stmts)>),
    Lib(LibWriter),
}

/// One thread's writes on its own connection.
struct PgWriter<'a> {
    /// Taken only by drop, which gives an idle libpq connection back to the engine.
    conn: Option<WriteConn>,
    engine: &'a Postgres,
    /// The COPY chunk buffer, reused from one COPY to the next.
    copy_buf: Vec<u8>,
}

/// Row i of `batch`, for a COPY of a batch already derived.
fn batch_rows<'b>(batch: &'b [WriteOp<'_>]) -> impl FnMut(usize, &mut Vec<u8>, &mut Vec<u8>) + 'b {
    |i, k, v| {
        let op = &batch[i];
        k.clear();
        k.extend_from_slice(op.key);
        v.clear();
        v.extend_from_slice(op.value.unwrap_or_default());
    }
}

impl Postgres {
    /// Does the load use COPY (while the table is being loaded)?
    fn copies(&self) -> bool {
        matches!(self.load, Load::CopyText | Load::CopyBinary)
    }
}

impl Writer for PgWriter<'_> {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        let e = self.engine;
        let loading = e.loading.load(Ordering::Relaxed) && batch.iter().all(|op| op.value.is_some());
        match self.conn.as_mut().expect("a writer has its connection until dropped") {
            WriteConn::Bulk(b) => e.write_on(&mut b.0, &mut b.1, batch),
            WriteConn::Lib(_) if loading && e.copies() && !batch.is_empty() => {
                self.write_rows(batch.len(), &mut batch_rows(batch))
            }
            WriteConn::Lib(l) => l.write(batch, loading),
        }
    }

    /// While the table is being loaded by COPY or one-row INSERTs: rows are built as they are
    /// sent, never all at once before the first one goes out.
    fn streams_rows(&self) -> bool {
        self.engine.loading.load(Ordering::Relaxed) && (self.engine.copies() || self.engine.load == Load::Insert)
    }

    fn write_rows(&mut self, n: usize, row: &mut RowFn<'_>) -> Result<()> {
        let e = self.engine;
        match self.conn.as_mut().expect("a writer has its connection until dropped") {
            WriteConn::Bulk(_) => {
                Err(EngineError::Unsupported("streamed load batches with load = multi-insert".into()))
            }
            WriteConn::Lib(l) if e.copies() => l.copy(&e.copy_sql(), &mut e.copy_rows(&mut self.copy_buf), n, row),
            WriteConn::Lib(l) => l.insert_rows(n, row),
        }
    }
}

impl Drop for PgWriter<'_> {
    fn drop(&mut self) {
        if let (Some(WriteConn::Lib(w)), Ok(mut spare)) = (self.conn.take(), self.engine.spare.lock()) {
            if w.conn.idle() {
                spare.push(w);
            }
        }
    }
}

impl Engine for Postgres {
    /// Callers without a thread of their own (the worker gives each thread a writer) share
    /// the engine's connection.
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.setup()?;
        let mut guard = self.writer.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        let (c, w) = &mut *guard;
        let w = w.as_mut().ok_or_else(|| EngineError::store("postgres: the table is not prepared"))?;
        self.write_on(c, w, batch)
    }

    fn writer(&self) -> Result<Option<Box<dyn Writer + '_>>> {
        self.setup()?;
        let bulk = self.loading.load(Ordering::Relaxed) && self.load == Load::MultiInsert;
        let conn = if bulk {
            let mut client = connect(&self.config, self.sync_commit)?;
            let stmts = prepare_stmts(&mut client, &self.table)?;
            WriteConn::Bulk(Box::new((client, stmts)))
        } else {
            let spare = self.spare.lock().map_err(|_| EngineError::store("lock poisoned"))?.pop();
            WriteConn::Lib(match spare {
                Some(w) => w,
                None => LibWriter::connect(self)?,
            })
        };
        Ok(Some(Box::new(PgWriter { conn: Some(conn), engine: self, copy_buf: Vec::new() })))
    }

    fn prepare(&mut self) -> Result<()> {
        self.prepared.store(false, Ordering::Release);
        self.setup()
    }

    fn finish_load(&mut self) -> Result<()> {
        self.loading.store(false, Ordering::Relaxed);
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        self.setup()?;
        Ok(Box::new(PgReader { conn: Some(self.read_conn()?), engine: self }))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

struct PgReader<'a> {
    conn: Option<ReadConn>,
    engine: &'a Postgres,
}

impl Drop for PgReader<'_> {
    fn drop(&mut self) {
        if let (Some(c), Ok(mut pool)) = (self.conn.take(), self.engine.pool.lock()) {
            if !c.client.is_closed() {
                pool.push(c);
            }
        }
    }
}

impl Reader for PgReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let c = self.conn.as_mut().expect("reader has a connection");
        out.clear();
        match c.client.query_opt(&c.get, &[&Bin(key)]).map_err(pg("SELECT"))? {
            Some(row) => {
                let v: Raw<'_> = row.try_get(0).map_err(pg("SELECT"))?;
                out.extend_from_slice(v.0);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        let c = self.conn.as_mut().expect("reader has a connection");
        out.clear();
        let params: Vec<Bin<'_>> = keys.iter().map(|k| Bin(k)).collect();
        let rows = c.client.query(&c.mget, &[&params]).map_err(pg("SELECT .. ANY"))?;
        let mut found: HashMap<&[u8], &[u8]> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let k: Raw<'_> = row.try_get(0).map_err(pg("SELECT .. ANY"))?;
            let v: Raw<'_> = row.try_get(1).map_err(pg("SELECT .. ANY"))?;
            found.insert(k.0, v.0);
        }
        out.extend(keys.iter().map(|k| found.get(k).map(|v| v.to_vec())));
        Ok(())
    }

    fn scan(
        &mut self,
        start: Option<&[u8]>,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let c = self.conn.as_mut().expect("reader has a connection");
        let limit: Option<i64> = if limit >= i64::MAX as usize { None } else { Some(limit as i64) };
        let mut rows = match start {
            Some(s) => {
                let p: [&(dyn ToSql + Sync); 2] = [&Bin(s), &limit];
                c.client.query_raw(&c.scan_from, p).map_err(pg("scan"))?
            }
            None => {
                let p: [&(dyn ToSql + Sync); 1] = [&limit];
                c.client.query_raw(&c.scan_all, p).map_err(pg("scan"))?
            }
        };
        let mut n = 0;
        while let Some(row) = rows.next().map_err(pg("scan"))? {
            let k: Raw<'_> = row.try_get(0).map_err(pg("scan"))?;
            let v: Raw<'_> = row.try_get(1).map_err(pg("scan"))?;
            n += 1;
            if !visit(k.0, v.0) {
                break;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_text_escapes() {
        let mut b = Vec::new();
        push_copy_text(&mut b, b"a\tb\\c\nd", true);
        assert_eq!(b, br"a\tb\\c\nd");
        b.clear();
        push_copy_text(&mut b, &[0, 0xff], false);
        assert_eq!(b, br"\\x00ff");
    }

    #[test]
    fn a_bad_connection_names_the_option_and_its_values() {
        let given = [("connection".to_string(), serde_json::json!("udp"))].into();
        let e = Options::parse("postgres", DESCRIPTOR.options, &given).expect_err("udp is refused");
        assert!(e.contains("`connection`") && e.contains("socket, tcp"), "{e}");
    }

    #[test]
    fn tcp_rows_get_a_server_of_their_own_shape() {
        let tcp = [("connection".to_string(), serde_json::json!("tcp"))].into();
        assert_eq!(shaped_server(&tcp).map(|(name, _)| name).as_deref(), Some("postgres-tcp"));
        let socket = [("connection".to_string(), serde_json::json!("socket"))].into();
        assert!(shaped_server(&socket).is_none() && shaped_server(&BTreeMap::new()).is_none());
    }

    #[test]
    fn libpq_gets_the_urls_host_port_user_and_password() {
        let mut c: Config = "host=127.0.0.1 port=5999 user=kvbench_tcp dbname=postgres".parse().unwrap();
        c.password("pw").connect_timeout(Duration::from_secs(10));
        let p = lib_params(&c);
        for kv in [("host", "127.0.0.1"), ("port", "5999"), ("user", "kvbench_tcp"), ("password", "pw")] {
            assert!(p.iter().any(|(k, v)| (*k, v.as_str()) == kv), "{kv:?} in {p:?}");
        }
        assert_eq!(connection(&c), "TCP 127.0.0.1:5999");
        let s: Config = "host='/tmp/x y' port=5432 user=postgres".parse().unwrap();
        assert_eq!(connection(&s), "Unix socket /tmp/x y/.s.PGSQL.5432");
        assert!(lib_params(&s).contains(&("host", "/tmp/x y".to_string())));
    }

    #[test]
    fn identifiers() {
        assert!(valid_ident("kvbench_kv"));
        assert!(!valid_ident("Kv"));
        assert!(!valid_ident("a;drop"));
        assert!(!valid_ident("1a"));
    }
}
