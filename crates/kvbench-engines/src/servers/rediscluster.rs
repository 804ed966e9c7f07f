//! `redis-cluster`: a sharded Redis Cluster driven by the `redis` crate's cluster client.
//!
//! The server side: kvbench starts `masters` masters and `replicas` replicas per master from the
//! system's `redis-server` with `cluster-enabled yes`, on loopback, each in its own subdirectory
//! of the private 0700 directory and its own process group, all with one generated password
//! (`requirepass`, and `masterauth` so replicas can sync). It forms the cluster with the standard
//! tool, `redis-cli --cluster create ... --cluster-yes` (the password passed in the environment,
//! not on the command line), and waits until every node says `cluster_state:ok`, sees every
//! other node in its role, and every replica has finished its first copy of its master.
//!
//! The client side: the crate's `ClusterConnection` follows MOVED and ASK redirections and
//! refreshes its slot map. A multi-get is grouped by hash slot, since Redis refuses a cross-slot
//! MGET: keys of one slot are one MGET; keys of several slots go out as one cluster pipeline of
//! GETs in slot order, which the crate writes to each master as one pipeline before it reads any
//! reply (the crate refuses MGET inside a cluster pipeline). A write batch is one
//! cluster pipeline of SET/DEL (windows of `pipeline` commands). Reads go to masters.
//!
//! Durability is applied to every node with CONFIG SET in `prepare`, as for `redis`; a master
//! answers after its own fsync, and replicas copy asynchronously (no WAIT).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ::redis::cluster::{cluster_pipe, ClusterClient, ClusterConnection};
use ::redis::cluster_routing::get_slot;
use ::redis::{Connection, ConnectionAddr, ConnectionInfo, RedisConnectionInfo, Value};
use kvbench_model::engine::*;

use super::cluster::{free_ports, random_secret, spawn_retrying, Cluster, Kind, Member, Members};
use super::lifecycle::{self, ServerProcess};
use super::redisadmin as admin;

pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    name: "redis-cluster",
    description: "Redis Cluster over loopback (redis crate cluster client): GET, MGET grouped by slot, pipelined SET/DEL per node",
    capabilities: super::KEY_VALUE_SERVER,
    options: &[
        OptionSpec::int("masters", "3", "masters of the cluster (at least 3); checked against the cluster on open"),
        OptionSpec::int("replicas", "0", "replicas per master; checked against the cluster on open"),
        super::PREFIX,
        OptionSpec::int("pipeline", "0", "commands of a write batch per cluster pipeline (0: the whole batch), and GETs of a get phase's \
                  pipelined round (0 or 1: one GET at a time)"),
        super::APPENDFSYNC,
        OptionSpec::bool("configure", "true", "apply `sync` with CONFIG SET on every node; false leaves a cluster given by url as it is"),
    ],
    version: || super::redis::REDIS_SERVER.version("redis crate 0.27.6 (cluster, sync)"),
    available: || Ok(()),
    open,
    start_server: Some(start_server),
};

/// The fewest masters `redis-cli --cluster create` accepts.
pub const MIN_MASTERS: u32 = 3;
/// How long forming the cluster may take (slot assignment, gossip until every node agrees).
const FORM_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Server

/// A Redis Cluster kvbench started.
pub type RedisCluster = Cluster<Shape>;

/// A Redis Cluster's shape and credential.
pub struct Shape {
    password: String,
    masters: u32,
    replicas: u32,
    /// The `redis-cli --cluster create` command that formed it.
    create_command: String,
}

fn start_server(dir: &Path) -> std::result::Result<Box<dyn RunningServer>, String> {
    start_isolated(dir, MIN_MASTERS, 0)
}

