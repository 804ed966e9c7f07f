//! `kvbench serve` as its clients see it: kvbench's binary API, RocksServer's byte-exact
//! replies, the token, the body, key and reply limits, confinement to the root, slow clients.
//! Each test starts a server in a process of its own (this test binary run again as
//! [`server_child`]: the crate has no binary, and the server runs until it is killed).

use std::path::Path;
use std::process::Command;

use clap::Parser;
use kvbench_engines::conformance::engine_or_skip as descriptor;

/// Where a re-run of this binary finds the server's arguments (JSON), which makes it the server.
const CHILD_ARGS: &str = "KVBENCH_SERVE_TEST_ARGS";

#[derive(Parser)]
struct ServeCli {
    #[command(flatten)]
    args: kvbench_serve::ServeArgs,
}

/// Not a test of its own: the server process of the others, when [`CHILD_ARGS`] is set.
#[test]
fn server_child() {
    let Ok(json) = std::env::var(CHILD_ARGS) else { return };
    let args: Vec<String> = serde_json::from_str(&json).unwrap();
    let cli = ServeCli::parse_from(std::iter::once("serve".to_string()).chain(args));
    std::process::exit(kvbench_serve::main(cli.args, say));
}

fn say(line: std::fmt::Arguments<'_>) {
    eprintln!("{line}");
}

/// `kvbench serve ARGS` as a child process, with no token from the environment.
fn serve(args: &[&str]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "server_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ARGS, serde_json::to_string(args).unwrap())
        .env_remove(kvbench_engines::http::TOKEN_ENV)
        .stdout(std::process::Stdio::null());
    c
}

fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// A `kvbench serve --engine rocksdb` child on a free port (this test binary run again as
/// [`server_child`]), killed when dropped.
struct Served {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(extra: &[&str]) -> Option<Served> {
        descriptor("rocksdb")?;
        let dir = tempfile::tempdir().unwrap();
        let port = kvbench_engines::servers::lifecycle::free_port().unwrap();
        let listen = format!("127.0.0.1:{port}");
        let root = dir.path().join("root");
        let mut args = vec!["--engine", "rocksdb", "--listen", &listen, "--sync", "none", "--dir"];
        args.extend([root.to_str().unwrap(), "--option", "compression=none"]);
        args.extend(extra);
        let child = serve(&args).spawn().unwrap();
        let t0 = std::time::Instant::now();
        while !kvbench_engines::servers::lifecycle::port_open(port) {
            assert!(t0.elapsed().as_secs() < 30, "kvbench serve did not listen");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(Served { child, port, _dir: dir })
    }

    fn root(&self) -> std::path::PathBuf {
        self._dir.path().join("root")
    }

