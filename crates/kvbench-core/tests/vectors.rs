//! Shared test vectors (tests/vectors/): the plan format and the worker protocol, which every
//! runtime (Rust, Python, Go) must read identically.
//!
//! - `plan-tiny.kvbplan` is a plan built from [`tiny_spec`]; `plan-tiny.json` is its decoded
//!   content (header, section table, every key and value as hex, sorted order, every phase's
//!   ops, scan expectations). This test asserts that a fresh build is byte-identical to the
//!   committed plan and that both decode to the committed JSON.
//! - `protocol/*.jsonl`: each line of `job*.jsonl` is a job file, each line of `events-*.jsonl`
//!   an event as a worker prints it. Every line must parse, every event must serialise back to
//!   the same JSON value, and every latency histogram must decode to the summary beside it.
//!
//! `UPDATE_VECTORS=1 cargo test -p kvbench-core --test vectors` rewrites the plan vectors after
//! an intended format change; `UPDATE_VECTORS=all` also rewrites `protocol/events-rust.jsonl`
//! from a run of the Rust runner over the tiny plan (timings differ from run to run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use kvbench_core::engine::*;
use kvbench_core::plan::{self, Plan, PlanSpec, NONE};
use kvbench_core::protocol::{Event, Job, JobPhase, PROTOCOL_VERSION};
use kvbench_core::runner;
use kvbench_core::spec::*;
use serde_json::{json, Value};

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

fn update_mode() -> Option<String> {
    std::env::var("UPDATE_VECTORS").ok().filter(|v| !v.is_empty() && v != "0")
}

fn phase(kind: PhaseKind, count: Option<u64>, distribution: Distribution) -> OpsSpec {
    OpsSpec {
        kind,
        count,
        distribution,
        keys_per_request: 1,
        scan_length: 0,
        mix: Mix::default(),
        hot_key: None,
        zipf_exponent: 0.99,
    }
}