/// The server of a row whose `masters` and `replicas` options differ from the plain start's:
/// its name in the run's pool (rows of one shape share it) and how to start it. None: the plain
/// start serves the row.
pub fn shaped_server(options: &BTreeMap<String, serde_json::Value>) -> Option<(String, crate::ShapedStart)> {
    let int = |k: &str, d: u32| options.get(k).and_then(|v| v.as_u64()).map_or(d, |v| v.min(u32::MAX as u64) as u32);
    let (masters, replicas) = (int("masters", MIN_MASTERS), int("replicas", 0));
    if (masters, replicas) == (MIN_MASTERS, 0) {
        return None;
    }
    let start = move |dir: &Path| start_isolated(dir, masters, replicas);
    Some((format!("redis-cluster-{masters}m{replicas}r"), Box::new(start)))
}

/// [`start_cluster`] in a private network namespace where kvbench may make one: the client
/// ports and the cluster bus (which takes no password) out of other users' reach.
pub fn start_isolated(dir: &Path, masters: u32, replicas: u32) -> std::result::Result<Box<dyn RunningServer>, String> {
    let start = move |d: &Path| start_cluster(d, masters, replicas).map(|c| Box::new(c) as Box<dyn RunningServer>);
    super::netns::isolated(dir, Box::new(start))
}

/// Start `masters` masters with `replicas` replicas each in `dir` (empty) and form the cluster.
pub fn start_cluster(dir: &Path, masters: u32, replicas: u32) -> std::result::Result<RedisCluster, String> {
    if !(MIN_MASTERS..=100).contains(&masters) {
        return Err(format!("redis-cluster: masters = {masters}: must be 3..=100 (redis-cli needs at least 3)"));
    }
    if replicas > 5 {
        return Err(format!("redis-cluster: replicas = {replicas}: must be 0..=5 (per master)"));
    }
    let missing =
        "redis-server not found in PATH: apt-get install redis-server, or give url = \"redis://HOST:PORT,...\"";
    let (binary, version) = lifecycle::server_binary(&["redis-server"], "--version", missing)?;
    let cli =
        lifecycle::find_binary(&["redis-cli"]).ok_or("redis-cli not found in PATH: apt-get install redis-tools")?;
    // As root, the nodes run as `redis` (as the single server does) in directories of theirs.
    let user = lifecycle::user_when_root(&["redis", "nobody"]);
    let dir = lifecycle::server_dir(dir, user)?;
    let password = random_secret()?;
    let nodes = (masters * (1 + replicas)) as usize;
    let members = spawn_retrying(|| spawn_nodes(&binary, &dir, nodes, &password, user))?;
    let kind = Shape { password, masters, replicas, create_command: String::new() };
    let mut c = Cluster { members, version, kind };
    c.kind.create_command = form(&cli, &dir, &c)?;
    wait_cluster_ok(&c)?;
    Ok(c)
}

fn node_conf(dir: &Path, port: u16, bus: u16, password: &str) -> String {
    format!(
        "# Written by kvbench for one run; the node is private to it.\n\
         bind 127.0.0.1\n\
         port {port}\n\
         cluster-port {bus}\n\
         cluster-enabled yes\n\
         cluster-config-file nodes.conf\n\
         cluster-node-timeout 5000\n\
         protected-mode yes\n\
         requirepass {password}\n\
         masterauth {password}\n\
         daemonize no\n\
         logfile \"\"\n\
         dir \"{}\"\n\
         # Persistence is set per job with CONFIG SET (see the engine); start with none.\n\
         save \"\"\n\
         appendonly no\n\
         appendfsync always\n",
        dir.display()
    )
}

fn spawn_nodes(
    binary: &Path,
    dir: &Path,
    nodes: usize,
    password: &str,
    user: Option<&str>,
) -> std::result::Result<Members, String> {
    let ports = free_ports(2 * nodes)?;
    let mut members = Members::default();
    for i in 0..nodes {
        let (port, bus) = (ports[2 * i], ports[2 * i + 1]);
        let ndir = dir.join(format!("node-{i}"));
        std::fs::create_dir_all(&ndir).map_err(|e| format!("redis-cluster: {}: {e}", ndir.display()))?;
        let ndir = lifecycle::server_dir(&ndir, user)?;
        let conf = ndir.join("redis.conf");
        std::fs::write(&conf, node_conf(&ndir, port, bus, password))
            .map_err(|e| format!("redis-cluster: cannot write {}: {e}", conf.display()))?;
        let args = vec![conf.to_string_lossy().into_owned()];
        let proc =
            ServerProcess::spawn(&format!("redis-server node-{i}"), binary, &args, &ndir.join("redis.log"), user)?;
        members.0.push(Member { name: format!("node-{i}"), proc, port, peer_port: bus });
    }
    for m in &mut members.0 {
        let port = m.port;
        m.proc.wait_ready(lifecycle::START_TIMEOUT, || {
            let mut c = node_connection("127.0.0.1", port, Some(password)).map_err(|e| e.to_string())?;
            ::redis::cmd("PING").query::<String>(&mut c).map(|_| ()).map_err(|e| e.to_string())
        })?;
    }
    Ok(members)
}

