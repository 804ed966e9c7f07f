//! A 3-member etcd (Raft) cluster from the system's `etcd` (Debian `etcd-server`), started by
//! kvbench on loopback for the Go engine `go-etcd` (its client is etcd's official Go client, so
//! the engine lives in the Go worker; this file owns only the server side).
//!
//! Every member gets its own subdirectory of the private 0700 directory (data directory and
//! log), a client port and a peer port on 127.0.0.1, and its own process group; the cluster is
//! bootstrapped statically (`--initial-cluster`, a random cluster token). kvbench waits until
//! every member's `/health` says true, which needs an elected leader. etcd fsyncs its write-ahead
//! log before it acknowledges a commit, so every acknowledged write is on a quorum's disks.
//!
//! The client and peer ports are plain TCP without authentication on a loopback of the cluster's
//! own (a private network namespace, [`super::netns`]): no other user's process can reach them,
//! and no permission check is added to every request under measurement (docs/decisions.md).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use kvbench_model::engine::RunningServer;

use super::cluster::{free_ports, random_secret, spawn_retrying, Cluster, Kind, Member, Members};
use super::lifecycle::{self, ServerProcess};

/// An etcd cluster kvbench started.
pub type EtcdCluster = Cluster<Etcd>;

/// What an etcd cluster reports beside its members.
pub struct Etcd;

/// The `StartServer` of `go-etcd`: three members, the smallest cluster that survives a failure.
/// In a private network namespace where kvbench may make one (see [`super::netns`]).
pub fn start_server(dir: &Path) -> Result<Box<dyn RunningServer>, String> {
    super::netns::isolated(dir, Box::new(|d| start_cluster(d, 3).map(|c| Box::new(c) as Box<dyn RunningServer>)))
}

/// Start `member_count` members (1..=7) in `dir` (empty) and wait until each reports healthy.
pub fn start_cluster(dir: &Path, member_count: usize) -> Result<EtcdCluster, String> {
    if !(1..=7).contains(&member_count) {
        return Err(format!("etcd: members = {member_count}: must be 1..=7"));
    }
    let missing = "etcd not found in PATH: apt-get install etcd-server, or give url = \"http://HOST:PORT,...\"";
    let (binary, version) = lifecycle::server_binary(&["etcd", "/usr/bin/etcd"], "--version", missing)?;
    // As root, the members run as `etcd`, each in a 0700 directory of its own.
    let user = lifecycle::user_when_root(&["etcd", "nobody"]);
    let dir = lifecycle::server_dir(dir, user)?;
    let members = spawn_retrying(|| spawn_members(&binary, &dir, member_count, user))?;
    Ok(Cluster { members, version, kind: Etcd })
}

fn member_args(member: usize, dir: &Path, ports: &[(u16, u16)], token: &str) -> Vec<String> {
    let (client, peer) = ports[member];
    let initial: Vec<String> =
        ports.iter().enumerate().map(|(j, (_, p))| format!("m{j}=http://127.0.0.1:{p}")).collect();
    [
        "--name",
        &format!("m{member}"),
        "--data-dir",
        &dir.join("data").to_string_lossy(),
        "--listen-client-urls",
        &format!("http://127.0.0.1:{client}"),
        "--advertise-client-urls",
        &format!("http://127.0.0.1:{client}"),
        "--listen-peer-urls",
        &format!("http://127.0.0.1:{peer}"),
        "--initial-advertise-peer-urls",
        &format!("http://127.0.0.1:{peer}"),
        "--initial-cluster",
        &initial.join(","),
        "--initial-cluster-token",
        token,
        "--initial-cluster-state",
        "new",
        "--logger",
        "zap",
        "--log-outputs",
        "stderr",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn spawn_members(binary: &Path, dir: &Path, member_count: usize, user: Option<&str>) -> Result<Members, String> {
    let flat = free_ports(2 * member_count)?;
    let ports: Vec<(u16, u16)> = flat.chunks(2).map(|p| (p[0], p[1])).collect();
    let token = format!("kvbench-{}", random_secret()?);
    let mut members = Members::default();
    // All members must run before any can elect a leader: spawn every one, then wait.
    for (i, &(client, peer)) in ports.iter().enumerate() {
        let mdir = dir.join(format!("m{i}"));
        std::fs::create_dir_all(&mdir).map_err(|e| format!("etcd: {}: {e}", mdir.display()))?;
        let mdir = lifecycle::server_dir(&mdir, user)?;
        let args = member_args(i, &mdir, &ports, &token);
        let log = mdir.join("etcd.log");
        // SIGKILL when kvbench dies: on SIGTERM a member takes seconds to leave, and a run
        // whose kvbench died keeps nothing of its cluster.
        let proc = ServerProcess::spawn_with(&format!("etcd m{i}"), binary, &args, &log, user, libc::SIGKILL)?;
        members.0.push(Member { name: format!("m{i}"), proc, port: client, peer_port: peer });
    }
    for m in &mut members.0 {
        let port = m.port;
        m.proc.wait_ready(lifecycle::START_TIMEOUT, || health(port))?;
    }
    Ok(members)
}

/// `GET /health` on a member's client port: Ok when it answers `"health":"true"` (it has a
/// leader and can serve).
pub fn health(port: u16) -> Result<(), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2))).map_err(|e| e.to_string())?;
    s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").map_err(|e| e.to_string())?;
    let mut body = String::new();
    s.read_to_string(&mut body).map_err(|e| e.to_string())?;
    let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains(r#""health":"true""#) {
        Ok(())
    } else {
        Err(format!("not healthy yet: {}", body.lines().last().unwrap_or("")))
    }
}

impl Kind for Etcd {
    const SERVER: &'static str = "etcd";
    const SCHEME: &'static str = "http";

    fn facts(&self, out: &mut BTreeMap<String, String>) {
        out.insert(
            "durability".into(),
            "every commit fsynced to the write-ahead log of a quorum before it is acknowledged".into(),
        );
        out.insert("auth".into(), "none: TCP on the loopback of a private network namespace (see `network`)".into());
    }
}
