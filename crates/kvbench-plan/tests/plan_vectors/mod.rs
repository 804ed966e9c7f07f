//! The `plan_file` part of derive.json: a small stored plan file (committed beside it) and what
//! a reader must find in it.

use std::path::Path;
use std::sync::Arc;

use kvbench_model::job::{Generator, KeyShape, ValueShape};
use kvbench_model::spec::{KeyKind, ValueContent};
use kvbench_plan::derive::Values;
use kvbench_plan::gen::RecordSource;
use kvbench_plan::planfile::{build_stored, LoadOrder, PlanFile, PlanId};
use serde_json::{json, Value};

pub const FILE: &str = "plan2-stored.kvbplan";

/// UTF-8 keys, a repeated key, an empty value.
const RECORDS: [(&str, &str); 7] = [
    ("東京", "1"),
    ("apple", "22"),
    ("zebra", "333"),
    ("apple", "4444"),
    ("東京", "55555"),
    ("empty", ""),
    ("Apple", "7777777"),
];

struct Fixed;

impl RecordSource for Fixed {
    fn len(&self) -> u64 {
        RECORDS.len() as u64
    }
    fn record(&mut self, i: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        self.key(i, key);
        value.clear();
        value.extend_from_slice(RECORDS[i as usize].1.as_bytes());
        Ok(())
    }
    fn update_value(&mut self, _: u64, _: u64, _: &mut Vec<u8>) {}
    fn key(&mut self, i: u64, key: &mut Vec<u8>) {
        key.clear();
        key.extend_from_slice(RECORDS[i as usize].0.as_bytes());
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Builds the plan into `path` and describes it.
pub fn plan_file(path: &Path) -> Value {
    let id = PlanId { seed: 7, spec_hash: 0x1234_5678_9ABC_DEF0, spec_json: b"{\"vectors\":\"plan2-stored\"}" };
    let order = LoadOrder::Shuffle { perm_seed: 99 };
    build_stored(path, id, &mut Fixed, order).unwrap();
    let p = Arc::new(PlanFile::open(path).unwrap());
    let h = p.header();
    let sections: Vec<Value> = [1u32, 2, 3, 4, 6, 8]
        .iter()
        .filter_map(|&k| p.section(k))
        .map(|s| json!({"kind": s.kind, "index": s.index, "offset": s.offset, "length": s.length, "count": s.count}))
        .collect();
    let n = h.records;
    let dataset = super::dataset(
        Generator::Stored,
        KeyShape { kind: KeyKind::Decimal, width: 0 },
        ValueShape { min: 0, max: p.longest_value() as u32, content: ValueContent::Printable, ..Default::default() },
        n,
        n,
    );
    let dataset = kvbench_model::job::Dataset { ordered: false, ..dataset };
    let values = Values::new(&dataset, Some(p.clone())).unwrap();
    let mut v = Vec::new();
    let later: Vec<Value> = (0..n)
        .flat_map(|r| [1u64, 2].map(|ver| (r, ver)))
        .map(|(r, ver)| {
            values.value(p.canon(r), ver, &mut v);
            json!([p.canon(r), ver, hex(&v)])
        })
        .collect();
    json!({
        "file": FILE,
        "load_order": {"name": "shuffle", "perm_seed": 99},
        "header": {"seed": h.seed, "spec_hash": h.spec_hash, "records": h.records, "distinct": h.distinct, "raw_bytes": h.raw_bytes},
        "sections": sections,
        "records": (0..n).map(|r| json!([hex(p.key(r)), hex(p.value(r)), p.canon(r)])).collect::<Vec<_>>(),
        "sorted": (0..h.distinct).map(|i| p.sorted(i)).collect::<Vec<_>>(),
        "rank": (0..n).map(|r| p.rank(r)).collect::<Vec<_>>(),
        "dataset": dataset,
        "later_values": later,
    })
}
