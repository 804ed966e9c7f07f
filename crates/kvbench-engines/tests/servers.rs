//! Lifecycle of the servers kvbench starts: each real server starts in a private directory,
//! answers only on a Unix socket inside it (no TCP listener, other users refused), reports its
//! version and settings, dies when the thread that started it ends (as it would with kvbench
//! killed by SIGKILL), and leaves no process behind after `stop` or after a plain drop. Failures name the binary, the command and the log file.
//! Set KVBENCH_ALLOW_MISSING=1 to skip a server that is not installed.

use std::collections::BTreeMap;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kvbench_engines::servers::lifecycle::{self as server, ServerProcess};
use kvbench_engines::{find, Entry};
use kvbench_model::engine::{EngineDescriptor, RunningServer};

fn descriptor(name: &str) -> &'static EngineDescriptor {
    match find(name) {
        Some(Entry::Ready(d)) => d,
        _ => panic!("engine {name} was not built"),
    }
}

/// Start `name`'s server in a fresh private directory (None: not installed and allowed).
fn start(name: &str) -> Option<(Box<dyn RunningServer>, tempfile::TempDir)> {
    let d = descriptor(name);
    let dir = tempfile::Builder::new().prefix("kvbench-server-").tempdir().unwrap();
    match (d.start_server.expect("a server engine"))(dir.path()) {
        Ok(s) => Some((s, dir)),
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => {
            eprintln!("skipping {name}: {e}");
            None
        }
        Err(e) => panic!("{name} did not start: {e}"),
    }
}

/// The settings `desc` reports once opened on the server at `url` with the options `given`.
fn open_settings(
    desc: &EngineDescriptor,
    given: &BTreeMap<String, serde_json::Value>,
    dir: &Path,
    url: &str,
    token: Option<&str>,
) -> kvbench_model::engine::Result<BTreeMap<String, String>> {
    let options = kvbench_model::engine::Options::parse(desc.name, desc.options, given).unwrap();
    let args = kvbench_model::engine::OpenArgs {
        dir,
        options: &options,
        sync: Default::default(),
        mode: Default::default(),
        expected_records: 1,
        expected_bytes: 1,
        url: Some(url),
        token,
    };
    Ok((desc.open)(&args)?.settings())
}

/// Processes whose process group is `pgid`, or whose command line mentions `needle`.
fn leftovers(pgid: i32, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // Fields after the `(comm)`: state ppid pgrp ...
        let after = stat.rsplit_once(") ").map(|x| x.1).unwrap_or("");
        let pgrp: i32 = after.split(' ').nth(2).and_then(|p| p.parse().ok()).unwrap_or(0);
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if after.starts_with('Z') {
            continue; // exited, waiting to be reaped: not a running process
        }
        if pgrp == pgid || (!needle.is_empty() && cmdline.contains(needle)) {
            found.push(format!("{name}: {}", cmdline.trim()));
        }
    }
    found
}

/// The Unix socket a server URL names.
fn socket_of(url: &str) -> PathBuf {
    if let Some(p) = url.strip_prefix("memcached+unix://").or_else(|| url.strip_prefix("redis+unix://")) {
        return PathBuf::from(p);
    }
    let dir = url.split("host='").nth(1).and_then(|r| r.split('\'').next()).expect("a postgres socket dir");
    Path::new(dir).join(".s.PGSQL.5432")
}

/// Socket inodes of process `pid`'s open files.
fn socket_inodes(pid: i32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    fds.flatten()
        .filter_map(|f| std::fs::read_link(f.path()).ok())
        .filter_map(|l| l.to_string_lossy().strip_prefix("socket:[").map(|r| r.trim_end_matches(']').to_string()))
        .collect()
}