/// Every phase kind and distribution, on 40 small records.
pub fn tiny_spec() -> PlanSpec {
    use Distribution::*;
    use PhaseKind::*;
    PlanSpec {
        seed: 7,
        dataset: DatasetSpec {
            records: 40,
            key: KeySpec { kind: KeyKind::Decimal, width: 5 },
            value: ValueSpec { size: None, min: Some(0), max: Some(24), content: ValueContent::Printable },
            ..Default::default()
        },
        phases: vec![
            phase(Load, None, Uniform),
            phase(Get, Some(30), Uniform),
            OpsSpec { keys_per_request: 4, ..phase(MultiGet, Some(5), Uniform) },
            phase(Update, Some(15), Uniform),
            phase(Delete, Some(5), Uniform),
            OpsSpec {
                scan_length: 5,
                mix: Mix { read: 5.0, update: 3.0, scan: 1.0, delete: 1.0 },
                ..phase(Mixed, Some(30), Uniform)
            },
            OpsSpec { hot_key: Some(7), ..phase(Get, Some(5), Hot) },
            phase(Get, None, Sequential),
            phase(Scan, None, Sequential),
            OpsSpec { scan_length: 4, ..phase(Scan, Some(3), Uniform) },
            phase(Get, Some(10), Zipfian),
            phase(Get, Some(10), Latest),
        ],
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn rd64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn section_name(kind: u32) -> &'static str {
    match kind {
        plan::section::DATA => "DATA",
        plan::section::INDEX => "INDEX",
        plan::section::SORTED => "SORTED",
        plan::section::UPDATE_DATA => "UPDATE_DATA",
        plan::section::UPDATE_INDEX => "UPDATE_INDEX",
        plan::section::OPS => "OPS",
        plan::section::SCAN_EXPECT => "SCAN_EXPECT",
        plan::section::SPEC => "SPEC",
        _ => "UNKNOWN",
    }
}

/// The decoded content of a plan file, as written to `plan-tiny.json`.
fn decode(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    let plan = Plan::open(path).unwrap();
    let nsec = rd32(&bytes, 12) as usize;
    let mut sections = Vec::new();
    let mut uindex = None;
    let mut scan_phases = Vec::new();
    for i in 0..nsec {
        let at = (plan::HEADER_SIZE + plan::SECTION_ENTRY_SIZE * i as u64) as usize;
        let (kind, index) = (rd32(&bytes, at), rd32(&bytes, at + 4));
        let (offset, length, count) = (rd64(&bytes, at + 8), rd64(&bytes, at + 16), rd64(&bytes, at + 24));
        if kind == plan::section::UPDATE_INDEX {
            uindex = Some(offset as usize);
        }
        if kind == plan::section::SCAN_EXPECT {
            scan_phases.push(index as usize);
        }
        sections.push(json!({
            "kind": kind, "name": section_name(kind), "index": index,
            "offset": offset, "length": length, "count": count,
        }));
    }
    let n = plan.records();
    let records: Vec<Value> =
        (0..n as u32).map(|r| json!({ "key": hex(plan.key(r)), "value": hex(plan.value(r)) })).collect();
    let uindex = uindex.expect("UPDATE_INDEX section");
    let updates: Vec<Value> = (0..plan.update_values())
        .map(|u| {
            let j = (n + u) as u32;
            json!({
                "value_index": j,
                "record": rd32(&bytes, uindex + u as usize * 16 + 8),
                "value": hex(plan.value(j)),
            })
        })
        .collect();
    let sorted: Vec<u32> = (0..plan.unique_records()).map(|p| plan.sorted(p)).collect();
    let phases: Vec<Value> = (0..plan.phase_count())
        .map(|p| {
            let ops = plan.ops(p).unwrap();
            let ops: Vec<[u32; 4]> = (0..ops.len())
                .map(|i| {
                    let o = ops.get(i);
                    [o.kind, o.key, o.value, o.aux]
                })
                .collect();
            json!({ "phase": p, "ops": ops })
        })
        .collect();
    let scan_expect: Vec<Value> = scan_phases
        .iter()
        .map(|&p| {
            let values: Vec<u32> = (0..plan.unique_records()).map(|q| plan.scan_expect(p, q).unwrap()).collect();
            json!({ "phase": p, "values": values })
        })
        .collect();
    let spec: Value = serde_json::from_slice(plan.spec_json().unwrap()).unwrap();
    json!({
        "comment": "Decoded content of plan-tiny.kvbplan (see docs/plan-format.md). Written by crates/kvbench-core/tests/vectors.rs; ops are [kind, key, value, aux], 4294967295 = NONE.",
        "file_length": bytes.len(),
        "magic": hex(&bytes[0..8]),
        "format_version": rd32(&bytes, 8),
        "section_count": nsec,
        "seed": plan.seed(),
        "spec_hash": format!("{:016x}", plan.spec_hash()),
        "records": n,
        "unique_records": plan.unique_records(),
        "raw_bytes": plan.raw_bytes(),
        "update_values": plan.update_values(),
        "none": NONE,
        "sections": sections,
        "record_list": records,
        "updates": updates,
        "sorted": sorted,
        "phases": phases,
        "scan_expect": scan_expect,
        "spec": spec,
    })
}

/// Pretty JSON with arrays of scalars kept on one line (one op per line, not four).
fn pretty(v: &Value) -> String {
    fn write(v: &Value, indent: usize, out: &mut String) {
        let pad = |n: usize| "  ".repeat(n);
        match v {
            Value::Array(a) if a.iter().all(|x| !x.is_array() && !x.is_object()) => {
                out.push_str(&serde_json::to_string(v).unwrap().replace(',', ", "));
            }
            Value::Array(a) => {
                out.push_str("[\n");
                for (i, x) in a.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    write(x, indent + 1, out);
                    out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push(']');
            }
            Value::Object(m) if !m.is_empty() => {
                out.push_str("{\n");
                for (i, (k, x)) in m.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push_str(": ");
                    write(x, indent + 1, out);
                    out.push_str(if i + 1 < m.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push('}');
            }
            _ => out.push_str(&serde_json::to_string(v).unwrap()),
        }
    }
    let mut s = String::new();
    write(v, 0, &mut s);
    s.push('\n');
    s
}

#[test]
fn plan_vector_is_stable_and_decodes_as_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("plan-tiny.kvbplan");
    plan::build(&tiny_spec(), &fresh).unwrap();
    let fresh_json = pretty(&decode(&fresh));
    let dir = vectors_dir();
    let (bin, txt) = (dir.join("plan-tiny.kvbplan"), dir.join("plan-tiny.json"));
    if update_mode().is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&fresh, &bin).unwrap();
        std::fs::write(&txt, &fresh_json).unwrap();
        eprintln!("rewrote {} and {}", bin.display(), txt.display());
        return;
    }
    let committed = std::fs::read(&bin).expect("tests/vectors/plan-tiny.kvbplan (UPDATE_VECTORS=1 writes it)");
    assert!(
        committed == std::fs::read(&fresh).unwrap(),
        "a fresh build of the tiny plan differs from tests/vectors/plan-tiny.kvbplan: the plan format \
         or a generator changed. If intended, bump plan::FORMAT_VERSION when readers must change, \
         update docs/plan-format.md and run UPDATE_VECTORS=1 cargo test -p kvbench-core --test vectors"
    );
    let committed_json = std::fs::read_to_string(&txt).expect("tests/vectors/plan-tiny.json");
    assert_eq!(pretty(&decode(&bin)), committed_json, "plan-tiny.json does not match the plan's decoding");
    assert_eq!(fresh_json, committed_json);
}

