//! Lifecycle of the servers kvbench starts: each real server starts in a private directory,
//! answers on loopback, reports its version and settings, and leaves no process behind after
//! `stop` or after a plain drop. Failures name the binary, the command and the log file.
//! Set KVBENCH_ALLOW_MISSING=1 to skip a server that is not installed.

use std::path::Path;
use std::time::Duration;

use kvbench_core::engine::{EngineDescriptor, RunningServer};
use kvbench_engines::server::{self, ServerProcess};
use kvbench_engines::{find, Entry};

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
        if pgrp == pgid || (!needle.is_empty() && cmdline.contains(needle)) {
            found.push(format!("{name}: {}", cmdline.trim()));
        }
    }
    found
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().split('/').next().unwrap().parse().unwrap()
}

fn uid_of(pid: i32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
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
    let port = port_of(&url);
    assert!(server::port_open(port), "{name}: nothing listens on {url}");
    assert!(!info["version"].is_empty(), "{name}: info has no version: {info:?}");
    assert!(info["log"].starts_with(&*dir.path().to_string_lossy()), "{name}: log outside the private dir: {info:?}");
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
    assert!(!server::port_open(port), "{name}: port {port} still open after stop");
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
        assert_eq!(uid_of(pid), server::user_ids("nobody").unwrap().0, "memcached should run as nobody");
        s.stop().unwrap();
    }
    if let Some((s, dir)) = start("postgres") {
        let info = s.info();
        let leader: i32 = info["pid"].parse().unwrap();
        let pg_uid = server::user_ids("postgres").unwrap().0;
        let kids = children(leader);
        assert!(!kids.is_empty(), "runuser should have the postmaster as its child");
        assert!(kids.iter().all(|&k| uid_of(k) == pg_uid), "the postmaster should run as postgres");
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