/// `redis-cli --cluster create`: assigns the slots and the replicas; returns its command line.
fn form(cli: &Path, dir: &Path, cluster: &RedisCluster) -> std::result::Result<String, String> {
    let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
    args.extend(cluster.members.0.iter().map(|m| format!("127.0.0.1:{}", m.port)));
    args.extend(["--cluster-replicas".into(), cluster.kind.replicas.to_string(), "--cluster-yes".into()]);
    let command = lifecycle::render_command(cli, &args);
    let log = dir.join("cluster-create.log");
    let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new(cli)
        .args(&args)
        .env("REDISCLI_AUTH", &cluster.kind.password)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("redis-cluster: cannot run {command}: {e}"))?;
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t0.elapsed() > FORM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "redis-cluster: `{command}` did not finish within {} s; log: {}\n{}",
                FORM_TIMEOUT.as_secs(),
                log.display(),
                lifecycle::log_tail(&log, 15)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !status.success() {
        return Err(format!(
            "redis-cluster: `{command}` failed ({status}); log: {}\n{}",
            log.display(),
            lifecycle::log_tail(&log, 15)
        ));
    }
    Ok(command)
}

/// Wait until every node reports `cluster_state:ok` and sees the whole shape (every node, the
/// right number of masters, none failed): gossip spreads replica roles after `create` returns.
fn wait_cluster_ok(cluster: &RedisCluster) -> std::result::Result<(), String> {
    let t0 = Instant::now();
    for m in &cluster.members.0 {
        let mut last;
        loop {
            match node_view(m.port, &cluster.kind.password) {
                Ok(view) if view_complete(&view, cluster) => break,
                Ok((_, nodes, synced)) => last = format!("replica in sync: {synced}; {nodes:?}"),
                Err(e) => last = e.to_string(),
            }
            if t0.elapsed() > FORM_TIMEOUT {
                return Err(format!(
                    "redis-cluster: {} did not see a complete cluster within {} s (last: {last}); log: {}",
                    m.name,
                    FORM_TIMEOUT.as_secs(),
                    m.proc.log().display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

/// One node's `CLUSTER INFO` text, its `CLUSTER NODES` view and, for a replica, whether its
/// link to its master is up (the initial copy done).
fn node_view(port: u16, password: &str) -> ::redis::RedisResult<(String, Vec<NodeLine>, bool)> {
    let mut conn = node_connection("127.0.0.1", port, Some(password))?;
    let info: String = ::redis::cmd("CLUSTER").arg("INFO").query(&mut conn)?;
    let text: String = ::redis::cmd("CLUSTER").arg("NODES").query(&mut conn)?;
    let nodes = parse_nodes(&text).map_err(|e| ::redis::RedisError::from((::redis::ErrorKind::ParseError, "", e)))?;
    let replica = nodes.iter().any(|n| n.myself && !n.master);
    let synced = !replica || admin::info_field(&mut conn, "replication", "master_link_status").as_deref() == Some("up");
    Ok((info, nodes, synced))
}

/// A replica that has not finished its first copy cannot take over (its data counts as too
/// old), so the cluster is complete only when every replica is in sync.
fn view_complete((info, nodes, synced): &(String, Vec<NodeLine>, bool), cluster: &RedisCluster) -> bool {
    *synced
        && info.contains("cluster_state:ok")
        && nodes.len() == cluster.members.0.len()
        && nodes.iter().filter(|n| n.master).count() == cluster.kind.masters as usize
        && !nodes.iter().any(|n| n.failed)
}

impl Kind for Shape {
    const SERVER: &'static str = "redis-cluster";
    const SCHEME: &'static str = "redis";

    fn facts(&self, out: &mut BTreeMap<String, String>) {
        out.insert("masters".into(), self.masters.to_string());
        out.insert("replicas".into(), format!("{} per master", self.replicas));
        out.insert("auth".into(), "requirepass + masterauth: a password generated for this run".into());
        out.insert(
            "persistence".into(),
            "set per job from `sync` (CONFIG SET on every node); started with none".into(),
        );
        out.insert("create".into(), self.create_command.clone());
    }

    fn token(&self) -> Option<String> {
        Some(self.password.clone())
    }
}

// ---------------------------------------------------------------------------------------------
// Client

fn err(error: ::redis::RedisError) -> EngineError {
    EngineError::Store(format!("redis-cluster: {error}"))
}

fn node_connection(host: &str, port: u16, password: Option<&str>) -> ::redis::RedisResult<Connection> {
    let info = ConnectionInfo {
        addr: ConnectionAddr::Tcp(host.to_string(), port),
        redis: RedisConnectionInfo { password: password.map(String::from), ..Default::default() },
    };
    let c = ::redis::Client::open(info)?.get_connection_with_timeout(Duration::from_secs(10))?;
    c.set_read_timeout(Some(Duration::from_secs(120)))?;
    Ok(c)
}

/// One node as `CLUSTER NODES` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLine {
    pub host: String,
    pub port: u16,
    pub master: bool,
    pub failed: bool,
    /// The node that answered.
    pub myself: bool,
}

/// Parse `CLUSTER NODES`: `<id> <ip:port@cport[,hostname]> <flags> <master-id> ...` per line.
pub fn parse_nodes(text: &str) -> std::result::Result<Vec<NodeLine>, String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(addr), Some(flags)) = (f.get(1), f.get(2)) else {
            return Err(format!("CLUSTER NODES: cannot read line `{line}`"));
        };
        let hostport = addr.split(['@', ',']).next().unwrap_or("");
        let (host, port) =
            hostport.rsplit_once(':').ok_or_else(|| format!("CLUSTER NODES: bad address in `{line}`"))?;
        let port = port.parse().map_err(|_| format!("CLUSTER NODES: bad port in `{line}`"))?;
        let flags: Vec<&str> = flags.split(',').collect();
        out.push(NodeLine {
            host: host.to_string(),
            port,
            master: flags.contains(&"master"),
            failed: flags.iter().any(|f| *f == "fail" || *f == "fail?"),
            myself: flags.contains(&"myself"),
        });
    }
    Ok(out)
}

/// `url` without passwords (`redis://:SECRET@h:p` → `redis://***@h:p`), for the result file
/// (kvbench_model::secret redacts every output again; this keeps the row's settings clean
/// for any other runner).
pub fn redact(url: &str) -> String {
    kvbench_model::secret::redact_urls(url).into_owned()
}

/// Seeds of `url` (`redis://h:p,redis://h:p` or `redis://h:p,h:p`) as redis URLs.
fn seeds(url: &str) -> Vec<String> {
    url.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| if s.contains("://") { s.to_string() } else { format!("redis://{s}") })
        .collect()
}

pub struct RedisClusterEngine {
    client: ClusterClient,
    password: Option<String>,
    nodes: Vec<NodeLine>,
    prefix: Vec<u8>,
    pipeline: usize,
    sync: SyncMode,
    options: Options,
    marker: PathBuf,
    writer: Mutex<ClusterConnection>,
    settings: BTreeMap<String, String>,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let url = args.url.ok_or_else(|| {
        EngineError::Option(
            "redis-cluster needs a cluster: kvbench starts one, or give url = \"redis://HOST:PORT[,redis://HOST:PORT...]\"".into(),
        )
    })?;
    let seeds = seeds(url);
    let first = ::redis::IntoConnectionInfo::into_connection_info(seeds[0].as_str())
        .map_err(|e| EngineError::Option(format!("redis-cluster url `{url}`: {e}")))?;
    let password = args.token.map(String::from).or(first.redis.password.clone());
    let mut builder = ClusterClient::builder(seeds.clone())
        .connection_timeout(Duration::from_secs(10))
        .response_timeout(Duration::from_secs(120));
    if let Some(p) = &password {
        builder = builder.password(p.clone());
    }
    let client = builder.build().map_err(|e| EngineError::Option(format!("redis-cluster url `{url}`: {e}")))?;
    let mut conn = client
        .get_connection()
        .map_err(|e| EngineError::Store(format!("redis-cluster: cannot connect to {url}: {e}")))?;
    let nodes = cluster_nodes(&mut conn)?;
    let o = args.options;
    check_shape(&nodes, o, url)?;
    let mut settings = BTreeMap::new();
    settings.insert("url".into(), redact(url));
    let masters = nodes.iter().filter(|n| n.master).count();
    settings.insert("nodes".into(), format!("{masters} masters, {} replicas", nodes.len() - masters));
    settings.insert("reads".into(), "from masters".into());
    // Overwritten by `prepare`, which applies `sync` on every node; a runner that skips the
    // step gets a row that says so instead of a silent non-durable run.
    settings.insert("durability".into(), "NOT APPLIED: the prepare step (CONFIG SET on every node) did not run".into());
    settings
        .insert("multi-get".into(), "one slot: MGET; several: GETs grouped by slot, one pipeline per master".into());
    let pipeline = o.int("pipeline").unwrap_or(0).max(0) as usize;
    settings.insert(
        "pipeline".into(),
        if pipeline == 0 { "whole batch".into() } else { format!("{pipeline} commands per cluster pipeline") },
    );
    let prefix = o.text("prefix").unwrap_or_default().into_bytes();
    settings.insert("keys".into(), format!("prefix `{}` + the key's bytes", String::from_utf8_lossy(&prefix)));
    Ok(Box::new(RedisClusterEngine {
        client,
        password,
        nodes,
        prefix,
        pipeline,
        sync: args.sync,
        options: o.clone(),
        marker: lifecycle::job_marker(args.dir, "redis-cluster"),
        writer: Mutex::new(conn),
        settings,
    }))
}

fn cluster_nodes(conn: &mut ClusterConnection) -> Result<Vec<NodeLine>> {
    let text: String = ::redis::cmd("CLUSTER").arg("NODES").query(conn).map_err(err)?;
    let nodes = parse_nodes(&text).map_err(EngineError::Store)?;
    if nodes.iter().any(|n| n.failed) {
        return Err(EngineError::Store(format!("redis-cluster: a node is marked failed:\n{text}")));
    }
    Ok(nodes)
}

/// The cluster must have the shape the options say, so the row's options describe it.
fn check_shape(nodes: &[NodeLine], options: &Options, url: &str) -> Result<()> {
    let masters = nodes.iter().filter(|n| n.master).count() as i64;
    let replicas = nodes.len() as i64 - masters;
    let want_m = options.int("masters").unwrap_or(3);
    let want_r = options.int("replicas").unwrap_or(0);
    if masters != want_m || replicas != want_m * want_r {
        return Err(EngineError::Option(format!(
            "redis-cluster options masters = {want_m}, replicas = {want_r}, but the cluster at {url} has {masters} \
             masters and {replicas} replicas in all: set masters and replicas to the cluster's shape"
        )));
    }
    Ok(())
}

impl RedisClusterEngine {
    fn admin(&self, node: &NodeLine) -> Result<Connection> {
        node_connection(&node.host, node.port, self.password.as_deref())
            .map_err(|e| EngineError::Store(format!("redis-cluster: node {}:{}: {e}", node.host, node.port)))
    }

    /// Apply `sync` on every node (replicas persist too) and record what is in effect.
    fn configure(&mut self) -> Result<()> {
        let policy = match self.options.text("appendfsync").as_deref() {
            Some("auto") | None => "always".to_string(),
            Some(p) => p.to_string(),
        };
        let mut effective = Vec::new();
        for n in self.nodes.clone() {
            let mut c = self.admin(&n)?;
            if self.options.bool("configure") {
                admin::configure(&mut c, "redis-cluster", self.sync, &policy)?;
            }
            effective.push((admin::config_get(&mut c, "appendonly"), admin::config_get(&mut c, "appendfsync")));
            if n.master && !self.settings.contains_key("server_version") {
                let v = admin::info_field(&mut c, "server", "redis_version").unwrap_or_default();
                self.settings.insert("server_version".into(), v);
            }
        }
        let all_durable = effective.iter().all(|(a, f)| a == "yes" && f == "always");
        let (a, f) = effective.first().cloned().unwrap_or_default();
        self.settings.insert("appendonly".into(), a.clone());
        self.settings.insert("appendfsync".into(), f.clone());
        let replicated = self.nodes.iter().any(|n| !n.master);
        self.settings.insert("durability".into(), durability(self.sync, all_durable, replicated, &a, &f));
        Ok(())
    }

    /// Delete every key under the prefix on every master (SCAN MATCH, UNLINK).
    fn clear(&mut self) -> Result<u64> {
        let mut n = 0;
        for node in self.nodes.iter().filter(|n| n.master) {
            let mut c = self.admin(node)?;
            n += admin::clear_prefix(&mut c, "redis-cluster", &self.prefix)?;
        }
        Ok(n)
    }
}

fn durability(sync: SyncMode, all_durable: bool, replicated: bool, appendonly: &str, appendfsync: &str) -> String {
    let replicas = if replicated { "; replicas copy asynchronously (no WAIT)" } else { "" };
    match (sync, all_durable) {
        (SyncMode::None, _) => "none: data in memory only (sync=none)".into(),
        (_, true) => format!("AOF fsynced by the key's master before each reply{replicas}"),
        (s, false) => {
            format!("WEAKER than sync={s}: appendonly={appendonly} appendfsync={appendfsync} on some node{replicas}")
        }
    }
}

/// After a node dies the crate (0.27.6) keeps routing its slots to it: it refreshes its slot
/// map on MOVED, not on a dead connection, and a cluster pipeline never does. So an error at the
/// connection level replaces the connection: the call still counts as an error, and the next one
/// starts from a slot map read from a live node (the promoted replica once failover is done).
fn recover(client: &ClusterClient, conn: &mut ClusterConnection, error: &::redis::RedisError) {
    let lost =
        error.is_io_error() || error.is_connection_dropped() || error.is_connection_refusal() || error.is_timeout();
    if lost || error.kind() == ::redis::ErrorKind::ClusterConnectionNotFound {
        if let Ok(fresh) = connect(client) {
            *conn = fresh;
        }
    }
}

fn connect(client: &ClusterClient) -> Result<ClusterConnection> {
    let c = client.get_connection().map_err(err)?;
    c.set_read_timeout(Some(Duration::from_secs(120))).map_err(err)?;
    c.set_write_timeout(Some(Duration::from_secs(120))).map_err(err)?;
    Ok(c)
}

impl Engine for RedisClusterEngine {
    fn prepare(&mut self) -> Result<()> {
        self.configure()?;
        if !self.marker.exists() {
            let n = self.clear()?;
            self.settings.insert("cleared".into(), format!("{n} earlier keys under the prefix"));
            std::fs::write(&self.marker, &self.prefix)?;
        }
        Ok(())
    }

    /// Callers without a thread of their own (the worker gives each thread a writer) share
    /// the engine's connection.
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut c = self.writer.lock().map_err(|_| EngineError::store("lock poisoned"))?;
        write_on(&self.client, &mut c, &self.prefix, self.pipeline, batch)
    }

    fn writer(&self) -> Result<Option<Box<dyn Writer + '_>>> {
        let conn = connect(&self.client)?;
        Ok(Some(Box::new(ClusterWriter { conn, engine: self })))
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(ClusterReader {
            conn: connect(&self.client)?,
            client: &self.client,
            prefix: &self.prefix,
            key: Vec::new(),
            pending: Vec::new(),
        }))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }
}

