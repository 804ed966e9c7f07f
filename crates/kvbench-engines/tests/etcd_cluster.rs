//! The 3-member etcd cluster kvbench starts for `go-etcd`: every member healthy on loopback,
//! writes replicated through Raft (a key put on one member is read on another), the cluster
//! still serving with one member stopped, and nothing left behind. The Go engine's own test is
//! in drivers/go/internal/engines. Set KVBENCH_ALLOW_MISSING=1 to skip when etcd is missing.

use std::io::{Read, Write};
use std::net::TcpStream;

use kvbench_core::engine::RunningServer;
use kvbench_engines::etcdcluster::{health, start_cluster};
use kvbench_engines::{server, server_for};

/// POST a JSON body to etcd's gRPC gateway (`/v3/kv/...`) and return the response body.
fn gateway(port: u16, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}

#[test]
fn three_members_replicate_and_survive_one_stop() {
    assert!(server_for("go-etcd").is_some());
    assert!(server_for("go-bbolt").is_none());
    let dir = tempfile::Builder::new().prefix("kvbench-etcd-").tempdir().unwrap();
    let mut c = match start_cluster(dir.path(), 3) {
        Ok(c) => c,
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => {
            eprintln!("skipping etcd: {e}");
            return;
        }
        Err(e) => panic!("etcd did not start: {e}"),
    };
    let ports: Vec<u16> = c.url().split(',').map(|u| u.rsplit(':').next().unwrap().parse().unwrap()).collect();
    assert_eq!(ports.len(), 3);
    let info = c.info();
    assert!(info["durability"].contains("fsynced"), "{info:?}");
    assert!(info["version"].contains("etcd"), "{info:?}");
    // "a" = "b" (base64 "YQ==", "Yg==") put on m0, read on m2.
    gateway(ports[0], "/v3/kv/put", r#"{"key":"YQ==","value":"Yg=="}"#);
    let got = gateway(ports[2], "/v3/kv/range", r#"{"key":"YQ=="}"#);
    assert!(got.contains(r#""value":"Yg==""#), "{got}");

    // One member down: the other two still have a quorum.
    c.members_mut().0[0].proc.stop().unwrap();
    gateway(ports[1], "/v3/kv/put", r#"{"key":"YQ==","value":"Yw=="}"#);
    assert!(gateway(ports[2], "/v3/kv/range", r#"{"key":"YQ=="}"#).contains(r#""value":"Yw==""#));
    assert!(health(ports[1]).is_ok());

    let pid: i32 = info["pid"].parse().unwrap();
    Box::new(c).stop().unwrap();
    for p in ports {
        assert!(!server::port_open(p), "port {p} open after stop");
    }
    assert!(!server::group_alive(pid));
}
