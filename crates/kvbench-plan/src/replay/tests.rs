use super::*;
use crate::planfile::PlanFile;

fn op(ts: u64, kind: Kind, key: &str, size: Option<u32>, joined: bool) -> Result<TraceOp, TraceError> {
    Ok(TraceOp { ts_us: ts, client: 0, kind, key: key.as_bytes().to_vec(), value_size: size, scan_len: None, joined })
}

fn built(ops: Vec<Result<TraceOp, TraceError>>) -> (tempfile::TempDir, PlanFile, TraceInfo) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kvbplan");
    let id = PlanId { seed: 7, spec_hash: 1, spec_json: b"{}" };
    let info = build(&path, id, &mut ops.into_iter(), Origin { source: "t", format: "test" }).unwrap();
    let plan = PlanFile::open(&path).unwrap();
    (dir, plan, info)
}

fn ops_of(plan: &PlanFile) -> Vec<Entry> {
    entries(plan).unwrap().chunks(OP_BYTES).map(|b| Entry::decode(b).unwrap()).collect()
}

#[test]
fn keys_read_before_written_come_first_and_keep_their_recorded_sizes() {
    let (_d, plan, info) = built(vec![
        op(1000, Kind::Put, "new", Some(5), false),
        op(1010, Kind::Get, "old", Some(7), false),
        op(1020, Kind::Get, "new", None, false),
        op(1030, Kind::Delete, "gone", None, false),
    ]);
    assert_eq!(info.preloaded, 2, "old and gone exist before the trace writes them");
    assert_eq!(info.distinct_keys, 3);
    assert_eq!((plan.key(0), plan.key(1), plan.key(2)), (&b"old"[..], &b"gone"[..], &b"new"[..]));
    assert_eq!(plan.value(0).len(), 7);
    assert_eq!(plan.value(2).len(), 5);
    assert_eq!(plan.value(1).len(), 5, "a key no op sizes takes the puts' mean size");
    let e = ops_of(&plan);
    let got: Vec<(u64, u32, PhaseKind)> = e.iter().map(|e| (e.at_us, e.record, e.kind)).collect();
    assert_eq!(
        got,
        [(0, 2, PhaseKind::Update), (10, 0, PhaseKind::Get), (20, 2, PhaseKind::Get), (30, 1, PhaseKind::Delete)]
    );
    assert_eq!(info.by_kind["get"], 2);
    assert_eq!(info.read_write_ratio, 1.0);
}

#[test]
fn a_multi_key_read_becomes_one_multi_get_request_and_a_batch_stays_joined() {
    let (_d, plan, info) = built(vec![
        op(0, Kind::Get, "a", None, false),
        op(0, Kind::Get, "b", None, true),
        op(1, Kind::Put, "a", Some(3), false),
        op(1, Kind::Delete, "b", None, true),
        op(2, Kind::Get, "c", None, false),
        op(2, Kind::Put, "c", Some(3), true),
    ]);
    assert_eq!(info.requests, 4);
    let e = ops_of(&plan);
    let got: Vec<(PhaseKind, bool)> = e.iter().map(|e| (e.kind, e.joined)).collect();
    assert_eq!(
        got,
        [
            (PhaseKind::MultiGet, false),
            (PhaseKind::MultiGet, true),
            (PhaseKind::Update, false),
            (PhaseKind::Delete, true),
            (PhaseKind::Get, false),
            (PhaseKind::Update, false),
        ],
        "a read joined to a write is a request of its own"
    );
}

#[test]
fn times_never_step_back_and_count_from_the_first_op() {
    let (_d, plan, info) = built(vec![
        op(500, Kind::Get, "a", None, false),
        op(400, Kind::Get, "a", None, false),
        op(900, Kind::Get, "a", None, false),
    ]);
    let at: Vec<u64> = ops_of(&plan).iter().map(|e| e.at_us).collect();
    assert_eq!(at, [0, 0, 400]);
    assert_eq!(info.duration_us, 400);
}

#[test]
fn a_reader_error_stops_the_build_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kvbplan");
    let id = PlanId { seed: 7, spec_hash: 1, spec_json: b"{}" };
    let bad = TraceError::new(Path::new("x.txt"), kvbench_trace::Place::Line(3), "expected a command");
    let mut ops = vec![op(0, Kind::Get, "a", None, false), Err(bad)].into_iter();
    let e = build(&path, id, &mut ops, Origin { source: "x.txt", format: "test" }).unwrap_err();
    assert_eq!(format!("{e:#}"), "x.txt: line 3: expected a command");
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no spool or temporary file left");
}

#[test]
fn an_empty_stream_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kvbplan");
    let id = PlanId { seed: 7, spec_hash: 1, spec_json: b"{}" };
    let e = build(&path, id, &mut std::iter::empty(), Origin { source: "e.txt", format: "test" }).unwrap_err();
    assert!(format!("{e:#}").contains("e.txt: the stream holds no operation"), "{e:#}");
}

/// The ops each of `threads` threads runs, as (k, record) pairs.
fn per_thread(plan: PlanFile, by_client: bool, threads: u32) -> Vec<Vec<(u64, u64)>> {
    use crate::opstream::OpStream;
    let plan = std::sync::Arc::new(plan);
    let ds = kvbench_model::job::Dataset {
        generator: kvbench_model::job::Generator::Stored,
        key: kvbench_model::job::KeyShape { kind: kvbench_model::spec::KeyKind::Decimal, width: 16 },
        value: Default::default(),
        loaded: 0,
        total: plan.header().records,
        ordered: false,
        pool_seed: 1,
        value_seed: 2,
        open_records: 0,
        open_bytes: 0,
    };
    let mut step: kvbench_model::job::OpsStep =
        serde_json::from_value(serde_json::json!({"index": 0, "name": "replay", "kind": "replay", "count": 1000,
            "dist": {"name": "sequential", "n": 1}, "rec_seed": 0, "replay": {"by_client": by_client}}))
        .unwrap();
    step.threads = threads;
    (0..threads)
        .map(|t| OpStream::with_plan(&ds, Some(&plan), &step, t, threads).unwrap().map(|o| (o.k, o.record)).collect())
        .collect()
}

fn client_op(client: u32, key: &str, joined: bool) -> Result<TraceOp, TraceError> {
    Ok(TraceOp { client, ..op(0, Kind::Get, key, None, joined).unwrap() })
}

#[test]
fn each_client_stays_on_one_thread_in_order() {
    let (_d, plan, _) = built(vec![
        client_op(0, "a", false),
        client_op(1, "b", false),
        client_op(2, "c", false),
        client_op(0, "d", false),
        client_op(1, "e", false),
    ]);
    let got = per_thread(plan, true, 2);
    assert_eq!(got[0], [(0, 0), (2, 2), (3, 3)], "clients 0 and 2");
    assert_eq!(got[1], [(1, 1), (4, 4)], "client 1");
}

#[test]
fn with_more_threads_than_clients_requests_are_dealt_in_turn_whole() {
    let (_d, plan, _) = built(vec![
        client_op(0, "a", false),
        client_op(0, "b", true),
        client_op(0, "c", false),
        client_op(0, "d", false),
    ]);
    let got = per_thread(plan, false, 2);
    assert_eq!(got[0], [(0, 0), (1, 1), (3, 3)], "the multi-get of a and b stays whole");
    assert_eq!(got[1], [(2, 2)]);
}
