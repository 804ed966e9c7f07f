//! Regression (issue 45 point 7): a postgres writer's connection is made by `prepare` (untimed)
//! and kept across phases, so no timed load or write phase includes connecting, as the
//! article's client connected before its timer. A 10 000-row COPY takes tens of ms, a login
//! over TCP (scram) several: counted in the phase, it cut the COPY/INSERT ratio by half.
//! Set KVBENCH_ALLOW_MISSING=1 to skip when PostgreSQL 15 is not installed.

use std::str::FromStr;

mod postgres_server;
use postgres_server::{open, server};

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
        let given = [("load".to_string(), load.into())].into();
        let e = open(&dir.path().join(load), &server.url(), &given);
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
