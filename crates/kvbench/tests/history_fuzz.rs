//! Fuzzing the history store's rows: a real store (a corpus result added) whose cells are
//! overwritten with values of any SQLite type (huge, negative, NaN, text where numbers are,
//! blobs, NULL), then listed, trended and rendered as a dashboard: an answer or an error, never
//! a panic. Cases: `KVBENCH_FUZZ_CASES` / 128 (each case runs the binary five times; two in
//! `make test`, many in `bench/fuzz.sh`). A seeded generator, so a failure names its case.

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::types::Value;
use rusqlite::Connection;

const COLUMNS: [(&str, &[&str]); 2] = [
    ("runs", &["run_id", "started_at", "scenario", "machine", "plan", "kvbench_version", "manifest"]),
    (
        "figures",
        &[
            "run_id",
            "label",
            "phase",
            "version",
            "repetitions",
            "ops_per_sec",
            "p99_ns",
            "read_per_op",
            "write_per_op",
            "space_bytes",
            "regime",
        ],
    ),
];

fn cases() -> u64 {
    let n: u64 = std::env::var("KVBENCH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    (n / 128).max(1)
}

/// xorshift64*: the cases' values, reproducible from the case number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[(self.next() % from.len() as u64) as usize]
    }

    fn value(&mut self) -> Value {
        match self.next() % 8 {
            0 => Value::Null,
            1 => Value::Integer(*self.pick(&[i64::MIN, -1, 0, 1, i64::MAX, 1 << 53])),
            2 => Value::Integer(self.next() as i64),
            3 => Value::Real(*self.pick(&[f64::NAN, f64::INFINITY, -f64::INFINITY, -0.0, 1e308, -1e-308])),
            4 => Value::Real(f64::from_bits(self.next())),
            5 => Value::Text(
                self.pick(&["", "get", "lmdb", "\u{1b}[2J\u{7}", "'; DROP TABLE runs; --", "é\u{202e}x"]).to_string(),
            ),
            6 => Value::Text("x".repeat((self.next() % 5000) as usize)),
            _ => Value::Blob((0..self.next() % 64).map(|_| self.next() as u8).collect()),
        }
    }
}

fn kvbench(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench")).current_dir(dir).args(args).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn corpus_result() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-corpus/result/quick-two-rows.json")
}

#[test]
fn history_rows_of_any_value_never_panic_the_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let result = corpus_result();
    for case in 0..cases() {
        let db = tmp.path().join(format!("h{case}.sqlite"));
        let (code, err) =
            kvbench(tmp.path(), &["history", "--db", db.to_str().unwrap(), "--add", result.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{err}");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (case + 1));
        let c = Connection::open(&db).unwrap();
        for _ in 0..1 + rng.next() % 6 {
            let (table, cols) = rng.pick(&COLUMNS);
            let col = rng.pick(cols);
            // A constraint may refuse the value (NOT NULL, the key): that row stays as it was.
            let _ = c.execute(&format!("UPDATE {table} SET {col} = ?1 WHERE rowid IN (SELECT rowid FROM {table} ORDER BY random() LIMIT 2)"), [rng.value()]);
        }
        drop(c);
        let site = tmp.path().join(format!("site{case}"));
        for args in [
            vec!["history", "--db", db.to_str().unwrap()],
            vec!["history", "--db", db.to_str().unwrap(), "--phase", "get"],
            vec!["history", "--db", db.to_str().unwrap(), "--label", "lmdb"],
            vec!["dashboard", "--db", db.to_str().unwrap(), "--output", site.to_str().unwrap()],
        ] {
            let (code, err) = kvbench(tmp.path(), &args);
            assert!(
                code.is_some_and(|c| c != 101) && !err.contains("panicked"),
                "case {case} {args:?}: {code:?} {err}"
            );
        }
    }
}