/// TCP or UDP sockets (v4 or v6) listening or bound by any process of group `pgid`.
fn network_sockets(pgid: i32) -> Vec<String> {
    let mut inodes = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let after = stat.rsplit_once(") ").map(|x| x.1).unwrap_or("");
        if after.split(' ').nth(2).and_then(|p| p.parse::<i32>().ok()) == Some(pgid) {
            inodes.extend(socket_inodes(pid));
        }
    }
    let mut found = Vec::new();
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        let text = std::fs::read_to_string(format!("/proc/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && inodes.iter().any(|i| i == f[9]) {
                found.push(format!("{table} {}", f[1]));
            }
        }
    }
    found
}

/// Can user `daemon` (no server runs as it) open a connection to `socket`? (Only meaningful when running as root.)
fn other_user_can_connect(socket: &Path) -> bool {
    use std::os::unix::process::CommandExt;
    let (uid, gid) = server::user_ids("daemon").unwrap();
    let code = "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])";
    std::process::Command::new("python3")
        .args(["-c", code])
        .arg(socket)
        .uid(uid)
        .gid(gid)
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn uid_of(pid: i32) -> u32 {
    live_uid_of(pid).unwrap_or_else(|| panic!("process {pid} is gone"))
}

/// The uid of `pid`, or None when it has exited meanwhile (a short-lived backend).
fn live_uid_of(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Children of `pid` (the real server behind `runuser`).
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn check_lifecycle(name: &str, by_drop: bool) {
    let Some((s, dir)) = start(name) else { return };
    let url = s.url();
    let info = s.info();
    let pid: i32 = info["pid"].parse().unwrap();
    let socket = socket_of(&url);
    assert!(socket.starts_with(dir.path().canonicalize().unwrap()), "{name}: socket outside the private dir: {url}");
    assert!(UnixStream::connect(&socket).is_ok(), "{name}: nothing answers on {}", socket.display());
    assert_eq!(network_sockets(pid), Vec::<String>::new(), "{name}: the server must open no TCP or UDP socket");
    assert!(info["access"].contains("Unix socket"), "{name}: access not stated: {info:?}");
    assert!(!info["version"].is_empty(), "{name}: info has no version: {info:?}");
    assert!(info["log"].starts_with(&*dir.path().to_string_lossy()), "{name}: log outside the private dir: {info:?}");
    if server::is_root() {
        assert!(!other_user_can_connect(&socket), "{name}: another user reached the server's socket");
    }
    let needle = dir.path().to_string_lossy().into_owned();
    assert!(!leftovers(pid, &needle).is_empty(), "{name}: the server's processes should be visible while it runs");
    if by_drop {
        drop(s);
    } else {
        s.stop().unwrap_or_else(|e| panic!("{name}: stop failed: {e}"));
    }
    let left = leftovers(pid, &needle);
    assert!(left.is_empty(), "{name}: processes left behind: {left:?}");
    assert!(!server::group_alive(pid), "{name}: process group {pid} still exists");
    assert!(UnixStream::connect(&socket).is_err(), "{name}: socket still answers after stop");
}

/// The server dies when the thread that started it ends without stopping it: the kernel's
/// parent-death signal, which also fires when kvbench is killed with SIGKILL.
fn check_dies_with_parent(name: &str) {
    let dir = tempfile::Builder::new().prefix("kvbench-server-").tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let d = descriptor(name);
    let started = std::thread::spawn(move || {
        let s = (d.start_server.unwrap())(&path).map_err(|e| e.to_string())?;
        let pid: i32 = s.info()["pid"].parse().unwrap();
        std::mem::forget(s); // no stop, no Drop: only the kernel can end it now
        Ok::<i32, String>(pid)
    })
    .join()
    .unwrap();
    let pid = match started {
        Ok(p) => p,
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => return,
        Err(e) => panic!("{name} did not start: {e}"),
    };
    let needle = dir.path().to_string_lossy().into_owned();
    let t0 = std::time::Instant::now();
    while !leftovers(pid, &needle).is_empty() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: reaping our own exited child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    assert!(leftovers(pid, &needle).is_empty(), "{name}: outlived its parent: {:?}", leftovers(pid, &needle));
}

#[test]
fn memcached_dies_with_its_parent() {
    check_dies_with_parent("memcached");
}

#[test]
fn redis_dies_with_its_parent() {
    check_dies_with_parent("redis");
}

#[test]
fn postgres_dies_with_its_parent() {
    check_dies_with_parent("postgres");
}

#[test]
fn memcached_starts_and_stops() {
    check_lifecycle("memcached", false);
}

#[test]
fn memcached_is_stopped_by_drop() {
    check_lifecycle("memcached", true);
}

#[test]
fn redis_starts_and_stops() {
    check_lifecycle("redis", false);
}

#[test]
fn redis_is_stopped_by_drop() {
    check_lifecycle("redis", true);
}

#[test]
fn postgres_starts_and_stops() {
    check_lifecycle("postgres", false);
}

#[test]
fn postgres_is_stopped_by_drop() {
    check_lifecycle("postgres", true);
}

#[test]
fn servers_drop_root_privileges() {
    if !server::is_root() {
        return;
    }
    if let Some((s, _dir)) = start("memcached") {
        let pid: i32 = s.info()["pid"].parse().unwrap();
        let user = s.info()["user"].clone();
        assert!(user == "memcache" || user == "nobody", "{user}");
        assert_eq!(uid_of(pid), server::user_ids(&user).unwrap().0, "memcached should run as {user}");
        s.stop().unwrap();
    }
    if let Some((s, dir)) = start("postgres") {
        let info = s.info();
        let leader: i32 = info["pid"].parse().unwrap();
        let pg_uid = server::user_ids("postgres").unwrap().0;
        assert_eq!(uid_of(leader), pg_uid, "the postmaster itself (kvbench's child) should run as postgres");
        // A backend may exit between listing and reading it: only the living ones count.
        let uids: Vec<u32> = children(leader).iter().filter_map(|&k| live_uid_of(k)).collect();
        assert!(uids.iter().all(|&u| u == pg_uid), "its backends run as postgres: {uids:?}");
        assert!(info["fsync"].contains("per row"), "{info:?}");
        assert!(info.contains_key("shared_buffers"), "{info:?}");
        // The private directory is the postgres user's and closed to others.
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(dir.path()).unwrap();
        assert_eq!(m.uid(), pg_uid);
        assert_eq!(m.mode() & 0o077, 0, "private dir mode {:o}", m.mode() & 0o777);
        s.stop().unwrap();
    }
}

#[test]
fn a_server_that_exits_is_reported_with_binary_command_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("false.log");
    std::fs::write(&log, "earlier line\nFATAL: pretend failure\n").unwrap();
    let mut p = ServerProcess::spawn("pretend", Path::new("/bin/false"), &["--flag".into()], &log, None).unwrap();
    let e = p.wait_ready(Duration::from_secs(5), || Err("not yet".into())).unwrap_err();
    assert!(e.contains("/bin/false"), "{e}");
    assert!(e.contains("command: /bin/false --flag"), "{e}");
    assert!(e.contains(&*log.to_string_lossy()), "{e}");
    assert!(e.contains("FATAL: pretend failure"), "the log's tail should be quoted: {e}");
}

#[test]
fn a_missing_binary_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.log");
    let e = ServerProcess::spawn("ghost", Path::new("/nonexistent/ghostd"), &["-p".into(), "1".into()], &log, None)
        .unwrap_err();
    assert!(e.contains("/nonexistent/ghostd") && e.contains("command:"), "{e}");
}

