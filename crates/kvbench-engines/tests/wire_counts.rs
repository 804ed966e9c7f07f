//! What the server rows put on the wire, checked against the servers' own counters: a real
//! `redis-server` (INFO commandstats) and `memcached` (stats), started as kvbench starts them.
//! YCSB's workloads on Redis send the commands of YCSB's Redis binding per operation (a hash
//! per record: HSET + ZADD per insert, HSET of one field per update, HGETALL per read, an index
//! range then HGETALL per record per scan), and each phase's `wire` counts exactly the
//! commands the server counted. Set KVBENCH_ALLOW_MISSING=1 to skip a server not installed.

mod in_process;

use std::collections::BTreeMap;

use kvbench_engines::{find, Entry};
use kvbench_model::engine::{EngineDescriptor, RunningServer, Wire};
use kvbench_model::result::PhaseResult;
use kvbench_model::scenario::Scenario;

fn descriptor(name: &str) -> &'static EngineDescriptor {
    match find(name) {
        Some(Entry::Ready(d)) => d,
        _ => panic!("engine {name} was not built"),
    }
}

fn start(name: &str) -> Option<(Box<dyn RunningServer>, tempfile::TempDir)> {
    let dir = tempfile::Builder::new().prefix("kvbench-wire-").tempdir().unwrap();
    match (descriptor(name).start_server.expect("a server engine"))(dir.path()) {
        Ok(s) => Some((s, dir)),
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => None,
        Err(e) => panic!("{name} did not start: {e}"),
    }
}

/// A scenario of the repository at a test's size, for one engine row with `options`.
fn scenario(file: &str, records: u64, ops: u64, options: &str) -> Scenario {
    let path = format!("{}/../../scenarios/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace("records = 100000", &format!("records = {records}"));
    let text = text.replace("count = 100000", &format!("count = {ops}"));
    let engines = text.lines().find(|l| l.starts_with("engines = ")).unwrap().to_string();
    let text = text.replace(&engines, "");
    let row = format!("\n[[engine]]\nname = \"{}\"\noptions = {options}\n", file.split('-').next().unwrap());
    toml::from_str(&(text + &row)).unwrap()
}

/// Calls per command since the last CONFIG RESETSTAT, lower case (`hset` → 1200).
fn commandstats(c: &mut ::redis::Connection) -> BTreeMap<String, u64> {
    let info: String = ::redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    let mut calls = BTreeMap::new();
    for line in info.lines() {
        let Some((name, rest)) = line.strip_prefix("cmdstat_").and_then(|l| l.split_once(':')) else { continue };
        let n = rest.split(',').find_map(|kv| kv.strip_prefix("calls=")).unwrap().parse().unwrap();
        calls.insert(name.to_string(), n);
    }
    calls
}

/// The commands that carry records (the set-up's CONFIG, INFO, SCAN ... are not timed work).
const DATA: &[&str] = &["get", "set", "mget", "del", "hset", "hgetall", "zadd", "zrem", "zrangebylex"];

fn data_calls(calls: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    calls.iter().filter(|(k, _)| DATA.contains(&k.as_str())).map(|(k, v)| (k.clone(), *v)).collect()
}

/// Samples of one operation kind of a phase (its latency histogram's count). A phase of one
/// kind has no split by kind: the YCSB scenarios' one such (C) reads.
fn count_of(p: &PhaseResult, kind: &str) -> u64 {
    if p.latency_by_op.is_empty() {
        return if kind == "get" { p.requests } else { 0 };
    }
    p.latency_by_op.get(kind).map_or(0, |l| kvbench_model::histogram::decode_histogram(&l.hdr).unwrap().len())
}

fn phase<'a>(phases: &'a [PhaseResult], name: &str) -> &'a PhaseResult {
    phases.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no phase {name}"))
}

