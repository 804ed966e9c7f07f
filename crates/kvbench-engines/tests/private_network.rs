//! Issue 31: the TCP servers kvbench starts for a run (the etcd cluster of `go-etcd`, Redis
//! Cluster) listen in a private network namespace: another local user cannot reach a client,
//! peer or cluster-bus port, while a process that joins the namespace (the row's worker) can.
//! Needs root (to make the namespace and to act as `nobody`), etcd and redis-server.

use std::net::TcpStream;
use std::process::Command;

use kvbench_engines::{server_for, shaped_server};
use kvbench_model::engine::RunningServer;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Every port the server's settings name (client ports and their peer or bus ports).
fn ports(s: &dyn RunningServer) -> Vec<u16> {
    let mut v = Vec::new();
    for (k, val) in s.info() {
        if k.ends_with(".port") {
            // "PORT (peer PEER)"
            v.extend(val.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse::<u16>().ok()));
        }
    }
    v
}

/// Can user `nobody` open a TCP connection to 127.0.0.1:port?
fn nobody_connects(port: u16) -> bool {
    let probe = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let o = Command::new("runuser").args(["-u", "nobody", "--", "timeout", "5", "bash", "-c", &probe]).output();
    o.map(|o| o.status.success()).unwrap_or(false)
}

/// Can a thread that joins network namespace `fd` connect to 127.0.0.1:port?
fn inside_connects(fd: i32, port: u16) -> bool {
    std::thread::spawn(move || {
        // SAFETY: moves only this short-lived thread into the server's namespace.
        if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
            return false;
        }
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .join()
    .unwrap()
}

type Start<'a> = &'a dyn Fn(&std::path::Path) -> Result<Box<dyn RunningServer>, String>;

fn check(name: &str, start: Start<'_>) {
    let dir = tempfile::Builder::new().prefix("kvbench-netns-").tempdir().unwrap();
    let s = match start(dir.path()) {
        Ok(s) => s,
        Err(e) if e.contains("not found") => return eprintln!("skipping {name}: {e}"),
        Err(e) => panic!("{name} did not start: {e}"),
    };
    let fd = s.netns().unwrap_or_else(|| panic!("{name}: no private network: {:?}", s.info().get("network")));
    let ports = ports(s.as_ref());
    assert!(ports.len() >= 6, "{name}: client and peer or bus ports: {ports:?}");
    for &p in &ports {
        assert!(inside_connects(fd, p), "{name}: port {p} is served inside the namespace");
        assert!(!nobody_connects(p), "{name}: user nobody reached port {p}");
    }
    assert!(s.info()["network"].contains("private network namespace"));
    s.stop().unwrap();
}

#[test]
fn regression_cluster_ports_refuse_other_users() {
    if !is_root() {
        return eprintln!("skipping: a network namespace and acting as nobody need root");
    }
    check("etcd", &|d| server_for("go-etcd").expect("go-etcd has a server")(d));
    let redis = shaped_server(
        "redis-cluster",
        &[("masters".to_string(), serde_json::json!(3)), ("replicas".to_string(), serde_json::json!(1))]
            .into_iter()
            .collect(),
    );
    let (_, start) = redis.expect("a shaped Redis Cluster");
    check("redis-cluster", &|d| start(d));
}
