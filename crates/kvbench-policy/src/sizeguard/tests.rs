use super::*;
use crate::job::{Dist, KeyShape, ValueShape};
use crate::spec::ValueContent;

fn dataset(kind: KeyKind, width: u32, total: u64, ordered: bool) -> Dataset {
    Dataset {
        generator: Generator::Synthetic,
        key: KeyShape { kind, width },
        value: ValueShape { min: 100, max: 100, content: ValueContent::Printable, ..Default::default() },
        loaded: total,
        total,
        ordered,
        pool_seed: 1,
        value_seed: 2,
        open_records: total,
        open_bytes: 0,
    }
}

fn scan_step() -> OpsStep {
    serde_json::from_value(serde_json::json!({
        "index": 0, "name": "scan", "kind": "scan", "count": 10, "dist": Dist::Uniform { n: 10 }, "rec_seed": 1,
    }))
    .unwrap()
}

#[test]
fn decimal_keys_count_their_digits() {
    assert_eq!(decimal_bytes(1000, 0), 10 + 90 * 2 + 900 * 3);
    assert_eq!(decimal_bytes(100, 16), 1600);
    assert_eq!(decimal_bytes(0, 16), 0);
}

#[test]
fn derived_data_has_no_plan_file_unless_unordered_keys_are_scanned() {
    let ds = dataset(KeyKind::Decimal, 16, 10_000_000, true);
    let s = estimate(&ds, &[scan_step()], None, 0);
    assert_eq!(s, Sizes { plan_bytes: 0, raw_bytes: 10_000_000 * 116 });
    let ycsb = dataset(KeyKind::Ycsb, 0, 1000, false);
    assert_eq!(estimate(&ycsb, &[], None, 0).plan_bytes, 0);
    assert!(estimate(&ycsb, &[scan_step()], None, 0).plan_bytes >= 4000);
}

#[test]
fn a_run_that_fits_passes_and_one_that_does_not_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert!(check(Sizes { plan_bytes: 1 << 20, raw_bytes: 1 << 20 }, dir.path(), &dir.path().join("new/data")).is_ok());
    let huge = Sizes { plan_bytes: 1 << 60, raw_bytes: 1 << 50 };
    let err = check(huge, dir.path(), dir.path()).unwrap_err().to_string();
    assert!(err.contains("--no-size-check") && err.contains("free") && err.contains("1024.0 TiB"), "{err}");
    assert!(err.contains(&dir.path().display().to_string()), "{err}");
}
