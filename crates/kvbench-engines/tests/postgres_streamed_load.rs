//! Regression (issue 32, item 6): a load batch the postgres writer streams (`Writer::write_rows`:
//! rows derived as the COPY or the INSERTs go out) stores exactly the rows derived, for every
//! load method that streams, and a later write is no longer streamed.
//! Set KVBENCH_ALLOW_MISSING=1 to skip when PostgreSQL 15 is not installed.

use std::collections::BTreeMap;

use kvbench_core::engine::{EngineDescriptor, OpenArgs, OpenMode, Options, SyncMode, WriteOp};
use kvbench_engines::{find, Entry};

fn descriptor() -> &'static EngineDescriptor {
    match find("postgres") {
        Some(Entry::Ready(d)) => d,
        _ => panic!("engine postgres was not built"),
    }
}

/// Row i: a key, and a value with the bytes COPY's text format must escape.
fn row(i: usize, k: &mut Vec<u8>, v: &mut Vec<u8>) {
    k.clear();
    k.extend_from_slice(format!("k{i:05}").as_bytes());
    v.clear();
    v.extend_from_slice(format!("{i}\ttab\\slash\nline\r{}", "x".repeat(i % 300)).as_bytes());
}

#[test]
fn regression_streamed_load_stores_every_derived_row() {
    let d = descriptor();
    let dir = tempfile::tempdir().unwrap();
    let server = match (d.start_server.expect("a server engine"))(dir.path()) {
        Ok(s) => s,
        Err(e) if std::env::var_os("KVBENCH_ALLOW_MISSING").is_some() && e.contains("not found") => {
            eprintln!("skipping postgres: {e}");
            return;
        }
        Err(e) => panic!("postgres did not start: {e}"),
    };
    let url = server.url();
    let cases = [
        ("copy-text", "text", true),
        ("copy-text", "bytea", true),
        ("copy-binary", "bytea", true),
        ("insert", "text", true),
        // Each INSERT sent with its SQL text (article 002's client), parsed on every row.
        ("insert", "bytea", false),
    ];
    for (n, (load, types, prepared)) in cases.iter().enumerate() {
        let given: BTreeMap<String, serde_json::Value> = [
            ("load".to_string(), (*load).into()),
            ("types".to_string(), (*types).into()),
            ("prepared".to_string(), (*prepared).into()),
        ]
        .into();
        let options = Options::parse("postgres", d.options, &given).unwrap();
        let job = dir.path().join(format!("job{n}"));
        std::fs::create_dir_all(&job).unwrap();
        let args = OpenArgs {
            dir: &job,
            options: &options,
            sync: SyncMode::None,
            mode: OpenMode::ReadWrite,
            expected_records: 0,
            expected_bytes: 0,
            url: Some(&url),
            token: None,
        };
        let mut e = (d.open)(&args).unwrap();
        e.prepare().unwrap();
        let rows = 1500;
        {
            let mut w = e.writer().unwrap().expect("postgres has writers per thread");
            assert!(w.streams_rows(), "{load}/{types}: an empty table's load is streamed");
            w.write_rows(rows, &mut row).unwrap_or_else(|err| panic!("{load}/{types}: {err}"));
        }
        e.finish_load().unwrap();
        let w = e.writer().unwrap().unwrap();
        assert!(!w.streams_rows(), "{load}/{types}: writes after the load are not streamed");
        drop(w);
        let mut r = e.reader().unwrap();
        let mut seen = 0;
        let (mut k, mut v) = (Vec::new(), Vec::new());
        r.scan(None, usize::MAX, &mut |key, value| {
            row(seen, &mut k, &mut v);
            assert_eq!((key, value), (&k[..], &v[..]), "{load}/{types}: row {seen}");
            seen += 1;
            true
        })
        .unwrap();
        assert_eq!(seen, rows, "{load}/{types}: rows stored");
        drop(r);
        let op = [WriteOp { key: b"k00000", value: Some(b"new") }];
        e.write(&op).unwrap();
        e.close().unwrap();
    }
    server.stop().unwrap();
}
