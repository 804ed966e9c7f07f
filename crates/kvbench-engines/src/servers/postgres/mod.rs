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
//!
//! The modules: [`server`] (starting the server), [`writer`] (writes and the load methods),
//! [`copy`] (the COPY stream), [`reader`] (reads).

mod copy;
mod reader;
mod server;
mod writer;

use copy::*;
use reader::*;
use server::*;
use writer::*;

pub use server::{shaped_server, PASSWORD_ENV};

use std::collections::{BTreeMap, HashMap};
use std::error::Error as StdError;
use std::ffi::{CStr, CString};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::types::{FromSql, IsNull, ToSql, Type};
use ::postgres::{Client, Config, NoTls, Statement};
use bytes::BytesMut;
use kvbench_model::engine::*;

use super::lifecycle::{self, ServerProcess, SocketHome, SocketServer};
use super::{libpq, JobState};

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
        field_update: false,
    },
    options: &[
        OptionSpec::one_of("load", &["insert", "multi-insert", "copy-text", "copy-binary"], "insert", "load method: one INSERT per row, multi-row INSERT, COPY FROM STDIN text or binary (a batch is one transaction)"),
        OptionSpec::int("rows_per_insert", "1000", "rows of one INSERT statement with load = multi-insert (at most 32767)"),
        OptionSpec::one_of("types", &["bytea", "text"], "bytea", "column types; text (COLLATE \"C\") needs UTF-8 keys and values without NUL"),
        OptionSpec::text("table", "kvbench_kv", "table name; kvbench drops it only if it carries kvbench's comment"),
        OptionSpec::one_of("connection", &["socket", "tcp"], "socket", "how the client reaches kvbench's server: its private Unix socket, or loopback TCP (127.0.0.1, a role with a generated password)"),
        OptionSpec::bool("prepared", "true", "one-row writes as statements prepared once per connection; false sends each with its SQL text, parsed and planned every time (a client that does not prepare)"),
        OptionSpec::bool("configure", "true", "apply `sync` (ALTER SYSTEM fsync + reload, SET synchronous_commit); false leaves the server as it is"),
    ],
    version: || {
        let server = lifecycle::first_line_of(&Path::new(PG_BIN).join("postgres"), &["--version"]);
        let server = if server.is_empty() { "postgresql-15 not installed".to_string() } else { server };
        format!("{server}; client: libpq {} (pq-sys 0.7.8) and postgres crate 0.19.9 (sync)", libpq::version())
    },
    available: || Ok(()),
    open,
    start_server: Some(start_server),
};

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
    /// Durability and the job's table, applied once per open, and the row's settings.
    job: JobState<Setup>,
}

/// What `prepare` applies: durability, the job's table and a settled server.
struct Setup {
    configure: bool,
    fsync: &'static str,
}

fn valid_ident(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn show(client: &mut Client, name: &str) -> String {
    client.query_one(&format!("SHOW {name}"), &[]).ok().and_then(|r| r.try_get::<_, String>(0).ok()).unwrap_or_default()
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
    let job = JobState::new(Setup { configure, fsync }, args.dir, "postgres", settings);
    let (writer, empty) = if job.applied() { prepare_writer(&mut c, &table)? } else { (None, false) };
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
        job,
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
fn read_settings(client: &mut Client, settings: &mut BTreeMap<String, String>) {
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
        settings.insert(name.into(), show(client, name));
    }
    let durability = match (settings["fsync"].as_str(), settings["synchronous_commit"].as_str()) {
        ("on", "on") => "each transaction (batch, or COPY) is durable when COMMIT returns".into(),
        ("off", _) => "NONE: fsync=off, a machine crash can corrupt the database".into(),
        (_, sc) => format!("synchronous_commit={sc}: the last transactions may be lost on a crash"),
    };
    settings.insert("durability".into(), durability);
}

/// Set `fsync` with ALTER SYSTEM and wait until a new session sees the reload.
fn apply_fsync(client: &mut Client, config: &Config, fsync: &str) -> Result<()> {
    if show(client, "fsync") == fsync {
        return Ok(());
    }
    client
        .batch_execute(&format!("ALTER SYSTEM SET fsync = {fsync}"))
        .map_err(|e| pg("ALTER SYSTEM SET fsync (needs a superuser; or set option configure=false)")(e))?;
    client.batch_execute("SELECT pg_reload_conf()").map_err(pg("pg_reload_conf"))?;
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
fn fresh_table(client: &mut Client, table: &str, text: bool) -> Result<Option<String>> {
    let existing = client
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
        client.batch_execute(&format!("DROP TABLE {table}")).map_err(pg("drop kvbench's earlier table"))?;
        note = Some(format!("dropped kvbench's earlier table {table}"));
    }
    let (kt, vt) = if text { ("text COLLATE \"C\"", "text") } else { ("bytea", "bytea") };
    client
        .batch_execute(&format!(
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
fn checkpoint_and_settle(client: &mut Client) -> String {
    let t0 = Instant::now();
    if let Err(e) = client.batch_execute("CHECKPOINT") {
        return format!("CHECKPOINT failed ({e}): the server state before this row is not controlled");
    }
    let lsn = |c: &mut Client| -> Option<String> {
        c.query_one("SELECT pg_current_wal_insert_lsn()::text", &[]).ok().and_then(|r| r.try_get(0).ok())
    };
    let mut last = lsn(client);
    let mut still = Instant::now();
    while still.elapsed() < WAL_QUIET && t0.elapsed() < WAL_SETTLE_LIMIT {
        std::thread::sleep(Duration::from_millis(50));
        let now = lsn(client);
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
        self.job.apply_once(&self.writer, |w, settings| {
            let c = &mut w.0;
            if self.job.how.configure {
                apply_fsync(c, &self.config, self.job.how.fsync)?;
            }
            if !self.job.marker.exists() {
                if let Some(note) = fresh_table(c, &self.table, self.text)? {
                    settings.insert("notes".into(), note);
                }
                std::fs::write(&self.job.marker, &self.table)?;
            }
            settings.insert("server_state".into(), checkpoint_and_settle(c));
            read_settings(c, settings);
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
            Ok(())
        })
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

fn run_one<G: ::postgres::GenericClient>(
    client: &mut G,
    put: &Statement,
    del: &Statement,
    op: &WriteOp<'_>,
) -> Result<()> {
    match op.value {
        Some(v) => insert_one(client, put, op.key, v),
        None => client.execute(del, &[&Bin(op.key)]).map(|_| ()).map_err(pg("DELETE")),
    }
}

fn insert_one<G: ::postgres::GenericClient>(client: &mut G, put: &Statement, key: &[u8], value: &[u8]) -> Result<()> {
    client.execute(put, &[&Bin(key), &Bin(value)]).map(|_| ()).map_err(pg("INSERT"))
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
        self.job.reset();
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
        self.job.settings()
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