#[test]
fn a_server_that_never_answers_is_stopped_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let sleep = server::find_binary(&["sleep"]).unwrap();
    let mut p = ServerProcess::spawn("sleeper", &sleep, &["600".into()], &log, None).unwrap();
    let pid = p.pid();
    assert!(server::group_alive(pid));
    let e = p.wait_ready(Duration::from_millis(300), || Err("no answer".into())).unwrap_err();
    assert!(e.contains("did not answer") && e.contains("no answer") && e.contains("sleep.log"), "{e}");
    assert!(!server::group_alive(pid), "the process must be stopped after a failed start");
}

#[test]
fn stop_escalates_to_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stubborn.log");
    // Ignored signals stay ignored across exec: this `sleep` ignores SIGTERM.
    let sh = server::find_binary(&["sh"]).unwrap();
    let mut p =
        ServerProcess::spawn("stubborn", &sh, &["-c".into(), "trap '' TERM; exec sleep 600".into()], &log, None)
            .unwrap();
    p.set_grace(Duration::from_millis(300));
    let pid = p.pid();
    std::thread::sleep(Duration::from_millis(200));
    let e = p.stop().unwrap_err();
    assert!(e.contains("killed") && e.contains("stubborn.log"), "{e}");
    assert!(!server::group_alive(pid), "the group must be gone after SIGKILL");
    assert!(p.stop().is_ok(), "stopping twice is harmless");
}

