//! Traces written by the real tools, read back: `redis-cli monitor` of `redis-benchmark`
//! traffic, and memcached's `watch fetchers mutations` of `memcslap` traffic. The counts the
//! benchmarks report are the counts the readers must give.
//!
//! A missing tool fails the test (set KVBENCH_SKIP_TRACE_TOOLS to skip instead). Every server
//! runs in a private directory on a Unix socket only, and is killed when the test ends,
//! passing or not.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kvbench_trace::{Format, Kind, TraceOp};

/// A process killed and reaped when dropped.
struct Running(Child);

impl Running {
    fn spawn(cmd: &mut Command) -> Running {
        Running(cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}")))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The tools' paths; `None` (skip) only when they are missing and KVBENCH_SKIP_TRACE_TOOLS is set.
fn tools<const N: usize>(names: [&str; N]) -> Option<[PathBuf; N]> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let find = |name: &str| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file());
    let found = names.map(find);
    let missing: Vec<&str> = names.iter().zip(&found).filter(|(_, p)| p.is_none()).map(|(n, _)| *n).collect();
    if missing.is_empty() {
        return Some(found.map(Option::unwrap_or_default));
    }
    if std::env::var_os("KVBENCH_SKIP_TRACE_TOOLS").is_some() {
        eprintln!("skipped: {} not found (KVBENCH_SKIP_TRACE_TOOLS is set)", missing.join(", "));
        return None;
    }
    panic!("{} not found on PATH (install them, or set KVBENCH_SKIP_TRACE_TOOLS=1 to skip)", missing.join(", "));
}

/// A directory only its owner can enter: the servers' sockets live in it.
fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.stderr(Stdio::inherit()).output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_trace(path: &Path, format: Format) -> (Vec<TraceOp>, BTreeMap<String, u64>) {
    let mut r = kvbench_trace::open(path, None).unwrap();
    assert_eq!(r.format(), format);
    let ops: Vec<TraceOp> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert!(r.hash().is_some());
    assert_eq!(r.bytes_read(), std::fs::metadata(path).unwrap().len());
    (ops, r.skipped().clone())
}

fn count(ops: &[TraceOp], pick: impl Fn(&TraceOp) -> bool) -> usize {
    ops.iter().filter(|o| pick(o)).count()
}

