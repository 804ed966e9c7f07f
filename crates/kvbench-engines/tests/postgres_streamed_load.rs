//! Regression (issue 32, item 6): a load batch the postgres writer streams (`Writer::write_rows`:
//! rows derived as the COPY or the INSERTs go out) stores exactly the rows derived, for every
//! load method that streams, and a later write is no longer streamed.
//! Set KVBENCH_ALLOW_MISSING=1 to skip when PostgreSQL 15 is not installed.

use std::collections::BTreeMap;

use kvbench_model::engine::WriteOp;

mod postgres_server;
mod read_back;
use postgres_server::{open, server};

/// Row i: a key, and a value with the bytes COPY's text format must escape.
fn row(i: usize, k: &mut Vec<u8>, v: &mut Vec<u8>) {
    k.clear();
    k.extend_from_slice(format!("k{i:05}").as_bytes());
    v.clear();
    v.extend_from_slice(format!("{i}\ttab\\slash\nline\r{}", "x".repeat(i % 300)).as_bytes());
}

/// A COPY the server refuses (a key twice) fails with the server's reason, and the writer's
/// connection is left ready for the next COPY (there a batch derived beforehand).
#[test]
fn regression_a_failed_copy_says_why_and_the_next_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server(dir.path()) else { return };
    for load in ["copy-text", "copy-binary"] {
        let given = [("load".to_string(), load.into())].into();
        let e = open(&dir.path().join(load), &server.url(), &given);
        let mut w = e.writer().unwrap().unwrap();
        let mut twice = |i: usize, k: &mut Vec<u8>, v: &mut Vec<u8>| row(i % 1000, k, v);
        let err = w.write_rows(3000, &mut twice).expect_err("a duplicate key fails the COPY").to_string();
        assert!(err.contains("23505"), "{load}: {err}");
        // The next COPY, of a batch derived beforehand (`write`, not streamed).
        let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..1000)
            .map(|i| {
                let (mut k, mut v) = (Vec::new(), Vec::new());
                row(i, &mut k, &mut v);
                (k, v)
            })
            .collect();
        let batch: Vec<WriteOp<'_>> = rows.iter().map(|(k, v)| WriteOp { key: k, value: Some(v) }).collect();
        w.write(&batch).unwrap_or_else(|err| panic!("{load}: the next COPY: {err}"));
        drop(w);
        let mut seen = 0;
        e.reader()
            .unwrap()
            .scan(None, usize::MAX, &mut |_, _| {
                seen += 1;
                true
            })
            .unwrap();
        assert_eq!(seen, 1000, "{load}: rows stored");
    }
    server.stop().unwrap();
}

#[test]
fn regression_streamed_load_stores_every_derived_row() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server(dir.path()) else { return };
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
        let mut e = open(&dir.path().join(format!("job{n}")), &url, &given);
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
        let what = format!("{load}/{types}");
        assert_eq!(read_back::read_back(e.as_ref(), row, &what), rows, "{what}: rows stored");
        let op = [WriteOp { key: b"k00000", value: Some(b"new") }];
        e.write(&op).unwrap();
        e.close().unwrap();
    }
    server.stop().unwrap();
}
