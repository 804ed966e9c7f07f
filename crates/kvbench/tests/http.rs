//! http-rocksdb (and http-lmdb): RocksDB served by `kvbench serve`, measured over HTTP. The
//! conformance suite runs against a server started per test; an end-to-end `kvbench run`
//! verifies every read and checks that the served process is gone afterwards. These tests live
//! in the kvbench crate because the server is this crate's binary (KVBENCH_BIN).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use kvbench_core::result::{RunResult, Status};
use kvbench_engines::{conformance, find, Entry};

fn use_this_binary() {
    // Every test sets the same value, so concurrent tests agree.
    std::env::set_var("KVBENCH_BIN", env!("CARGO_BIN_EXE_kvbench"));
}

fn descriptor(name: &str) -> Option<&'static kvbench_core::engine::EngineDescriptor> {
    match find(name) {
        Some(Entry::Ready(d)) => Some(d),
        Some(Entry::Missing { why, .. }) => {
            if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() {
                eprintln!("skipping {name}: {why}");
                return None;
            }
            panic!("engine {name} missing: {why}");
        }
        None => panic!("engine {name} is not in the registry"),
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn conformance_of(name: &str) {
    use_this_binary();
    let Some(desc) = descriptor(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    std::fs::create_dir_all(&db).unwrap();
    let sdir = tempfile::Builder::new().prefix("kvbench-server-").tempdir().unwrap();
    let start = desc.start_server.expect("http engines start a server");
    let server = start(sdir.path()).unwrap_or_else(|e| panic!("{name}: server did not start: {e}"));
    let url = server.url();
    let pid: i32 = server.info()["pid"].parse().unwrap();
    conformance::run(desc, &db, Some(&url)).unwrap_or_else(|e| panic!("{name}: {e}"));
    conformance::sync_modes(desc, tmp.path(), Some(&url)).unwrap_or_else(|e| panic!("{name}: {e}"));
    // The served database lives in the job directory.
    assert!(std::fs::read_dir(&db).unwrap().count() > 0, "{name}: nothing written in the job directory");
    no_nagle_stall(desc, tmp.path(), &url);
    server.stop().unwrap_or_else(|e| panic!("{name}: stop: {e}"));
    assert!(!alive(pid), "{name}: the served process {pid} survived stop");
}

/// Regression: tiny_http writes head and body separately without TCP_NODELAY, so every small
/// response waited for the client's delayed ACK (~40 ms a request). `kvbench serve` sets
/// TCP_NODELAY on its listener; small requests must not take anywhere near 40 ms.
fn no_nagle_stall(desc: &kvbench_core::engine::EngineDescriptor, root: &Path, url: &str) {
    use kvbench_core::engine::{OpenArgs, OpenMode, Options, SyncMode, WriteOp};
    let dir = root.join("nagle");
    std::fs::create_dir_all(&dir).unwrap();
    let options = Options::parse(desc.name, desc.options, &BTreeMap::new()).unwrap();
    let args = OpenArgs {
        dir: &dir,
        options: &options,
        sync: SyncMode::None,
        mode: OpenMode::ReadWrite,
        expected_records: 10,
        expected_bytes: 1000,
        url: Some(url),
        token: None,
    };
    let e = (desc.open)(&args).unwrap();
    e.write(&[WriteOp { key: b"k", value: Some(&[7u8; 3000]) }]).unwrap();
    let mut r = e.reader().unwrap();
    let mut times = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..21 {
        let t = std::time::Instant::now();
        assert!(r.get(b"k", &mut buf).unwrap());
        let mut out = Vec::new();
        r.multi_get(&[b"k", b"k"], &mut out).unwrap();
        times.push(t.elapsed());
    }
    times.sort();
    assert!(times[10] < std::time::Duration::from_millis(30), "a get and a multi-get took {:?} (median)", times[10]);
    drop(r);
    e.close().unwrap();
}

#[test]
fn http_rocksdb_conformance() {
    conformance_of("http-rocksdb");
}

#[test]
fn http_lmdb_conformance() {
    conformance_of("http-lmdb");
}

/// A raw HTTP/1.1 exchange, as curl would do it: the endpoints people use by hand.
#[test]
fn serve_answers_plain_http() {
    use std::io::{Read, Write};
    use_this_binary();
    if descriptor("rocksdb").is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = kvbench_engines::server::free_port().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .args(["serve", "--engine", "rocksdb", "--listen", &format!("127.0.0.1:{port}"), "--sync", "none"])
        .arg("--dir")
        .arg(tmp.path().join("db"))
        .args(["--option", "compression=none"])
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !kvbench_engines::server::port_open(port) {
        assert!(t0.elapsed().as_secs() < 30, "kvbench serve did not listen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let exchange = |req: &[u8]| -> (u16, Vec<u8>) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(req).unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&all[..split]).to_string();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, all[split + 4..].to_vec())
    };
    let post = |path: &str, ctype: &str, body: &[u8]| {
        let mut r = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        exchange(&r)
    };
    let get =
        |target: &str| exchange(format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
    assert_eq!(get("/health").0, 200);
    // put a=1, b=22 (length-prefixed pairs).
    let mut body = Vec::new();
    for (k, v) in [(&b"a"[..], &b"1"[..]), (b"b", b"22")] {
        kvbench_engines::http::put_bytes(&mut body, k);
        kvbench_engines::http::put_bytes(&mut body, v);
    }
    assert_eq!(post("/put", "application/octet-stream", &body).0, 200);
    assert_eq!(get("/get?key=61"), (200, b"1".to_vec()));
    assert_eq!(get("/get?key=7a").0, 404);
    // mget with newline-separated hex keys: b, z, a.
    let (st, out) = post("/mget", "text/plain", b"62\n7a\n61\n");
    assert_eq!(st, 200);
    assert_eq!(out, [&[1u8, 0, 0, 0, 2][..], b"22", &[0, 0, 0, 0, 0], &[1, 0, 0, 0, 1], b"1"].concat());
    let (st, out) = get("/scan?start=62&limit=10");
    assert_eq!(st, 200);
    assert_eq!(out, [&[0u8, 0, 0, 1][..], b"b", &[0, 0, 0, 2], b"22"].concat());
    let mut del = Vec::new();
    kvbench_engines::http::put_bytes(&mut del, b"a");
    assert_eq!(post("/delete", "application/octet-stream", &del).0, 200);
    assert_eq!(get("/get?key=61").0, 404);
    assert_eq!(get("/get?key=zz").0, 400);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
}

const SCENARIO: &str = r#"# http-rocksdb against rocksdb through kvbench run: every read verified.
seed = 11
timeout = 120
sync = "none"
[dataset]
records = 3000
value = { min = 45, max = 55 }
[[phase]]
kind = "load"
batch = 500
[[phase]]
kind = "get"
count = 500
[[phase]]
name = "mget-50"
kind = "multi-get"
keys = 50
count = 20
[[phase]]
name = "mget-1000-cold"
kind = "multi-get"
keys = 1000
count = 3
cache = "cold"
[[phase]]
kind = "scan"
[[engine]]
name = "http-rocksdb"
options = { block_cache = "1m" }
[[engine]]
name = "rocksdb"
options = { block_cache = "1m" }
"#;

#[test]
fn kvbench_run_with_http_rocksdb_verifies_reads_and_stops_the_server() {
    if descriptor("http-rocksdb").is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("s.toml"), SCENARIO).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(tmp.path())
        .env_remove("KVBENCH_BIN")
        .args(["run", "s.toml", "--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{}\nstderr:\n{stderr}", String::from_utf8_lossy(&o.stdout));
    let entry = std::fs::read_dir(tmp.path().join("results")).unwrap().next().unwrap().unwrap();
    let r = RunResult::from_json(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
    let row = r.engines.iter().find(|e| e.engine == "http-rocksdb").expect("an http-rocksdb row");
    assert_eq!(row.status, Status::Ok, "{:?}", row.error);
    let mut kinds = BTreeMap::new();
    for p in &row.phases {
        assert_eq!(p.status, Status::Ok, "{}: {:?}", p.name, p.reason);
        assert_eq!(p.mismatches + p.missing + p.errors, 0, "{}", p.name);
        kinds.insert(p.name.clone(), p.ops);
    }
    assert_eq!(kinds.get("mget-50"), Some(&1000), "{kinds:?}");
    assert!(row.space_bytes > 0, "the served database lives in the job directory");
    let cold = row.phases.iter().find(|p| p.name == "mget-1000-cold").unwrap();
    assert!(cold.cache.starts_with("cold"), "{}", cold.cache);
    let pid: i32 = row.settings.get("server.pid").expect("server.pid in the row's settings").parse().unwrap();
    assert!(!alive(pid), "the served process {pid} is still running after kvbench run");
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}