/// Apply `batch` on `conn` as cluster pipelines of SET/DEL, windows of `pipeline` (0: whole).
fn write_on(
    client: &ClusterClient,
    conn: &mut ClusterConnection,
    prefix: &[u8],
    pipeline: usize,
    batch: &[WriteOp<'_>],
) -> Result<()> {
    let depth = if pipeline == 0 { batch.len().max(1) } else { pipeline };
    let mut key = Vec::with_capacity(prefix.len() + 64);
    for window in batch.chunks(depth) {
        let mut pipe = cluster_pipe();
        for w in window {
            key.clear();
            key.extend_from_slice(prefix);
            key.extend_from_slice(w.key);
            match w.value {
                Some(v) => pipe.cmd("SET").arg(&key).arg(v).ignore(),
                None => pipe.cmd("DEL").arg(&key).ignore(),
            };
        }
        if let Err(e) = pipe.query::<()>(conn) {
            recover(client, conn, &e);
            return Err(err(e));
        }
    }
    Ok(())
}

/// One thread's writes on its own cluster connection (one socket per master).
struct ClusterWriter<'a> {
    conn: ClusterConnection,
    engine: &'a RedisClusterEngine,
}

impl Writer for ClusterWriter<'_> {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        let e = self.engine;
        write_on(&e.client, &mut self.conn, &e.prefix, e.pipeline, batch)
    }
}