#[test]
fn redis_monitor_of_redis_benchmark_reads_as_its_requests() {
    let Some([server, cli, bench]) = tools(["redis-server", "redis-cli", "redis-benchmark"]) else { return };
    let dir = private_dir();
    let sock = dir.path().join("r.sock");
    let _server = Running::spawn(
        Command::new(server)
            .args(["--port", "0", "--unixsocket"])
            .arg(&sock)
            .args(["--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null()),
    );
    wait_until("redis-server's socket", || UnixStream::connect(&sock).is_ok());
    let trace = dir.path().join("m.txt");
    let monitor =
        Running::spawn(Command::new(&cli).arg("-s").arg(&sock).arg("monitor").stdout(File::create(&trace).unwrap()));
    wait_until("MONITOR's OK", || std::fs::metadata(&trace).map(|m| m.len() >= 3).unwrap_or(false));
    let redis = |args: &[&str]| run(Command::new(&cli).arg("-s").arg(&sock).args(args));
    redis(&["PING"]);
    redis(&["INCR", "other:n"]);
    redis(&["EXISTS", "other:a"]);
    redis(&["DEL", "other:a", "other:b"]);
    redis(&["EVAL", "redis.call('set', 'other:lua', 'vv')", "0"]);
    run(Command::new(bench).arg("-s").arg(&sock).args(["-t", "set,get,mset", "-n", "2000", "-r", "500", "-q"]));
    redis(&["ECHO", "kvbench-end"]);
    wait_until("the last command in the capture", || {
        std::fs::read(&trace).is_ok_and(|t| t.ends_with(b"\"kvbench-end\"\n"))
    });
    drop(monitor);

    let (ops, skipped) = read_trace(&trace, Format::RedisMonitor);
    let bench: Vec<&TraceOp> = ops.iter().filter(|o| o.key.starts_with(b"key:")).collect();
    let ours: Vec<&TraceOp> = ops.iter().filter(|o| !o.key.starts_with(b"key:")).collect();
    let puts = |joined| bench.iter().filter(|o| o.kind == Kind::Put && o.joined == joined).count();
    assert_eq!(puts(false), 2000 + 2000, "2000 SETs and 2000 MSETs");
    assert_eq!(puts(true), 2000 * 9, "each MSET sets 10 keys");
    assert_eq!(bench.iter().filter(|o| o.kind == Kind::Get && !o.joined).count(), 2000);
    assert_eq!(bench.len(), 2000 + 2000 + 20000);
    for op in &bench {
        let n: u32 = std::str::from_utf8(&op.key[4..]).unwrap().parse().unwrap();
        assert!(op.key.len() == 16 && n < 500, "{op:?}");
        let want = if op.kind == Kind::Put { Some(3) } else { None };
        assert_eq!(op.value_size, want, "redis-benchmark's values are 3 bytes");
    }
    let summary: Vec<(Kind, &[u8], Option<u32>, bool)> =
        ours.iter().map(|o| (o.kind, o.key.as_slice(), o.value_size, o.joined)).collect();
    let want: Vec<(Kind, &[u8], Option<u32>, bool)> = vec![
        (Kind::Get, b"other:a", None, false),
        (Kind::Delete, b"other:a", None, false),
        (Kind::Delete, b"other:b", None, true),
        (Kind::Put, b"other:lua", Some(2), false),
    ];
    assert_eq!(summary, want);
    // Every connection over the socket is `unix:PATH` alike; the script's commands are `lua`'s.
    let clients: HashSet<u32> = ops.iter().map(|o| o.client).collect();
    assert_eq!(clients.len(), 2);
    assert_ne!(ours[3].client, ours[0].client);
    let names: Vec<&str> = skipped.keys().map(String::as_str).collect();
    assert_eq!(names, ["ECHO", "EVAL", "INCR", "PING"]);
    assert!(skipped.values().all(|&n| n == 1), "{skipped:?}");
}

/// A memcached line-protocol request on its own connection, read up to `end`.
fn memcached_request(sock: &Path, request: &str, end: &str) -> String {
    let mut c = UnixStream::connect(sock).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    let mut r = BufReader::new(c);
    while !reply.ends_with(end) {
        assert!(r.read_line(&mut reply).unwrap() > 0, "memcached closed the connection: {reply}");
    }
    reply
}

/// Copies the watch stream into `file` until `marker` has passed (or 8 s).
fn capture(mut watch: UnixStream, mut file: File, marker: &'static [u8]) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        watch.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let deadline = Instant::now() + Duration::from_secs(8);
        let mut buf = vec![0u8; 1 << 20];
        let mut tail: Vec<u8> = Vec::new();
        while Instant::now() < deadline {
            let n = match watch.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
                Err(e) => panic!("watch: {e}"),
            };
            file.write_all(&buf[..n]).unwrap();
            // The marker may straddle two reads: look in the end of the last one too.
            tail.extend_from_slice(&buf[..n]);
            if tail.windows(marker.len()).any(|w| w == marker) {
                return;
            }
            tail.drain(..tail.len().saturating_sub(marker.len()));
        }
    })
}

/// The numbers memcslap reports as `Time to VERB  N keys`.
fn reported(out: &str, verb: &str) -> usize {
    let prefix = format!("Time to {verb} ");
    out.lines()
        .filter_map(|l| l.trim_start().strip_prefix(prefix.as_str()))
        .map(|rest| rest.split_whitespace().next().unwrap().parse::<usize>().unwrap())
        .sum()
}

