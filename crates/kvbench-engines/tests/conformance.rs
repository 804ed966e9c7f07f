//! One conformance test per engine: each must behave like the memory oracle, and run a whole
//! plan through the runner with every read verified. An engine missing here fails its test
//! (CI installs them all); set KVBENCH_ALLOW_MISSING=1 to skip missing ones locally.

mod in_process;

use kvbench_engines::{conformance, find, Entry};
use kvbench_model::result::Status;
use kvbench_model::scenario::{Scenario, Variant};

/// The start both scenarios share: 500 records of up to 64 bytes (`min` at least), loaded in
/// batches of `batch`, then read by two threads.
fn load_then_get(seed: u64, min: u32, batch: u32) -> String {
    format!(
        "engines = [\"memory\"]\nseed = {seed}\n[dataset]\nrecords = 500\nvalue = {{ min = {min}, max = 64 }}\n\
         [[phase]]\nkind = \"load\"\nbatch = {batch}\n[[phase]]\nkind = \"get\"\nthreads = 2\n"
    )
}

/// A small scenario touching every phase kind and mode.
fn scenario() -> Scenario {
    let rest = r#"
        [[phase]]
        kind = "multi-get"
        keys = 10
        count = 20
        [[phase]]
        kind = "update"
        count = 100
        batch = 8
        [[phase]]
        name = "update-threads"
        kind = "update"
        count = 400
        batch = 8
        threads = 2
        distribution = "zipfian"
        [[phase]]
        kind = "insert"
        count = 50
        [[phase]]
        kind = "rmw"
        count = 50
        [[phase]]
        kind = "delete"
        count = 50
        [[phase]]
        name = "mixed"
        kind = "mixed"
        count = 300
        threads = 2
        distribution = "zipfian"
        mix = { read = 5.0, update = 3.0, insert = 1.0, rmw = 1.0, delete = 1.0 }
        [[phase]]
        name = "get-after"
        kind = "get"
        distribution = "sequential"
        [[phase]]
        name = "get-cold"
        kind = "get"
        count = 100
        cache = "cold"
        [[phase]]
        kind = "scan"
        [[phase]]
        name = "scan-short"
        kind = "scan"
        count = 10
        length = 20
        distribution = "uniform"
        [[phase]]
        name = "mixed-scan"
        kind = "mixed"
        count = 50
        distribution = "latest"
        mix = { read = 1.0, scan = 1.0 }
    "#;
    toml::from_str(&(load_then_get(7, 0, 64) + rest)).unwrap()
}

/// Whether the engine cannot run a phase of [`scenario`], from its capabilities.
fn expect_na(caps: &kvbench_model::engine::Capabilities, name: &str) -> bool {
    match name {
        "scan" | "scan-short" | "mixed-scan" => !caps.ordered_scan,
        "update" | "update-threads" | "insert" | "rmw" => caps.build_once,
        "delete" | "mixed" => caps.build_once || !caps.delete,
        "get-cold" => !caps.persistent,
        _ => false,
    }
}

fn run_plan(desc: &'static kvbench_model::engine::EngineDescriptor, url: Option<&str>, token: Option<&str>) {
    run_plan_with(desc, url, token, &[]);
}

/// `run_plan` on a row with these options.
fn run_plan_with(
    desc: &'static kvbench_model::engine::EngineDescriptor,
    url: Option<&str>,
    token: Option<&str>,
    options: &[(&str, &str)],
) {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario();
    let mut v = Variant { name: desc.name.into(), ..s.all_variants()[0].clone() };
    for (name, value) in options {
        v.options.insert(name.to_string(), (*value).into());
    }
    let phases = in_process::run_in_process(&s, &v, desc, tmp.path(), url.map(String::from), token.map(String::from))
        .unwrap_or_else(|e| panic!("{}: {e}", desc.name));
    assert_eq!(phases.len(), s.phases.len() + 2, "open + phases + close");
    for r in &phases {
        if expect_na(&desc.capabilities, &r.name) {
            assert_eq!(r.status, Status::NotApplicable, "{}: {} should be N/A", desc.name, r.name);
            continue;
        }
        // Every executed phase is checked: the worker follows only the writes it ran, so
        // a phase skipped as N/A cannot make later reads fail.
        assert_eq!(r.status, Status::Ok, "{}: phase {} failed: {:?}", desc.name, r.name, r.reason);
        assert_eq!(r.mismatches + r.missing, 0, "{}: {}", desc.name, r.name);
    }
}

/// Server engines with `pipeline` (and `connections`): get phases keep pipelines full over
/// several connections per thread, and every value read that way is still verified.
fn run_pipelined(desc: &'static kvbench_model::engine::EngineDescriptor, url: Option<&str>, token: Option<&str>) {
    let rest = r#"
        [[phase]]
        kind = "update"
        count = 200
        [[phase]]
        name = "get-after"
        kind = "get"
        count = 333
    "#;
    let s: Scenario = toml::from_str(&(load_then_get(9, 1, 50) + rest)).unwrap();
    let mut v = Variant { name: desc.name.into(), ..s.all_variants()[0].clone() };
    // Engines without `connections` (redis-cluster) pipeline on their one connection per node.
    let conns: u64 = if desc.options.iter().any(|o| o.name == "connections") { 3 } else { 1 };
    if conns > 1 {
        v.options.insert("connections".into(), conns.into());
    }
    v.options.insert("pipeline".into(), 4.into());
    let tmp = tempfile::tempdir().unwrap();
    let phases = in_process::run_in_process(&s, &v, desc, tmp.path(), url.map(String::from), token.map(String::from))
        .unwrap_or_else(|e| panic!("{}: {e}", desc.name));
    for r in &phases {
        assert_eq!(r.status, Status::Ok, "{}: phase {} failed: {:?}", desc.name, r.name, r.reason);
        assert_eq!(r.mismatches + r.missing, 0, "{}: {}", desc.name, r.name);
    }
    let get = &phases[2];
    // Two threads of 250 gets each, 4 in flight per connection: each GET is a sample.
    assert_eq!((get.ops, get.requests, get.unit.as_str()), (500, 500, "op"), "{}", desc.name);
    let after = &phases[4];
    assert_eq!((after.ops, after.requests), (333, 333), "{}", desc.name);
    assert_eq!(phases[3].unit, "op", "writes are not get rounds");
}