struct ClusterReader<'a> {
    conn: ClusterConnection,
    client: &'a ClusterClient,
    prefix: &'a [u8],
    key: Vec<u8>,
    /// Full keys of a pipeline sent with `send_gets`, read by `recv_gets`.
    pending: Vec<Vec<u8>>,
}

impl ClusterReader<'_> {
    /// Run a query; a lost connection is replaced (see [`recover`]).
    fn query<T: ::redis::FromRedisValue>(
        &mut self,
        op: impl FnOnce(&mut ClusterConnection) -> ::redis::RedisResult<T>,
    ) -> Result<T> {
        op(&mut self.conn).map_err(|e| {
            recover(self.client, &mut self.conn, &e);
            err(e)
        })
    }

    fn full_key(&mut self, key: &[u8]) -> &[u8] {
        self.key.clear();
        self.key.extend_from_slice(self.prefix);
        self.key.extend_from_slice(key);
        &self.key
    }
}

fn bulk(value: Value) -> Result<Option<Vec<u8>>> {
    match value {
        Value::Nil => Ok(None),
        Value::BulkString(b) => Ok(Some(b)),
        other => Err(EngineError::Store(format!("redis-cluster: unexpected reply {other:?}"))),
    }
}

/// Indices of `keys` grouped by hash slot, in slot order.
pub fn group_by_slot(keys: &[Vec<u8>]) -> BTreeMap<u16, Vec<usize>> {
    let mut groups: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        groups.entry(get_slot(k)).or_default().push(i);
    }
    groups
}