#[test]
fn tiny_plan_covers_every_op_kind_and_section() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p");
    plan::build(&tiny_spec(), &path).unwrap();
    let plan = Plan::open(&path).unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    for p in 0..plan.phase_count() {
        let ops = plan.ops(p).unwrap();
        for i in 0..ops.len() {
            kinds.insert(ops.get(i).kind);
        }
    }
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert!(plan.update_values() > 0);
    assert!(plan.scan_expect(8, 0).is_some() && plan.scan_expect(9, 0).is_some());
}

// ---- protocol ----

fn protocol_files(prefix: &str) -> Vec<PathBuf> {
    let dir = vectors_dir().join("protocol");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(prefix) && name.ends_with(".jsonl")
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no {prefix}*.jsonl in {}", dir.display());
    v
}

fn lines(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

#[test]
fn job_vectors_parse() {
    let mut n = 0;
    for path in protocol_files("job") {
        for (no, line) in lines(&path) {
            let job: Job = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{}:{no}: {e}", path.display()));
            assert_eq!(job.protocol, PROTOCOL_VERSION, "{}:{no}", path.display());
            assert!(!job.phases.is_empty(), "{}:{no}", path.display());
            n += 1;
        }
    }
    assert!(n >= 3, "expected several job examples, found {n}");
}

#[test]
fn event_vectors_parse_round_trip_and_histograms_match_summaries() {
    let mut seen = BTreeMap::new();
    for path in protocol_files("events-") {
        for (no, line) in lines(&path) {
            let at = format!("{}:{no}", path.display());
            let original: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{at}: not JSON: {e}"));
            let event: Event = serde_json::from_value(original.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
            // Same value back: no unknown fields, integers stay integers, floats stay floats.
            let back = serde_json::to_value(&event).unwrap();
            assert_eq!(back, original, "{at}: event does not serialise back to the same JSON");
            let tag = original["event"].as_str().unwrap().to_string();
            *seen.entry(tag).or_insert(0) += 1;
            if let Event::Phase { result } = &event {
                if let Some(lat) = &result.latency {
                    let h = runner::decode_histogram(&lat.hdr).unwrap_or_else(|e| panic!("{at}: hdr: {e}"));
                    let again = runner::summarize(&h).expect("non-empty histogram");
                    assert_eq!(h.len(), result.requests, "{at}: one sample per request");
                    assert_eq!(
                        (again.min_ns, again.p50_ns, again.p90_ns, again.p99_ns, again.p999_ns, again.max_ns),
                        (lat.min_ns, lat.p50_ns, lat.p90_ns, lat.p99_ns, lat.p999_ns, lat.max_ns),
                        "{at}: summary fields differ from the histogram's"
                    );
                    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
                    assert!(close(again.mean_ns, lat.mean_ns), "{at}: mean {} vs {}", again.mean_ns, lat.mean_ns);
                    assert!(close(again.stdev_ns, lat.stdev_ns), "{at}: stdev {} vs {}", again.stdev_ns, lat.stdev_ns);
                }
            }
        }
    }
    for tag in ["hello", "phase", "done", "error", "progress"] {
        assert!(seen.contains_key(tag), "no `{tag}` event among the vectors: {seen:?}");
    }
}

// ---- regenerating events-rust.jsonl ----

#[derive(Default)]
struct Mem {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
}

struct MemReader<'a>(&'a RwLock<BTreeMap<Vec<u8>, Vec<u8>>>);

impl Engine for Mem {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut m = self.map.write().unwrap();
        for w in batch {
            match w.value {
                Some(v) => m.insert(w.key.to_vec(), v.to_vec()),
                None => m.remove(w.key),
            };
        }
        Ok(())
    }
    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(MemReader(&self.map)))
    }
}

