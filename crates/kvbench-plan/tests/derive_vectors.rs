//! `tests/vectors/derive.json`: the outputs of plan format 2's derivations
//! (docs/plan-format.md) that the Rust, Go and Python workers must reproduce byte for byte.
//! This test rebuilds the document and compares it with the committed file;
//! `KVBENCH_BLESS=1 cargo test -p kvbench-plan --test derive_vectors` rewrites it after an
//! intended format change. The document describes its own fields in `_doc`.

use std::path::{Path, PathBuf};

use kvbench_model::job::{Dataset, Dist, Generator, KeyShape, ValueShape};
use kvbench_model::spec::{KeyKind, ValueContent};
use kvbench_plan::derive::*;
use serde_json::{json, Value};
use xxhash_rust::xxh3::xxh3_64;

mod ops_vectors;
mod plan_vectors;

fn path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/derive.json")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

const SAMPLES: [u64; 8] = [0, 1, 2, 3, 255, 1 << 32, 0x0123_4567_89AB_CDEF, u64::MAX];

fn primitives() -> Value {
    let pairs: Vec<(u64, u64)> = SAMPLES.iter().map(|&s| (s, s.rotate_left(17) ^ 5)).collect();
    json!({
        "mix64": SAMPLES.iter().map(|&x| json!([x, mix64(x)])).collect::<Vec<_>>(),
        "rnd": pairs.iter().map(|&(s, i)| json!([s, i % 1000, rnd(s, i % 1000)])).collect::<Vec<_>>(),
        "below": pairs.iter().map(|&(x, n)| json!([x, n % 1_000_003 + 1, below(x, n % 1_000_003 + 1)])).collect::<Vec<_>>(),
        "unit": SAMPLES.iter().map(|&x| json!([x, unit(x)])).collect::<Vec<_>>(),
        "stream": pairs.iter().map(|&(s, i)| json!([s, i, stream(s, i)])).collect::<Vec<_>>(),
        "ycsbhash": SAMPLES.iter().chain(&[1000, 4_294_967_296]).map(|&x| json!([x, ycsbhash(x)])).collect::<Vec<_>>(),
    })
}

fn pool() -> Value {
    let p = Pool::new(11, 100);
    json!({"pool_seed": 11, "max": 100, "len": p.bytes().len(),
           "first64": String::from_utf8(p.bytes()[..64].to_vec()).unwrap(), "xxh3": xxh3_64(p.bytes())})
}

const RECORDS: [u64; 10] = [0, 1, 9, 10, 99_999, 100_000, 123_456_789, 4_294_967_295, 10_000_000_000, u64::MAX];

fn keys() -> Value {
    let shapes = [
        (KeyKind::U32be, 0),
        (KeyKind::U64be, 0),
        (KeyKind::Decimal, 16),
        (KeyKind::Decimal, 5),
        (KeyKind::Ycsb, 0),
        (KeyKind::Random, 24),
        (KeyKind::Random, 8),
    ];
    let mut k = Vec::new();
    let rows = shapes.iter().map(|&(kind, width)| {
        // u32be holds records below 2^32 only (kvbench refuses larger datasets).
        let records: Vec<u64> =
            RECORDS.iter().copied().filter(|&r| kind != KeyKind::U32be || r <= u32::MAX as u64).collect();
        let keys: Vec<String> = records
            .iter()
            .map(|&r| {
                derived_key(kind, width, r, &mut k);
                hex(&k)
            })
            .collect();
        json!({"key": KeyShape { kind, width }, "records": records, "hex": keys})
    });
    Value::Array(rows.collect())
}

pub fn dataset(generator: Generator, key: KeyShape, value: ValueShape, loaded: u64, total: u64) -> Dataset {
    let ordered = match key.kind {
        KeyKind::Ycsb | KeyKind::Random => false,
        KeyKind::Decimal => (total as f64) <= 10f64.powi(key.width as i32),
        _ => true,
    };
    Dataset {
        generator,
        key,
        value,
        loaded,
        total,
        ordered,
        pool_seed: 11,
        value_seed: 12,
        open_records: total,
        open_bytes: 0,
    }
}

fn values() -> Value {
    let dec = KeyShape { kind: KeyKind::Decimal, width: 16 };
    let shapes = [
        (
            Generator::Synthetic,
            ValueShape { min: 100, max: 100, content: ValueContent::Printable, ..Default::default() },
        ),
        (Generator::Synthetic, ValueShape { min: 0, max: 24, content: ValueContent::Printable, ..Default::default() }),
        (Generator::Synthetic, ValueShape { min: 5, max: 40, content: ValueContent::Random, ..Default::default() }),
        (Generator::JsonDocs, ValueShape { min: 0, max: 40, content: ValueContent::Printable, ..Default::default() }),
        (Generator::Synthetic, ValueShape { min: 6, max: 6, fields: 3, ..Default::default() }),
        (Generator::Synthetic, ValueShape { min: 1, max: 9, fields: 12, ..Default::default() }),
        (
            Generator::Synthetic,
            ValueShape { min: 4, max: 4, content: ValueContent::Random, fields: 2, write_all_fields: true },
        ),
    ];
    let pairs = [(0u64, 0u64), (0, 1), (0, 2), (0, 9), (1, 0), (7, 3), (1000, 0), (123_456, 2), (u32::MAX as u64, 1)];
    let mut v = Vec::new();
    let rows = shapes.iter().map(|&(g, shape)| {
        let ds = dataset(g, dec, shape, 1000, 1000);
        let values = Values::new(&ds, None).unwrap();
        let out: Vec<Value> = pairs
            .iter()
            .map(|&(r, ver)| {
                values.value(r, ver, &mut v);
                json!([r, ver, hex(&v)])
            })
            .collect();
        json!({"dataset": ds, "values": out})
    });
    Value::Array(rows.collect())
}