#[test]
fn memcached_watch_of_memcslap_reads_as_its_requests() {
    let Some([server, slap]) = tools(["memcached", "memcslap"]) else { return };
    let dir = private_dir();
    let sock = dir.path().join("m.sock");
    let mut cmd = Command::new(server);
    // The default 64 KiB per-worker log buffer drops most events under memcslap (counted only
    // in `stats` as log_worker_dropped).
    cmd.arg("-s").arg(&sock).args(["-a", "0700", "-m", "64", "-o", "worker_logbuf_size=8192,watcher_logbuf_size=8192"]);
    if std::fs::metadata(dir.path()).unwrap().uid() == 0 {
        cmd.args(["-u", "root"]); // memcached refuses to run as root without it
    }
    let _server = Running::spawn(cmd.stdout(Stdio::null()));
    wait_until("memcached's socket", || UnixStream::connect(&sock).is_ok());

    let mut watch = UnixStream::connect(&sock).unwrap();
    watch.write_all(b"watch fetchers mutations\r\n").unwrap();
    let mut ok = [0u8; 4];
    watch.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"OK\r\n");
    let trace = dir.path().join("w.txt");
    let mut file = File::create(&trace).unwrap();
    file.write_all(&ok).unwrap();
    let copier = capture(watch, file, b"key=kvbench-end ");

    const EXECUTE: usize = 2000;
    let servers = format!("--servers={}", sock.display());
    let slap = |test: &str| {
        let n = EXECUTE.to_string();
        run(Command::new(&slap).args([servers.as_str(), "--test", test, "--execute-number", &n, "--concurrency=2"]))
    };
    let set_run = slap("set");
    let get_run = slap("get");
    memcached_request(&sock, "get kvbench-end\r\n", "END\r\n");
    copier.join().unwrap();
    let stats = memcached_request(&sock, "stats\r\n", "END\r\n");
    for lost in ["log_worker_dropped", "log_watcher_skipped"] {
        assert!(stats.contains(&format!("STAT {lost} 0\r\n")), "memcached lost events: {stats}");
    }

    let (ops, skipped) = read_trace(&trace, Format::MemcachedWatch);
    assert!(skipped.is_empty(), "{skipped:?}");
    let (sets, gets) = (reported(&set_run, "set") + reported(&get_run, "set"), reported(&get_run, "get"));
    assert!(sets >= EXECUTE && gets > 0, "memcslap said:\n{set_run}\n{get_run}");
    assert_eq!(count(&ops, |o| o.kind == Kind::Put), sets, "memcslap said:\n{set_run}\n{get_run}");
    // memcslap counts the gets that found their key; the misses are in the trace too.
    assert_eq!(count(&ops, |o| o.kind == Kind::Get && o.value_size.is_some()), gets, "memcslap said:\n{get_run}");
    assert_eq!(count(&ops, |o| o.kind == Kind::Get), 2 * EXECUTE + 1, "each thread's gets and the end marker");
    // A found get's size is one its key was stored with. Not necessarily the last before it:
    // memcached merges its worker threads' logs, so events of different connections may come
    // out of time order.
    let mut stored: HashMap<&[u8], HashSet<u32>> = HashMap::new();
    for op in ops.iter().filter(|o| o.kind == Kind::Put) {
        let size = op.value_size.unwrap_or_else(|| panic!("a put without its size: {op:?}"));
        assert!((1..=1 << 20).contains(&size), "{op:?}");
        stored.entry(&op.key).or_default().insert(size);
    }
    for op in ops.iter().filter(|o| o.kind != Kind::Put) {
        assert_eq!(op.kind, Kind::Get, "{op:?}");
        if let Some(size) = op.value_size {
            assert!(stored.get(op.key.as_slice()).is_some_and(|s| s.contains(&size)), "{op:?}");
        }
    }
    assert!(ops.iter().all(|o| o.key.iter().all(u8::is_ascii_alphanumeric) || o.key == b"kvbench-end"));
    assert!(ops.windows(2).all(|w| w[0].ts_us <= w[1].ts_us + 1_000_000), "times in order, give or take a thread");
    let clients: HashSet<u32> = ops.iter().map(|o| o.client).collect();
    assert!(clients.len() >= 2, "{clients:?}");
}