/// Runs `file` at a small size on the Redis server at `url` (counters reset first); returns
/// the phases and the data commands Redis counted during the load and during the run.
fn run_redis(
    url: &str,
    file: &str,
    options: &str,
) -> (Vec<PhaseResult>, BTreeMap<String, u64>, BTreeMap<String, u64>, tempfile::TempDir) {
    let mut admin = ::redis::Client::open(url).unwrap().get_connection().unwrap();
    let s = scenario(file, 1000, 1000, options);
    let v = &s.all_variants()[0];
    let tmp = tempfile::tempdir().unwrap();
    // The load and the run as two scenarios on one job directory would reload: count the
    // load alone first, then the load and the run, and take the difference.
    let load_only = Scenario { phases: s.phases[..1].to_vec(), ..s.clone() };
    let run = |s: &Scenario, admin: &mut ::redis::Connection| {
        let _: () = ::redis::cmd("FLUSHALL").query(admin).unwrap();
        let _: () = ::redis::cmd("CONFIG").arg("RESETSTAT").query(admin).unwrap();
        let dir = tempfile::tempdir_in(tmp.path()).unwrap();
        let phases = in_process::run_in_process(s, v, descriptor("redis"), dir.path(), Some(url.into()), None).unwrap();
        (phases, data_calls(&commandstats(admin)))
    };
    let (_, load) = run(&load_only, &mut admin);
    let (phases, all) = run(&s, &mut admin);
    let during_run =
        all.iter().map(|(k, v)| (k.clone(), v - load.get(k).copied().unwrap_or(0))).filter(|(_, n)| *n > 0).collect();
    (phases, load, during_run, tmp)
}