#[test]
fn drop_stops_a_server_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tree.log");
    let sh = server::find_binary(&["sh"]).unwrap();
    // A parent with two children in its process group, like a postmaster and its backends.
    let p =
        ServerProcess::spawn("tree", &sh, &["-c".into(), "sleep 600 & sleep 600 & wait".into()], &log, None).unwrap();
    let pid = p.pid();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(leftovers(pid, "").len(), 3, "{:?}", leftovers(pid, ""));
    drop(p);
    assert!(leftovers(pid, "").is_empty(), "{:?}", leftovers(pid, ""));
}

/// A server the user started on TCP and named by URL: kvbench uses it as asked, passes the
/// conformance suite over TCP, and the row's settings say it was reached without authentication.
fn check_user_tcp_server(
    name: &str,
    binary: &str,
    args: impl Fn(u16, &Path) -> Vec<String>,
    url: impl Fn(u16) -> String,
) {
    let Some(bin) = server::find_binary(&[binary]) else { return };
    let dir = tempfile::Builder::new().prefix("kvbench-user-").tempdir().unwrap();
    let user = server::user_when_root(&["nobody"]);
    let d = server::server_dir(dir.path(), user).unwrap();
    let port = server::free_port().unwrap();
    let mut p = ServerProcess::spawn(name, &bin, &args(port, &d), &d.join("log"), user).unwrap();
    let url = url(port);
    p.wait_ready(server::START_TIMEOUT, || {
        std::net::TcpStream::connect(("127.0.0.1", port)).map(|_| ()).map_err(|e| e.to_string())
    })
    .unwrap();
    let db = tempfile::tempdir().unwrap();
    kvbench_engines::conformance::run(descriptor(name), db.path(), Some(&url))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let settings = open_settings(descriptor(name), &Default::default(), db.path(), &url, None).unwrap();
    let access = settings.get("access").cloned().unwrap_or_default();
    assert!(access.contains("TCP") && access.contains("without authentication"), "{name}: {access}");
    p.stop().unwrap();
}

#[test]
fn memcached_given_by_url_over_tcp_is_said_to_be_unauthenticated() {
    check_user_tcp_server(
        "memcached",
        "memcached",
        |port, _| ["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"].iter().map(|s| s.to_string()).collect(),
        |port| format!("memcached://127.0.0.1:{port}"),
    );
}

#[test]
fn redis_given_by_url_over_tcp_is_said_to_be_unauthenticated() {
    check_user_tcp_server(
        "redis",
        "redis-server",
        |port, dir| {
            let dir = dir.to_string_lossy();
            ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--dir", &dir]
                .iter()
                .map(|s| s.to_string())
                .collect()
        },
        |port| format!("redis://127.0.0.1:{port}"),
    );
}

#[test]
fn a_server_in_a_deep_directory_gets_a_short_socket_directory() {
    for name in ["postgres", "redis", "memcached"] {
        let root = tempfile::Builder::new().prefix("kvbench-deep-").tempdir().unwrap();
        let deep = root.path().join("d".repeat(100));
        std::fs::create_dir(&deep).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let s = match (descriptor(name).start_server.unwrap())(&deep) {
            Ok(s) => s,
            Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => continue,
            Err(e) => panic!("{name} in a deep directory: {e}"),
        };
        let socket = socket_of(&s.url());
        assert!(!socket.starts_with(&deep), "{name}: {}", socket.display());
        assert!(UnixStream::connect(&socket).is_ok(), "{name}: nothing answers on {}", socket.display());
        s.stop().unwrap();
        assert!(!socket.parent().unwrap().exists(), "{name}: the socket directory is removed with the server");
    }
}

