//! The PostgreSQL server kvbench starts: initdb in the private directory, the server on its
//! Unix socket (or loopback TCP behind a generated password), and the settings it reports.

use super::*;

/// The port of the socket-only server, which only names its socket file (`.s.PGSQL.PORT`).
pub(super) const SOCKET_PORT: u16 = 5432;
/// The role a TCP client logs in as, with the password generated at the server's start.
pub(super) const TCP_ROLE: &str = "kvbench_tcp";

pub(super) fn start_server(dir: &Path) -> std::result::Result<Box<dyn RunningServer>, String> {
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
pub(super) fn start_tcp(dir: &Path) -> std::result::Result<Box<dyn RunningServer>, String> {
    let (server, port) = start(dir, true)?;
    let password = match std::env::var(PASSWORD_ENV) {
        Ok(p) if !p.is_empty() => p,
        _ => crate::servers::cluster::random_secret()?,
    };
    let tcp = TcpServer { socket: server, port, password };
    tcp.create_role()?;
    Ok(Box::new(tcp))
}

/// initdb, then the server on its private socket (and, with `tcp`, on a free loopback port,
/// retried when another process took it); returns the server and its port.
pub(super) fn start(dir: &Path, tcp: bool) -> std::result::Result<(SocketServer, u16), String> {
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
    lifecycle::run_to_completion_as("initdb", &initdb, &init_args, log, run_as)?;
    if tcp {
        write_hba(&data)?;
    }
    let (proc, port) = if tcp {
        lifecycle::with_free_port(|port| spawn(&home, &data, Some(port)).map(|p| (p, port)))?
    } else {
        (spawn(&home, &data, None)?, SOCKET_PORT)
    };
    let version = lifecycle::first_line_of(&postgres, &["--version"]);
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
pub(super) fn write_hba(data: &Path) -> std::result::Result<(), String> {
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
pub(super) fn spawn(home: &SocketHome, data: &Path, tcp: Option<u16>) -> std::result::Result<ServerProcess, String> {
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
    proc.wait_ready(lifecycle::START_TIMEOUT, || {
        let mut c = probe_config(&url)?.connect(NoTls).map_err(|e| e.to_string())?;
        c.simple_query("SELECT 1").map(|_| ()).map_err(|e| e.to_string())
    })?;
    // Fast shutdown (SIGINT) instead of SIGTERM's "smart" one, which waits for every client.
    let pid = proc.pid();
    proc.set_polite_stop(libc::SIGINT, Some(pid));
    Ok(proc)
}

pub(super) fn probe_config(url: &str) -> std::result::Result<Config, String> {
    let mut cfg: Config = url.parse().map_err(|e: ::postgres::Error| e.to_string())?;
    cfg.connect_timeout(Duration::from_secs(1));
    Ok(cfg)
}

/// Connection string for the server's socket directory (key=value form: any path quotes).
pub(super) fn pg_url(socket_dir: &Path, port: u16) -> String {
    let quoted = socket_dir.to_string_lossy().replace('\\', "\\\\").replace('\'', "\\'");
    format!("host='{quoted}' port={port} user=postgres dbname=postgres")
}

/// kvbench's server with its TCP listener: jobs get the TCP url and the role's password.
pub(super) struct TcpServer {
    pub(super) socket: SocketServer,
    pub(super) port: u16,
    pub(super) password: String,
}

impl TcpServer {
    /// Create [`TCP_ROLE`] over the socket, with what a job needs: the table in `public`,
    /// `fsync` (ALTER SYSTEM + reload), CHECKPOINT. Only the password's scram-sha-256 verifier
    /// is sent, so the password reaches no server log; then one login over TCP proves it.
    pub(super) fn create_role(&self) -> std::result::Result<(), String> {
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
pub(super) fn server_settings(url: &str) -> BTreeMap<String, String> {
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
