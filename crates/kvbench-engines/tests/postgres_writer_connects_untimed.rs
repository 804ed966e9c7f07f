//! Regression (issue 45 point 7): a postgres writer's connection is made by `prepare` (untimed)
//! and kept across phases, so no timed load or write phase includes connecting, as the
//! article's client connected before its timer. A 10 000-row COPY takes tens of ms, a login
//! over TCP (scram) several: counted in the phase, it cut the COPY/INSERT ratio by half.
//! Set KVBENCH_ALLOW_MISSING=1 to skip when PostgreSQL 15 is not installed.

use std::collections::BTreeMap;
use std::str::FromStr;

use kvbench_engines::{find, Entry};
use kvbench_model::engine::{Engine, EngineDescriptor, OpenArgs, OpenMode, Options, RunningServer, SyncMode};

fn descriptor() -> &'static EngineDescriptor {
    match find("postgres") {
        Some(Entry::Ready(d)) => d,
        _ => panic!("engine postgres was not built"),
    }
}

fn server(dir: &std::path::Path) -> Option<Box<dyn RunningServer>> {
    match (descriptor().start_server.expect("a server engine"))(dir) {
        Ok(s) => Some(s),
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => {
            eprintln!("skipping postgres: {e}");
            None
        }
        Err(e) => panic!("postgres did not start: {e}"),
    }
}

fn open(dir: &std::path::Path, url: &str, load: &str) -> Box<dyn Engine> {
    let d = descriptor();
    let given: BTreeMap<String, serde_json::Value> = [("load".to_string(), load.into())].into();
    let options = Options::parse("postgres", d.options, &given).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let args = OpenArgs {
        dir,
        options: &options,
        sync: SyncMode::None,
        mode: OpenMode::ReadWrite,
        expected_records: 0,
        expected_bytes: 0,
        url: Some(url),
        token: None,
    };
    let mut e = (d.open)(&args).unwrap();
    e.prepare().unwrap();
    e
}

fn row(i: usize, k: &mut Vec<u8>, v: &mut Vec<u8>) {
    k.clear();
    k.extend_from_slice(format!("k{i:05}").as_bytes());
    v.clear();
    v.extend_from_slice(format!("{i}\tabc\t0.5").as_bytes());
}

#[test]
fn regression_writers_take_the_connection_prepare_made() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server(dir.path()) else { return };
    let mut probe = postgres::Config::from_str(&server.url()).unwrap().connect(postgres::NoTls).unwrap();
    let mut backends = || -> i64 {
        let sql =
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()";
        probe.query_one(sql, &[]).unwrap().get(0)
    };
    for load in ["copy-text", "insert"] {
        let e = open(&dir.path().join(load), &server.url(), load);
        let before = backends();
        let mut w = e.writer().unwrap().unwrap();
        assert_eq!(backends(), before, "{load}: the writer connected inside the phase");
        w.write_rows(1000, &mut row).unwrap();
        drop(w);
        let w = e.writer().unwrap().unwrap();
        assert_eq!(backends(), before, "{load}: the next phase's writer reconnected");
        drop(w);
        e.close().unwrap();
    }
}