/// `connection = "tcp"` (issue 29): the postgres server also listens on 127.0.0.1 at a free port
/// (nowhere else), where only kvbench's role logs in, with the password generated at start and
/// kept out of the server's log; the engine works there and says which connection it used.
#[test]
fn postgres_over_tcp_admits_only_its_role_with_the_generated_password() {
    let tcp: BTreeMap<String, serde_json::Value> = [("connection".to_string(), serde_json::json!("tcp"))].into();
    let (name, start) = kvbench_engines::shaped_server("postgres", &tcp).expect("connection = tcp shapes the server");
    assert_eq!(name, "postgres-tcp");
    let dir = tempfile::Builder::new().prefix("kvbench-server-").tempdir().unwrap();
    let s = match start(dir.path()) {
        Ok(s) => s,
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => return,
        Err(e) => panic!("postgres over TCP did not start: {e}"),
    };
    let (url, password) = (s.url(), s.token().expect("a generated password"));
    assert!(url.starts_with("host=127.0.0.1 port=") && !url.contains(&password), "{url}");
    assert!(password.len() >= 16, "{password}");
    let port: u16 = url.split("port=").nth(1).and_then(|p| p.split(' ').next()).unwrap().parse().unwrap();
    let pid: i32 = s.info()["pid"].parse().unwrap();
    assert_eq!(network_sockets(pid), vec![format!("tcp 0100007F:{port:04X}")], "127.0.0.1:{port} only");
    assert!(s.info()["access"].contains("scram-sha-256"), "{:?}", s.info());

    let login = |user: &str, pw: Option<&str>| {
        let mut c: postgres::Config =
            format!("host=127.0.0.1 port={port} user={user} dbname=postgres").parse().unwrap();
        if let Some(pw) = pw {
            c.password(pw);
        }
        c.connect(postgres::NoTls).map(|_| ())
    };
    assert!(login("kvbench_tcp", Some(&password)).is_ok());
    assert!(login("kvbench_tcp", None).is_err(), "no password, no login");
    assert!(login("kvbench_tcp", Some("wrong-password")).is_err());
    assert!(login("postgres", Some(&password)).is_err(), "the superuser has no TCP login");

    let db = tempfile::tempdir().unwrap();
    let desc = descriptor("postgres");
    let t = kvbench_engines::conformance::Target { url: Some(&url), token: Some(&password) };
    kvbench_engines::conformance::run_on(desc, db.path(), t).unwrap_or_else(|e| panic!("postgres over TCP: {e}"));
    // fsync off and on again: the role may ALTER SYSTEM it and CHECKPOINT.
    let root = tempfile::tempdir().unwrap();
    kvbench_engines::conformance::sync_modes_on(desc, root.path(), t).unwrap_or_else(|e| panic!("sync modes: {e}"));
    let settings = open_settings(desc, &tcp, db.path(), &url, Some(&password)).unwrap();
    assert_eq!(settings["connection"], format!("TCP 127.0.0.1:{port}"), "{settings:?}");
    assert!(!settings.values().any(|v| v.contains(&password)), "{settings:?}");
    let socket_url = format!("host='{}' port={port} user=postgres dbname=postgres", dir.path().display());
    let err = open_settings(desc, &tcp, db.path(), &socket_url, Some(&password))
        .expect_err("connection = tcp on a socket url is refused")
        .to_string();
    assert!(err.contains("connection") && err.contains("tcp"), "{err}");
    let log = std::fs::read_to_string(s.info()["log"].clone()).unwrap();
    assert!(!log.contains(&password), "the server's log holds the password");
    s.stop().unwrap();
}