/// A row whose writes take another path runs the whole plan too, every read verified:
/// RocksDB written through optimistic transactions (redb's harness's RocksDB).
#[test]
fn rocksdb_optimistic_transactions_run_the_plan() {
    let Some(desc) = conformance::engine_or_skip("rocksdb") else { return };
    run_plan_with(desc, None, None, &[("write", "optimistic-transaction")]);
}

/// fjall read through held read transactions (redb's harness's reads): every read of the plan
/// still verified, so the worker's refresh after writes takes a new snapshot.
#[test]
fn fjall_snapshot_reads_run_the_plan() {
    for name in ["fjall", "fjall2"] {
        let Some(desc) = conformance::engine_or_skip(name) else { continue };
        run_plan_with(desc, None, None, &[("read", "snapshot"), ("write", "transaction")]);
    }
}

macro_rules! conformance {
    ($($test:ident => $name:literal),* $(,)?) => {
        /// The engines that have a test below, in order.
        const TESTED: &[&str] = &[$($name),*];
        $(
        #[test]
        fn $test() {
            let Some(desc) = conformance::engine_or_skip($name) else { return };
            let tmp = tempfile::tempdir().unwrap();
            let db = tmp.path().join("db");
            std::fs::create_dir_all(&db).unwrap();
            // A server engine gets its own server, in a private directory directly under the
            // temp dir (the postgres user must be able to reach it), stopped at the end.
            let server = desc.start_server.map(|start| {
                let sdir = tempfile::Builder::new().prefix("kvbench-server-").tempdir().unwrap();
                let s = start(sdir.path()).unwrap_or_else(|e| panic!("{}: server did not start: {e}", $name));
                (s, sdir)
            });
            if let Some(fd) = server.as_ref().and_then(|(s, _)| s.netns()) {
                // SAFETY: moves only this test's thread, and the threads it starts, into the
                // server's private network namespace, where its ports are (as the worker joins it).
                assert_eq!(unsafe { libc::setns(fd, libc::CLONE_NEWNET) }, 0, "{}: join its network", $name);
            }
            let url = server.as_ref().map(|(s, _)| s.url());
            let token = server.as_ref().and_then(|(s, _)| s.token());
            let t = conformance::Target { url: url.as_deref(), token: token.as_deref() };
            conformance::run_on(desc, &db, t).unwrap_or_else(|e| panic!("{}: {e}", $name));
            conformance::sync_modes_on(desc, tmp.path(), t).unwrap_or_else(|e| panic!("{}: {e}", $name));
            run_plan(desc, url.as_deref(), token.as_deref());
            if desc.options.iter().any(|o| o.name == "pipeline") {
                run_pipelined(desc, url.as_deref(), token.as_deref());
            }
            if let Some((s, _dir)) = server {
                s.stop().unwrap_or_else(|e| panic!("{}: stop: {e}", $name));
            }
        }
    )*
    };
}

/// engines.toml's lines as (name, server), read here on their own so that an entry added to the
/// registry by hand, outside the table, is caught.
fn table() -> Vec<(String, bool)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("engines.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let lines = table["engine"].as_array().expect("engines.toml: `engine` is a list");
    let field = |l: &toml::Value, f: &str| l.get(f).cloned();
    lines
        .iter()
        .map(|l| {
            let name = field(l, "name").and_then(|v| v.as_str().map(String::from)).expect("every line has a name");
            (name, field(l, "server").and_then(|v| v.as_bool()).unwrap_or(false))
        })
        .collect()
}

#[test]
fn every_table_line_is_a_registry_entry_and_every_entry_has_a_conformance_test() {
    let table: Vec<String> = table().into_iter().map(|(n, _)| n).collect();
    let registry: Vec<&str> = kvbench_engines::entries().iter().map(Entry::name).collect();
    assert_eq!(registry, table, "the registry is generated from engines.toml and nothing else");
    assert_eq!(TESTED, registry, "every registry entry has a conformance test, in table order");
}

#[test]
fn the_table_says_which_engines_are_servers_and_names_their_descriptors() {
    for (name, server) in table() {
        if let Some(Entry::Ready(d)) = find(&name) {
            assert_eq!(d.name, name, "engines.toml: line `{name}` points at the descriptor of `{}`", d.name);
            assert_eq!(d.start_server.is_some(), server, "engines.toml: line `{name}`: server = {server} is wrong");
        }
    }
}

// One test per line of engines.toml, generated by build.rs.
include!(concat!(env!("OUT_DIR"), "/conformance_tests.rs"));