impl Reader for ClusterReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.full_key(key);
        let mut cmd = ::redis::cmd("GET");
        cmd.arg(&self.key);
        let v: Value = self.query(|c| cmd.query(c))?;
        out.clear();
        match bulk(v)? {
            Some(b) => {
                *out = b;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        let full: Vec<Vec<u8>> = keys.iter().map(|k| [self.prefix, k].concat()).collect();
        let groups = group_by_slot(&full);
        if groups.len() == 1 {
            // One slot: one MGET, routed to the slot's master.
            let mut cmd = ::redis::cmd("MGET");
            cmd.arg(&full);
            let reply: Value = self.query(|c| cmd.query(c))?;
            let Value::Array(items) = reply else {
                return Err(EngineError::Store(format!("redis-cluster MGET: unexpected reply {reply:?}")));
            };
            if items.len() != keys.len() {
                return Err(EngineError::Store(format!(
                    "redis-cluster MGET: {} values for {} keys",
                    items.len(),
                    keys.len()
                )));
            }
            return items.into_iter().try_for_each(|v| bulk(v).map(|b| out.push(b)));
        }
        // Several slots: the crate refuses MGET in a cluster pipeline, and MGET per slot one
        // after the other costs a round trip per slot. A cluster pipeline of GETs, in slot
        // order, is written to each master as one pipeline, all masters before any reply is read.
        let mut pipe = cluster_pipe();
        for &i in groups.values().flatten() {
            pipe.cmd("GET").arg(&full[i]);
        }
        let replies: Vec<Value> = self.query(|c| pipe.query(c))?;
        out.resize(keys.len(), None);
        for (&i, v) in groups.values().flatten().zip(replies) {
            out[i] = bulk(v)?;
        }
        Ok(())
    }

    /// The crate sends a cluster pipeline and reads its replies in one call, so the keys wait
    /// here and go out in `recv_gets` (each master gets its share as one pipeline, every
    /// master before any reply is read); the worker's timing spans both calls.
    fn send_gets(&mut self, conn: usize, keys: &[&[u8]]) -> Result<()> {
        if conn != 0 {
            return Err(EngineError::Store(format!("redis-cluster: no connection {conn} (one per master)")));
        }
        self.pending = keys.iter().map(|k| [self.prefix, k].concat()).collect();
        Ok(())
    }

    fn recv_gets(&mut self, _conn: usize, count: usize, out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        // Every pending reply at once: the crate reads a cluster pipeline's replies together.
        out.clear();
        let mut pipe = cluster_pipe();
        for k in std::mem::take(&mut self.pending) {
            pipe.cmd("GET").arg(k);
        }
        let replies: Vec<Value> = self.query(|c| pipe.query(c))?;
        if replies.len() != count {
            return Err(EngineError::Store(format!("redis-cluster: {} replies for {count} GETs", replies.len())));
        }
        replies.into_iter().try_for_each(|v| bulk(v).map(|b| out.push(b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_parse() {
        let text = "07c3 127.0.0.1:30004@31004 slave e7d1 0 1426238317239 4 connected\n\
                    e7d1 127.0.0.1:30001@31001,host.example myself,master - 0 0 1 connected 0-5460\n\
                    67ed 127.0.0.1:30002@31002 master,fail - 0 1426238316232 2 connected 5461-10922\n";
        let n = parse_nodes(text).unwrap();
        assert_eq!(n.len(), 3);
        assert_eq!((n[0].port, n[0].master, n[0].failed), (30004, false, false));
        assert_eq!((n[1].host.as_str(), n[1].port, n[1].master), ("127.0.0.1", 30001, true));
        assert!(n[2].failed);
        assert!(parse_nodes("garbage").is_err());
    }

    #[test]
    fn keys_group_by_slot_and_hash_tags_share_one() {
        let keys: Vec<Vec<u8>> = vec![b"{a}1".to_vec(), b"x".to_vec(), b"{a}2".to_vec(), b"y".to_vec()];
        let g = group_by_slot(&keys);
        let tagged = g.values().find(|v| v.contains(&0)).unwrap();
        assert_eq!(tagged, &vec![0, 2]);
        assert_eq!(g.values().map(|v| v.len()).sum::<usize>(), 4);
    }

    #[test]
    fn passwords_stay_out_of_settings() {
        assert_eq!(redact("redis://:pw@a:1,redis://b:2"), "redis://***@a:1,redis://b:2");
        assert_eq!(redact("redis://u:p@w@a:1"), "redis://***@a:1");
    }

    #[test]
    fn seeds_accept_bare_addresses() {
        assert_eq!(seeds("redis://a:1, b:2"), vec!["redis://a:1".to_string(), "redis://b:2".to_string()]);
    }

    #[test]
    fn too_few_masters_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let e = start_cluster(d.path(), 2, 0).err().unwrap();
        assert!(e.contains("masters = 2") && e.contains("3"), "{e}");
    }
}