    /// One request on a new connection (closed after it): (status, body).
    fn exchange(&self, req: &[u8]) -> (u16, Vec<u8>) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        s.write_all(req).unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        let split = all.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
        let head = String::from_utf8_lossy(&all[..split]).to_string();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, all[split + 4..].to_vec())
    }

    fn post_with(&self, path: &str, headers: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let mut r = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        self.exchange(&r)
    }

    fn post(&self, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        self.post_with(path, "", body)
    }

    fn get_with(&self, target: &str, headers: &str) -> (u16, Vec<u8>) {
        self.exchange(format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n").as_bytes())
    }

    fn get(&self, target: &str) -> (u16, Vec<u8>) {
        self.get_with(target, "")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// kvbench's own binary API, as curl would use it.
#[test]
fn serve_answers_kvbench_api() {
    let Some(s) = Served::start(&[]) else { return };
    assert_eq!(s.get("/health").0, 200);
    // put a=1, b=22 (length-prefixed pairs).
    let mut body = Vec::new();
    for (k, v) in [(&b"a"[..], &b"1"[..]), (b"b", b"22")] {
        kvbench_engines::http::put_bytes(&mut body, k);
        kvbench_engines::http::put_bytes(&mut body, v);
    }
    assert_eq!(s.post("/kv/put", &body).0, 200);
    assert_eq!(s.get("/kv/get?key=61"), (200, b"1".to_vec()));
    assert_eq!(s.get("/kv/get?key=7a").0, 404);
    // mget with newline-separated hex keys: b, z, a.
    let (st, out) = s.post_with("/kv/mget", "Content-Type: text/plain\r\n", b"62\n7a\n61\n");
    assert_eq!(st, 200);
    assert_eq!(out, [&[1u8, 0, 0, 0, 2][..], b"22", &[0, 0, 0, 0, 0], &[1, 0, 0, 0, 1], b"1"].concat());
    let (st, out) = s.get("/kv/scan?start=62&limit=10");
    assert_eq!(st, 200);
    assert_eq!(out, [&[0u8, 0, 0, 1][..], b"b", &[0, 0, 0, 2], b"22"].concat());
    let mut del = Vec::new();
    kvbench_engines::http::put_bytes(&mut del, b"a");
    assert_eq!(s.post("/kv/delete", &del).0, 200);
    assert_eq!(s.get("/kv/get?key=61").0, 404);
    assert_eq!(s.get("/kv/get?key=zz").0, 400);
    assert_eq!(s.post("/kv/put", &[0, 0, 0, 9, b'x']).0, 400, "a truncated body is refused");
}

/// RocksServer's API, every endpoint, compared byte for byte with the replies its listeners
/// build (protocol.md and src/listeners of RocksServer).
#[test]
fn rocksserver_replies_are_byte_exact() {
    let Some(s) = Served::start(&[]) else { return };
    let ok = (200, b"OK\n".to_vec());
    let fail = (200, b"FAIL\n".to_vec());
    assert_eq!(s.post("/set", b"key1\n5\nhello"), ok);
    assert_eq!(s.get("/get?key1"), (200, b"5\nhello\n".to_vec()));
    assert_eq!(s.get("/get?absent"), (200, b"-1\n".to_vec()));
    assert_eq!(s.get("/get"), (200, b"-1\n".to_vec()), "no key");
    // A value may hold newlines: its length decides.
    assert_eq!(s.post("/set", b"nl\n3\na\nb"), ok);
    assert_eq!(s.get("/get?nl"), (200, b"3\na\nb\n".to_vec()));
    assert_eq!(s.post("/mset", b"k2\n2\nv2\nk3\n0\n\nk4\n3\nv44\n"), ok);
    assert_eq!(s.get("/mget?k2&nope&k3&key1"), (200, b"k2\n2\nv2\nnope\n-1\nk3\n0\n\nkey1\n5\nhello\n".to_vec()));
    assert_eq!(s.get("/mget"), (200, Vec::new()), "no keys: an empty reply");
    assert_eq!(s.get("/exist?k2"), (200, b"OK\n2\nv2\n".to_vec()));
    assert_eq!(s.get("/exist?nope"), fail);
    assert_eq!(s.post("/del", b"k2"), ok);
    assert_eq!(s.get("/get?k2"), (200, b"-1\n".to_vec()));
    assert_eq!(s.post("/mdel", b"k3\nk4"), ok);
    assert_eq!(s.get("/mget?k3&k4"), (200, b"k3\n-1\nk4\n-1\n".to_vec()));
    // incr: absent counts as 0; a step may be given and may be negative.
    assert_eq!(s.post("/incr", b"n"), ok);
    assert_eq!(s.post("/incr", b"n\n10"), ok);
    assert_eq!(s.post("/incr", b"n\n-4"), ok);
    assert_eq!(s.get("/get?n"), (200, b"1\n7\n".to_vec()));
    // What RocksServer's POST listeners refuse: another method, an empty body.
    assert_eq!(s.get("/set"), fail);
    assert_eq!(s.post("/del", b""), fail);
    // A length past the end of the body: refused, nothing written.
    assert_eq!(s.post("/set", b"short\n99\nabc"), fail);
    assert_eq!(s.get("/get?short"), (200, b"-1\n".to_vec()));
    let (st, stats) = s.get("/stats");
    assert_eq!(st, 200);
    let stats = String::from_utf8(stats).unwrap();
    assert!(stats.contains("engine: rocksdb") && stats.contains("requests: "), "{stats}");
}

#[test]
fn a_token_is_required_when_given() {
    let Some(s) = Served::start(&["--token", "s3cret"]) else { return };
    assert_eq!(s.get("/health").0, 200, "/health needs no token");
    assert_eq!(s.get("/get?a").0, 401);
    assert_eq!(s.get_with("/get?a", "Authorization: Bearer wrong\r\n").0, 401);
    assert_eq!(s.get_with("/get?a", "Authorization: Basic s3cret\r\n").0, 401);
    assert_eq!(s.post("/set", b"a\n1\nx").0, 401);
    assert_eq!(s.post("/open", br#"{"dir":"x"}"#).0, 401);
    assert_eq!(s.get_with("/get?a", "Authorization: Bearer s3cret\r\n"), (200, b"-1\n".to_vec()));
}

#[test]
fn bodies_and_key_counts_beyond_the_limits_get_413() {
    let Some(s) = Served::start(&["--max-body", "1k", "--max-keys", "3"]) else { return };
    let big = vec![b'x'; 2000];
    let body = [&b"k\n2000\n"[..], &big].concat();
    assert_eq!(s.post("/set", &body).0, 413);
    // Refused on the declared length alone: nothing of a 10 GB body is read or buffered.
    let (st, _) = s.exchange(b"POST /set HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\nk\n1\n");
    assert_eq!(st, 413);
    // A chunked body is counted as it arrives.
    let chunk = format!(
        "POST /set HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n{}\r\n0\r\n\r\n",
        "y".repeat(2000)
    );
    assert_eq!(s.exchange(chunk.as_bytes()).0, 413);
    assert_eq!(s.get("/mget?a&b&c&d").0, 413);
    assert_eq!(s.post("/mdel", b"a\nb\nc\nd").0, 413);
    assert_eq!(s.get("/mget?a&b&c").0, 200);
    assert_eq!(s.post("/set", b"k\n1\nv"), (200, b"OK\n".to_vec()), "within the limits");
}

#[test]
fn open_refuses_paths_outside_the_root() {
    let Some(s) = Served::start(&["--no-open"]) else { return };
    let outside = s._dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, s.root().join("link")).unwrap();
    let open = |dir: &str| {
        let body = format!(
            r#"{{"dir":{dir:?},"options":{{}},"sync":"none","mode":"read-write","expected_records":10,"expected_bytes":100}}"#
        );
        s.post("/open", body.as_bytes())
    };
    assert_eq!(s.get("/get?a"), (200, b"-1\n".to_vec()), "no database open yet");
    assert_eq!(s.get("/kv/get?key=61").0, 503);
    for bad in ["../escaped", "/tmp/kvbench-escaped", "link/escaped", "sub/../../escaped"] {
        let (st, msg) = open(bad);
        assert_eq!(st, 403, "{bad}: {}", String::from_utf8_lossy(&msg));
    }
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none(), "nothing created through the link");
    assert!(!Path::new("/tmp/kvbench-escaped").exists());
    assert_eq!(open("jobs/one").0, 200);
    assert!(s.root().join("jobs/one").read_dir().unwrap().count() > 0, "the database is inside the root");
    let abs = s.root().canonicalize().unwrap().join("jobs/two");
    assert_eq!(open(abs.to_str().unwrap()).0, 200, "an absolute path inside the root");
}

/// Regression (issue 12): a 40 MB /mget body took the old server to 1.5 GB. Hostile bodies of
/// tiny keys, up to the body limit, must now cost about their own size.
#[test]
fn hostile_bodies_keep_memory_bounded() {
    let Some(s) = Served::start(&["--max-body", "48m"]) else { return };
    let before = peak_rss_mib(s.child.id());
    let mut kv = Vec::with_capacity(48 << 20);
    while kv.len() + 5 <= 47 << 20 {
        kvbench_engines::http::put_bytes(&mut kv, b"k");
    }
    assert_eq!(s.post("/kv/mget", &kv).0, 413, "9 M keys > --max-keys");
    let mdel: Vec<u8> = b"k\n".repeat(23 << 20);
    assert_eq!(s.post("/mdel", &mdel).0, 413);
    let hex: Vec<u8> = b"6b\n".repeat(15 << 20);
    assert_eq!(s.post_with("/kv/mget", "Content-Type: text/plain\r\n", &hex).0, 413);
    let grew = peak_rss_mib(s.child.id()) - before;
    assert!(grew < 200, "peak memory grew by {grew} MiB for bodies of 47 MiB");
}

/// Clients that send their head or body at a byte a second hold no thread: /health answers at
/// once meanwhile, and the server drops them after its read timeout.
#[test]
fn slow_clients_do_not_stall_health() {
    use std::io::{Read, Write};
    let Some(s) = Served::start(&["--read-timeout", "2", "--threads", "1"]) else { return };
    let mut slow = Vec::new();
    for i in 0..16 {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        let start: &[u8] = if i % 2 == 0 {
            b"GET /get?a HTTP/1.1\r\nX-Slow: "
        } else {
            b"POST /set HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nk"
        };
        c.write_all(start).unwrap();
        slow.push(c);
    }
    let t0 = std::time::Instant::now();
    for round in 0..10 {
        for c in &mut slow {
            let _ = c.write_all(b"x");
        }
        let t = std::time::Instant::now();
        assert_eq!(s.get("/health").0, 200);
        assert!(t.elapsed() < std::time::Duration::from_millis(500), "round {round}: /health took {:?}", t.elapsed());
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    // By now (over 3 s) every slow client was cut off: head ones closed, body ones got 408.
    assert!(t0.elapsed() > std::time::Duration::from_secs(3));
    for (i, c) in slow.iter_mut().enumerate() {
        c.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf);
        assert!(buf.is_empty() || text.starts_with("HTTP/1.1 408"), "slow client {i} got {text:?}");
    }
}

/// Run as root, `kvbench serve` says so at start (and says when no token protects it).
#[test]
fn serve_warns_when_run_as_root() {
    use std::io::BufRead;
    if descriptor("rocksdb").is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let args = ["--engine", "rocksdb", "--listen", "127.0.0.1:0", "--no-open", "--dir", dir];
    let mut child = serve(&args).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let done = line.starts_with("kvbench serve:");
        lines.push(line);
        if done {
            break;
        }
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    let all = lines.join("\n");
    let warned = all.contains("warning: kvbench serve runs as root");
    assert_eq!(warned, kvbench_engines::servers::lifecycle::is_root(), "{all}");
    assert!(all.contains("no token"), "{all}");
}

/// A body that holds the whole body budget makes other bodies wait, never bodiless requests:
/// a GET takes no budget.
#[test]
fn a_held_body_budget_does_not_block_gets() {
    use std::io::Write;
    let Some(s) = Served::start(&["--max-body", "1k", "--body-budget", "1k", "--read-timeout", "3"]) else { return };
    let mut slow = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    slow.write_all(b"POST /set HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nk").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let t = std::time::Instant::now();
    assert_eq!(s.get("/get?a"), (200, b"-1\n".to_vec()));
    assert!(t.elapsed() < std::time::Duration::from_secs(1), "a GET waited {:?} for the body budget", t.elapsed());
    // A second body waits for the budget until the slow one is cut off by the read timeout.
    let t = std::time::Instant::now();
    assert_eq!(s.post("/set", b"b\n1\nx"), (200, b"OK\n".to_vec()));
    assert!(t.elapsed() > std::time::Duration::from_secs(2), "the second body did not wait: {:?}", t.elapsed());
    drop(slow);
}

/// Regression (issue 31): a 1 KB /kv/mget naming one 4 MiB value 128 times was answered with
/// 512 MiB and took the server to 1.3 GB. The reply budget (`--max-reply`, 64 MiB) refuses it
/// while the values are read; one absent key a million times stays small too.
#[test]
fn regression_an_mget_reply_is_bounded_by_the_reply_budget() {
    let Some(s) = Served::start(&[]) else { return };
    let mut put = Vec::new();
    kvbench_engines::http::put_bytes(&mut put, b"big");
    kvbench_engines::http::put_bytes(&mut put, &vec![b'v'; 4 << 20]);
    assert_eq!(s.post("/kv/put", &put).0, 200);
    let before = peak_rss_mib(s.child.id());
    let mut keys = Vec::new();
    (0..128).for_each(|_| kvbench_engines::http::put_bytes(&mut keys, b"big"));
    let (st, msg) = s.post("/kv/mget", &keys);
    assert_eq!(st, 413, "{}", String::from_utf8_lossy(&msg));
    assert!(String::from_utf8_lossy(&msg).contains("--max-reply"));
    assert_eq!(s.get(&format!("/mget?{}", vec!["big"; 128].join("&"))).0, 413, "RocksServer's /mget too");
    let mut absent = Vec::new();
    (0..1_000_000).for_each(|_| kvbench_engines::http::put_bytes(&mut absent, b"no"));
    assert_eq!(s.post("/kv/mget", &absent).0, 200);
    let grew = peak_rss_mib(s.child.id()) - before;
    eprintln!("peak memory grew by {grew} MiB");
    assert!(grew < 300, "peak memory grew by {grew} MiB for requests of at most 6 MB");
    assert_eq!(s.post("/kv/mget", &keys[..7 * 15]).0, 200, "15 times 4 MiB fits the budget");
}

/// Files under `dir` whose names end with `ext`, at any depth.
fn files_ending(dir: &Path, ext: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => files_ending(&e.path(), ext),
                    _ => usize::from(e.file_name().to_string_lossy().ends_with(ext)),
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Issue 45 point 3: a client's settle phase reaches the served store, so a cold phase after
/// it evicts SST files rather than reading a memtable the load left behind.
#[test]
fn settle_flushes_the_served_store_to_its_files() {
    let Some(s) = Served::start(&[]) else { return };
    let mut body = Vec::new();
    for i in 0..100u32 {
        kvbench_engines::http::put_bytes(&mut body, format!("key{i:04}").as_bytes());
        kvbench_engines::http::put_bytes(&mut body, b"value");
    }
    assert_eq!(s.post("/kv/put", &body).0, 200);
    assert_eq!(files_ending(&s.root(), ".sst"), 0, "the puts sit in the memtable");
    let (status, note) = s.post("/settle", b"");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&note));
    assert!(String::from_utf8_lossy(&note).contains("flushed"), "{}", String::from_utf8_lossy(&note));
    assert!(files_ending(&s.root(), ".sst") >= 1, "settled: the records are in SST files");
    assert_eq!(s.get("/kv/get?key=6b657930303432"), (200, b"value".to_vec()));
}