fn total(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

#[test]
fn ycsb_on_redis_sends_the_bindings_commands_per_operation_and_counts_them() {
    let Some((server, _dir)) = start("redis") else { return };
    let url = server.url();
    for file in ["ycsb-a.toml", "ycsb-b.toml", "ycsb-c.toml", "ycsb-e.toml"] {
        let (phases, load, run, _tmp) = run_redis(&url, file, "{}");
        let (lp, rp) = (phase(&phases, "load"), phase(&phases, "run"));
        for p in [lp, rp] {
            assert_eq!(p.errors + p.mismatches + p.missing, 0, "{file} {}: {p:?}", p.name);
        }
        // The load: one insert per record, HSET of its fields and ZADD of its key.
        assert_eq!(load, BTreeMap::from([("hset".into(), 1000), ("zadd".into(), 1000)]), "{file} load");
        assert_eq!(lp.wire, Some(Wire { commands: 2000, round_trips: 1000 }), "{file} load");
        let (reads, updates) = (count_of(rp, "get"), count_of(rp, "update"));
        let (scans, inserts) = (count_of(rp, "scan"), count_of(rp, "insert"));
        let mut want = BTreeMap::new();
        for (cmd, n) in [("hgetall", reads), ("hset", updates + inserts), ("zadd", inserts), ("zrangebylex", scans)] {
            if n > 0 {
                want.insert(cmd.to_string(), n);
            }
        }
        if scans > 0 {
            // Each scan reads each record it visits with HGETALL.
            let visited = rp.ops - inserts;
            *want.entry("hgetall".into()).or_default() += visited;
        }
        assert_eq!(run, want, "{file} run: reads {reads}, updates {updates}, scans {scans}, inserts {inserts}");
        let wire = rp.wire.expect("the redis row counts what it sends");
        assert_eq!(wire.commands, total(&run), "{file}: the client's count is the server's");
        assert_eq!(rp.requests, reads + updates + scans + inserts, "{file}: requests stay the timed operations");
    }
}

#[test]
fn redis_blob_records_merge_updates_and_the_wire_counts_both_commands() {
    let Some((server, _dir)) = start("redis") else { return };
    let (phases, _, run, _tmp) = run_redis(&server.url(), "ycsb-a.toml", "{ record = \"blob\" }");
    let rp = phase(&phases, "run");
    let (reads, updates) = (count_of(rp, "get"), count_of(rp, "update"));
    // An update of one field is GET, merge, SET: two commands, two round trips.
    assert_eq!(run, BTreeMap::from([("get".into(), reads + updates), ("set".into(), updates)]));
    assert_eq!(rp.wire, Some(Wire { commands: reads + 2 * updates, round_trips: reads + 2 * updates }));
    assert_eq!(rp.requests, reads + updates, "requests stay the timed operations");
}

/// memcached's own counters (`stats`): (cmd_get, cmd_set).
fn memcached_stats(socket: &std::path::Path) -> (u64, u64) {
    use std::io::{BufRead, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket).unwrap();
    s.write_all(b"stats\r\n").unwrap();
    let (mut get, mut set) = (0, 0);
    for line in std::io::BufReader::new(s).lines() {
        let line = line.unwrap();
        if line.starts_with("END") {
            break;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.get(1).copied() {
            Some("cmd_get") => get = f[2].parse().unwrap(),
            Some("cmd_set") => set = f[2].parse().unwrap(),
            _ => {}
        }
    }
    (get, set)
}

#[test]
fn memcached_wire_counts_are_the_servers_gets_and_sets() {
    let Some((server, _dir)) = start("memcached") else { return };
    let url = server.url();
    let socket = std::path::PathBuf::from(url.strip_prefix("memcached+unix://").unwrap());
    let text = "name = \"w\"\nseed = 1\n[dataset]\nrecords = 500\nvalue = { min = 20, max = 20 }\n\
                [[phase]]\nkind = \"load\"\nbatch = 10\n[[phase]]\nkind = \"get\"\ncount = 700\n\
                distribution = \"uniform\"\n[[phase]]\nkind = \"update\"\ncount = 300\n\
                [[engine]]\nname = \"memcached\"\n";
    let s: Scenario = toml::from_str(text).unwrap();
    let before = memcached_stats(&socket);
    let tmp = tempfile::tempdir().unwrap();
    let phases =
        in_process::run_in_process(&s, &s.all_variants()[0], descriptor("memcached"), tmp.path(), Some(url), None)
            .unwrap();
    let after = memcached_stats(&socket);
    let wire = |name: &str| phase(&phases, name).wire.expect("the memcached row counts what it sends");
    assert_eq!(wire("load"), Wire { commands: 500, round_trips: 50 }, "a batch of 10 sets is one round trip");
    assert_eq!((after.0 - before.0, after.1 - before.1), (wire("get").commands, 500 + wire("update").commands));
    assert_eq!((wire("get").commands, wire("update").commands), (700, 300));
}

#[test]
fn redis_hash_records_read_back_whole_by_get_multi_get_and_scan_in_key_order() {
    use kvbench_model::engine::{OpenArgs, Options, WriteOp};
    let Some((server, dir)) = start("redis") else { return };
    let url = server.url();
    let d = descriptor("redis");
    let given = BTreeMap::from([("record".to_string(), serde_json::Value::from("hash"))]);
    let options = Options::parse(d.name, d.options, &given).unwrap();
    let e = (d.open)(&OpenArgs { url: Some(&url), ..OpenArgs::new(dir.path(), &options) }).unwrap();
    // Twelve fields: field10 and field11 come back after field9, as the value holds them.
    let record = |k: u8| {
        let mut v = Vec::new();
        (0..12).for_each(|i| kvbench_model::job::push_field(&mut v, format!("field{i}").as_bytes(), &[k; 150]));
        v
    };
    let (a, b, c) = (record(b'a'), record(b'b'), record(b'c'));
    let batch = [b"k3" as &[u8], b"k1", b"k2"].into_iter().zip([&c, &a, &b]);
    let ops: Vec<WriteOp<'_>> = batch.map(|(key, v)| WriteOp { key, value: Some(v) }).collect();
    let mut w = e.writer().unwrap().unwrap();
    w.write(&ops).unwrap();
    let mut r = e.reader().unwrap();
    let mut out = Vec::new();
    assert!(r.get(b"k2", &mut out).unwrap());
    assert_eq!(out, b);
    assert!(!r.get(b"nope", &mut out).unwrap());
    let mut many = Vec::new();
    r.multi_get(&[b"k1", b"nope", b"k3"], &mut many).unwrap();
    assert_eq!(many, vec![Some(a.clone()), None, Some(c.clone())]);
    let mut seen = Vec::new();
    let n = r.scan(Some(b"k2"), 5, &mut |k, v| {
        seen.push((k.to_vec(), v == b || v == c));
        true
    });
    assert_eq!(n.unwrap(), 2);
    assert_eq!(seen, vec![(b"k2".to_vec(), true), (b"k3".to_vec(), true)]);
    // One field updated alone; the rest of the record stays.
    w.write_field(b"k1", b"field11", b"new").unwrap();
    r.get(b"k1", &mut out).unwrap();
    let fields = kvbench_model::job::split_fields(&out).unwrap();
    assert_eq!(
        (fields.len(), fields[11], fields[10]),
        (12, (&b"field11"[..], &b"new"[..]), (&b"field10"[..], &[b'a'; 150][..]))
    );
}