impl Reader for MemReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.0.read().unwrap().get(key) {
            Some(v) => {
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn scan(
        &mut self,
        start: Option<&[u8]>,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let m = self.0.read().unwrap();
        let lo = start.map(|s| std::ops::Bound::Included(s.to_vec())).unwrap_or(std::ops::Bound::Unbounded);
        let mut n = 0;
        for (k, v) in m.range((lo, std::ops::Bound::Unbounded)).take(limit) {
            n += 1;
            if !visit(k, v) {
                break;
            }
        }
        Ok(n)
    }
}

static VECTOR_MEMORY: EngineDescriptor = EngineDescriptor {
    name: "memory",
    description: "in-memory map (test vectors)",
    capabilities: Capabilities {
        ordered_scan: true,
        multi_get: false,
        batch: true,
        read_only_open: false,
        secondary_open: false,
        persistent: false,
        build_once: false,
        delete: true,
    },
    options: &[],
    version: || "vectors".into(),
    available: || Ok(()),
    open: |_| Ok(Box::new(Mem::default())),
    start_server: None,
};

fn job_phase(name: &str, kind: PhaseKind, plan_phase: usize) -> JobPhase {
    JobPhase {
        name: name.into(),
        kind,
        plan_phase,
        threads: 1,
        batch: if kind == PhaseKind::Load { 8 } else { 1 },
        keys_per_request: if kind == PhaseKind::MultiGet { 4 } else { 1 },
        cache: CacheMode::Warm,
        open_per: OpenPer::Phase,
        rate: None,
    }
}

#[test]
fn regenerate_rust_events_on_request() {
    if update_mode().as_deref() != Some("all") {
        return;
    }
    let plan = vectors_dir().join("plan-tiny.kvbplan");
    let tmp = tempfile::tempdir().unwrap();
    use PhaseKind::*;
    let job = Job {
        protocol: PROTOCOL_VERSION,
        engine: "memory".into(),
        label: "memory".into(),
        options: BTreeMap::new(),
        plan,
        dir: tmp.path().to_path_buf(),
        sync: SyncMode::Commit,
        open_mode: OpenMode::ReadWrite,
        url: None,
        phases: vec![
            job_phase("load", Load, 0),
            job_phase("get", Get, 1),
            job_phase("multi-get", MultiGet, 2),
            job_phase("update", Update, 3),
            job_phase("delete", Delete, 4),
            job_phase("mixed", Mixed, 5),
            job_phase("get-hot", Get, 6),
            job_phase("get-seq", Get, 7),
            job_phase("scan", Scan, 8),
            job_phase("scan-short", Scan, 9),
            job_phase("get-zipfian", Get, 10),
            job_phase("get-latest", Get, 11),
        ],
        progress_ms: 0,
    };
    let mut out = String::new();
    let mut progress = 0;
    runner::run_job(&job, &VECTOR_MEMORY, &mut |e| {
        // Keep a few progress events, not one per operation.
        if matches!(e, Event::Progress { .. }) {
            progress += 1;
            if progress > 3 {
                return;
            }
        }
        out.push_str(&e.to_line());
        out.push('\n');
    })
    .unwrap();
    // A job that fails, for the error event.
    let bad = Job { protocol: 99, ..job };
    runner::run_job(&bad, &VECTOR_MEMORY, &mut |e| {
        out.push_str(&e.to_line());
        out.push('\n');
    })
    .unwrap_err();
    std::fs::write(vectors_dir().join("protocol/events-rust.jsonl"), out).unwrap();
}