fn perms() -> Value {
    let rows = [1u64, 2, 3, 10, 1000, 1_000_003].iter().map(|&n| {
        let key = rnd(42, n);
        let p = Perm::new(n, key);
        let first: Vec<u64> = (0..n.min(32)).map(|i| p.at(i)).collect();
        let mut row = json!({"n": n, "key": key, "first": first});
        if n == 1000 {
            let all: Vec<u8> = (0..n).flat_map(|i| p.at(i).to_le_bytes()).collect();
            row["xxh3"] = json!(xxh3_64(&all));
        }
        row
    });
    Value::Array(rows.collect())
}

fn zipfian() -> Value {
    let dist = zipfian_dist(100_001, YCSB_THETA).unwrap();
    let Dist::Zipfian { n, items, zetan, eta, theta, alpha } = dist.clone() else { unreachable!() };
    let draws: Vec<Value> = (0..24u64)
        .map(|k| {
            let x = rnd(77, k);
            let z = zipf(unit(x), items, zetan, eta, theta, alpha);
            json!([x, z, ycsbhash(z) as u64 % n])
        })
        .collect();
    let other = zipfian_dist(1000, 0.8).unwrap();
    json!({"dist": dist, "draws": draws, "theta_0_8": other})
}

fn latest() -> Value {
    let dist = latest_dist(2000, 999, YCSB_THETA).unwrap();
    let Dist::Latest { count, zetan, eta, theta, alpha, .. } = dist.clone() else { unreachable!() };
    let mut g = Latest::new(count, zetan, eta, theta, alpha);
    let draws: Vec<Value> = (0..24u64)
        .map(|k| {
            let (x, last) = (rnd(78, k), 999 + k / 4);
            let r = g.next(unit(x), last);
            json!([x, last, r, g.zetan()])
        })
        .collect();
    json!({"dist": dist, "draws": draws})
}

fn thresholds_vectors() -> Value {
    let mixes: [&[f64]; 5] = [&[0.5, 0.5], &[0.95, 0.05], &[0.5, 0.5, 0.0], &[1.0, 1.0, 1.0], &[0.05, 0.95]];
    Value::Array(mixes.iter().map(|m| json!({"parts": m, "thresholds": thresholds(m).unwrap()})).collect())
}

fn doc(plan: &Path) -> Value {
    json!({
        "_doc": include_str!("derive_vectors_doc.txt").lines().collect::<Vec<_>>(),
        "primitives": primitives(),
        "pool": pool(),
        "keys": keys(),
        "values": values(),
        "perm": perms(),
        "zipfian": zipfian(),
        "latest": latest(),
        "thresholds": thresholds_vectors(),
        "ops": ops_vectors::ops(),
        "plan_file": plan_vectors::plan_file(plan),
    })
}

/// Pretty JSON with arrays of scalars (ops, hex lists) on one line, so the file stays readable.
fn write_json(v: &Value, depth: usize, out: &mut String) {
    let pad = |d: usize| "  ".repeat(d);
    let scalar = |v: &Value| !v.is_array() && !v.is_object();
    match v {
        Value::Array(a) if a.iter().all(scalar) => out.push_str(&serde_json::to_string(v).unwrap()),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&pad(depth + 1));
                write_json(x, depth + 1, out);
            }
            out.push_str(&format!("\n{}]", pad(depth)));
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&format!("{}{}: ", pad(depth + 1), serde_json::to_string(k).unwrap()));
                write_json(x, depth + 1, out);
            }
            out.push_str(&format!("\n{}}}", pad(depth)));
        }
        _ => out.push_str(&serde_json::to_string(v).unwrap()),
    }
}

#[test]
fn derive_vectors_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join(plan_vectors::FILE);
    let mut text = String::new();
    write_json(&doc(&plan), 0, &mut text);
    text.push('\n');
    let committed_plan = path().with_file_name(plan_vectors::FILE);
    let bless = std::env::var("KVBENCH_BLESS").is_ok_and(|v| v == "1");
    if bless {
        std::fs::write(path(), &text).unwrap();
        std::fs::copy(&plan, &committed_plan).unwrap();
    }
    let built = std::fs::read(&plan).unwrap();
    assert!(
        std::fs::read(&committed_plan).is_ok_and(|c| c == built),
        "{} differs from a fresh build",
        committed_plan.display()
    );
    let committed = std::fs::read_to_string(path()).expect("tests/vectors/derive.json (KVBENCH_BLESS=1 writes it)");
    assert!(
        committed == text,
        "derive.json differs from the derivations; KVBENCH_BLESS=1 rewrites it after an intended change"
    );
}
