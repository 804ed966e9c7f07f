//! Decisions of the job builder that the article scenarios rely on.

use super::*;
use crate::dataset;
use crate::job::PhaseKind;

fn caps(persistent: bool, read_only: bool) -> Capabilities {
    Capabilities { persistent, read_only_open: read_only, batch: true, ..Default::default() }
}

fn plan(toml: &str, caps: Capabilities) -> JobPlan {
    plan_on(toml, caps, "rust")
}

fn plan_on(toml: &str, caps: Capabilities, runtime: &str) -> JobPlan {
    let s: Scenario = toml::from_str(toml).unwrap();
    s.check().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let data = dataset::resolve(&s, tmp.path()).unwrap();
    let v = s.all_variants()[0].clone();
    let row = RowFacts { variant: &v, options: &v.options, caps, runtime, server: false };
    build(&s, &data, &row).unwrap()
}

fn kinds_before(plan: &JobPlan, phase: &str) -> Vec<&'static str> {
    let ph = plan.phases.iter().find(|x| x.name == phase).unwrap();
    ph.before
        .iter()
        .map(|&i| match &plan.job.steps[i] {
            Step::Open { .. } => "open",
            Step::Close { .. } => "close",
            Step::Evict { .. } => "evict",
            Step::Prepare { .. } => "prepare",
            Step::Settle { .. } => "settle",
            Step::Ops(_) => "ops",
        })
        .collect()
}

fn ops<'a>(plan: &'a JobPlan, phase: &str) -> &'a OpsStep {
    let main = plan.phases.iter().find(|x| x.name == phase).unwrap().main.unwrap();
    match &plan.job.steps[main] {
        Step::Ops(o) => o,
        other => panic!("{other:?}"),
    }
}

const ARTICLE_004: &str = r#"
engines = ["lmdb"]
[dataset]
records = 100
[[phase]]
name = "put"
kind = "load"
distribution = "uniform"
[[phase]]
name = "get"
kind = "get"
distribution = "load-order"
cache = "reopen"
[[phase]]
name = "get-passes"
kind = "get"
distribution = "load-order"
passes = 5
"#;

#[test]
fn reopen_closes_and_opens_without_evicting() {
    let p = plan(ARTICLE_004, caps(true, false));
    assert_eq!(kinds_before(&p, "get"), ["close", "open"]);
    assert_eq!(p.phases.iter().find(|x| x.name == "get").unwrap().cache, "reopen");
    let n = plan(ARTICLE_004, caps(false, false));
    let na = n.phases.iter().find(|x| x.name == "get").unwrap().not_applicable.clone();
    assert!(na.is_some_and(|w| w.contains("not persistent")));
}

#[test]
fn passes_multiply_the_records_and_load_order_replays_the_loads_permutation() {
    let p = plan(ARTICLE_004, caps(true, false));
    let (load, passes) = (ops(&p, "put"), ops(&p, "get-passes"));
    assert_eq!(passes.count, 500);
    assert_eq!(passes.dist, Dist::LoadOrder { n: 100 });
    assert_eq!(passes.perm_seed, load.perm_seed, "the load's permutation, not one of the phase's own");
    assert_eq!(load.dist, Dist::Shuffle { n: 100 });
}

#[test]
fn load_and_multi_get_passes_cover_every_record_that_many_times() {
    let toml = ARTICLE_004.replacen("distribution = \"uniform\"", "distribution = \"sequential\"\npasses = 3", 1)
        + "[[phase]]\nname = \"bulk\"\nkind = \"multi-get\"\nkeys = 30\npasses = 2\n";
    let p = plan(&toml, caps(true, false));
    let load = ops(&p, "put");
    assert_eq!(
        (load.count, load.dist.clone()),
        (300, Dist::Sequential { n: 100, start: 0 }),
        "3 copies of each record"
    );
    assert_eq!(ops(&p, "get").count, 100, "the records, not the copies");
    assert_eq!(ops(&p, "bulk").count, 2 * 4 * 30, "2 passes of 4 requests of 30 keys");
    let all = plan(&toml.replace("keys = 30", "keys = 1000"), caps(true, false));
    let bulk = ops(&all, "bulk");
    assert_eq!((bulk.keys_per_request, bulk.count), (100, 200), "a request of every record, once a pass");
}

/// Issue 45 point 5: article 004's second Put is a later load (the same values again) in the
/// first load's order, one put a unit, committed and finished like a load.
#[test]
fn a_later_load_replays_the_first_loads_order() {
    let toml = ARTICLE_004.replacen(
        "[[phase]]\nname = \"get\"",
        "[[phase]]\nname = \"again\"\nkind = \"load\"\ndistribution = \"load-order\"\nbatch = 1\n[[phase]]\nname = \"get\"",
        1,
    );
    let p = plan(&toml, caps(true, false));
    let (load, again) = (ops(&p, "put"), ops(&p, "again"));
    assert_eq!(again.kind, PhaseKind::Load);
    assert_eq!((again.count, again.batch), (100, 1));
    assert_eq!(again.dist, Dist::LoadOrder { n: 100 });
    assert_eq!(again.perm_seed, load.perm_seed, "the first load's permutation");
    let seq = plan(&toml.replacen("distribution = \"uniform\"", "distribution = \"sequential\"", 1), caps(true, false));
    assert_eq!(ops(&seq, "again").dist, Dist::Sequential { n: 100, start: 0 });
}

#[test]
fn load_order_after_a_sequential_load_is_sequential() {
    let toml = ARTICLE_004.replacen("distribution = \"uniform\"", "distribution = \"sequential\"", 1);
    let p = plan(&toml, caps(true, false));
    assert_eq!(ops(&p, "get").dist, Dist::Sequential { n: 100, start: 0 });
}

#[test]
fn a_phase_open_mode_reopens_the_rows_database_that_way() {
    let toml = r#"
engines = ["lmdb"]
[dataset]
records = 10
[[phase]]
kind = "load"
[[phase]]
name = "ro"
kind = "get"
open = "read-only"
[[phase]]
name = "rw"
kind = "get"
"#;
    let p = plan(toml, caps(true, true));
    let main = p.phases.iter().find(|x| x.name == "ro").unwrap().before[1];
    assert!(matches!(p.job.steps[main], Step::Open { mode: OpenMode::ReadOnly, .. }));
    assert_eq!(kinds_before(&p, "rw"), ["close", "open"], "back to the row's own mode");
    let na = plan(toml, caps(true, false));
    let why = na.phases.iter().find(|x| x.name == "ro").unwrap().not_applicable.clone();
    assert_eq!(why.as_deref(), Some("engine has no read-only open"));
}

#[test]
fn passes_and_open_are_refused_where_they_mean_nothing() {
    let bad = [
        ("kind = \"scan\"\npasses = 2", "passes"),
        ("kind = \"get\"\ncount = 5\npasses = 2", "passes"),
        ("kind = \"get\"\npasses = 0", "passes"),
        ("kind = \"update\"\nopen = \"read-only\"", "open"),
    ];
    for (phase, field) in bad {
        let text = format!("engines = [\"lmdb\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\n{phase}\n");
        let s: Scenario = toml::from_str(&text).unwrap();
        let err = s.check().unwrap_err();
        assert!(err.contains(field), "{phase}: {err}");
    }
}

/// redb's plan: reads of a fifth of the records, removal of half of them after inserts.
#[test]
fn share_counts_a_share_of_the_records_in_the_store_when_the_phase_starts() {
    let toml = r#"
engines = ["lmdb"]
[dataset]
records = 1000
[[phase]]
kind = "load"
[[phase]]
kind = "insert"
count = 200
[[phase]]
name = "reads"
kind = "get"
distribution = "sequential"
share = 0.2
[[phase]]
name = "scans"
kind = "scan"
length = 10
share = 0.1
[[phase]]
name = "gets"
kind = "multi-get"
keys = 7
share = 0.01
[[phase]]
name = "removals"
kind = "delete"
distribution = "sequential"
share = 0.5
"#;
    let all = Capabilities { ordered_scan: true, multi_get: true, delete: true, ..caps(true, false) };
    let p = plan(toml, all);
    assert_eq!(ops(&p, "reads").count, 240, "a fifth of 1 200 records");
    assert_eq!(ops(&p, "reads").dist, Dist::Sequential { n: 1200, start: 0 });
    assert_eq!(ops(&p, "scans").count, 120, "scans, not the records they read");
    assert_eq!(ops(&p, "gets").count, 14, "12 keys make two whole requests of 7");
    assert_eq!(ops(&p, "removals").count, 600);
    assert_eq!(ops(&p, "removals").dist, Dist::Sequential { n: 1200, start: 0 });
}

#[test]
fn share_is_refused_where_it_cannot_give_the_count() {
    let bad = [
        ("kind = \"get\"\nshare = 0", "> 0"),
        ("kind = \"get\"\nshare = 1001", "<= 1000"),
        ("kind = \"get\"\ncount = 5\nshare = 0.5", "leave `count` out"),
        ("kind = \"get\"\npasses = 2\nshare = 0.5", "leave `passes` out"),
        ("kind = \"insert\"\nshare = 0.5", "an insert's count sizes the dataset"),
        ("kind = \"get\"\nduration = \"1s\"\nshare = 0.5", "with a duration"),
        ("kind = \"settle\"\nshare = 0.5", "does not apply to a settle phase"),
    ];
    for (phase, why) in bad {
        let text = format!("engines = [\"lmdb\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\n{phase}\n");
        let s: Scenario = toml::from_str(&text).unwrap();
        let err = s.check().unwrap_err();
        assert!(err.contains("share") && err.contains(why), "{phase}: {err}");
    }
}

/// Connections and pipeline depth of server rows (engine options the policy reads).
mod pipelining {
    use super::*;

    fn scenario(extra_phase: &str) -> Scenario {
        let text = format!(
            "engines = [\"redis\"]\n[dataset]\nrecords = 100\n[[phase]]\nkind = \"load\"\n\
             [[phase]]\nkind = \"get\"\n{extra_phase}\n[[phase]]\nkind = \"multi-get\"\nkeys = 10\n"
        );
        toml::from_str(&text).unwrap()
    }

    fn build_with(scenario: &Scenario, options: serde_json::Value) -> Result<JobPlan, String> {
        let tmp = tempfile::tempdir().unwrap();
        let data = dataset::resolve(scenario, tmp.path()).unwrap();
        let v = scenario.all_variants()[0].clone();
        let options = serde_json::from_value(options).unwrap();
        let facts = RowFacts {
            variant: &v,
            options: &options,
            caps: Capabilities { multi_get: true, persistent: true, delete: true, ..Default::default() },
            runtime: "rust",
            server: true,
        };
        build(scenario, &data, &facts)
    }

    fn ops_steps(plan: &JobPlan) -> Vec<&OpsStep> {
        plan.job.steps.iter().filter_map(|st| if let Step::Ops(o) = st { Some(&**o) } else { None }).collect()
    }

    #[test]
    fn only_get_phases_of_a_row_with_connections_and_pipeline_are_pipelined() {
        let plan = build_with(&scenario(""), serde_json::json!({"connections": 8, "pipeline": 16})).unwrap();
        let shapes: Vec<_> = ops_steps(&plan).iter().map(|o| (o.kind, o.connections, o.pipeline)).collect();
        assert_eq!(shapes, [(PhaseKind::Load, 1, 1), (PhaseKind::Get, 8, 16), (PhaseKind::MultiGet, 1, 1)]);
        let get = plan.phases.iter().find(|p| p.name == "get").unwrap();
        assert_eq!(get.unit, "op", "each pipelined GET is a sample of its own");
        assert!(get.notes.iter().any(|n| n.starts_with("pipelined: each thread keeps 16 GETs")), "{:?}", get.notes);
        let mget = plan.phases.iter().find(|p| p.name == "multi-get").unwrap();
        assert!(mget.notes.iter().any(|n| n.contains("one request at a time")), "{:?}", mget.notes);
    }

    #[test]
    fn a_row_without_the_options_keeps_one_request_at_a_time() {
        let unset = build_with(&scenario(""), serde_json::json!({"connections": null, "pipeline": 1})).unwrap();
        assert!(ops_steps(&unset).iter().all(|o| o.connections == 1 && o.pipeline == 1));
        let plan = build_with(&scenario(""), serde_json::json!({})).unwrap();
        assert!(ops_steps(&plan).iter().all(|o| o.connections == 1 && o.pipeline == 1));
        let job = serde_json::to_string(&plan.job).unwrap();
        assert!(!job.contains("\"pipeline\"") && !job.contains("\"connections\""), "absent from the job when 1");
    }

    #[test]
    fn an_open_loop_or_a_bad_count_is_refused_with_the_field() {
        let e = build_with(&scenario("rate = 1000.0"), serde_json::json!({"pipeline": 4})).err().unwrap();
        assert!(e.contains("`rate` paces single requests"), "{e}");
        let e = build_with(&scenario(""), serde_json::json!({"connections": -1})).err().unwrap();
        assert!(e.contains("option `connections` = -1: expected an integer from 0 to 4096"), "{e}");
    }
}

const STOP_RULES: &str = r#"
engines = ["memory"]
[dataset]
records = 100
[[phase]]
kind = "load"
[[phase]]
kind = "get"
duration = "90s"
warmup = 10
writer = { rate = 500 }
[[phase]]
kind = "update"
name = "capped"
count = 7
until = "steady"
[[phase]]
kind = "get"
name = "plain"
"#;

#[test]
fn stop_rules_make_the_count_a_cap_and_steady_has_a_default_cap() {
    let p = plan(STOP_RULES, caps(false, false));
    let get = ops(&p, "get");
    assert_eq!((get.duration_ms, get.steady, get.count), (Some(90_000), None, crate::spec::limits::OPS));
    let capped = ops(&p, "capped");
    let steady = crate::job::Steady { window: crate::scenario::STEADY_WINDOW, within: crate::scenario::STEADY_WITHIN };
    assert_eq!((capped.duration_ms, capped.steady, capped.count), (Some(600_000), Some(steady), 7));
    let plain = ops(&p, "plain");
    assert_eq!((plain.duration_ms, plain.steady, plain.count), (None, None, 100));
    // The untimed warm-up runs its own count, not the phase's duration.
    let warm = p.phases.iter().find(|x| x.name == "get").unwrap().before.last().copied().unwrap();
    let Step::Ops(w) = &p.job.steps[warm] else { panic!("warm-up") };
    assert_eq!((w.count, w.duration_ms, w.writer.is_none()), (10, None, true));
}

#[test]
fn the_writer_runs_on_rust_rows_and_is_said_not_applied_elsewhere() {
    let rust = plan(STOP_RULES, caps(false, false));
    let w = ops(&rust, "get").writer.clone().unwrap();
    assert_eq!((w.rate, w.dist.clone()), (500.0, Dist::Uniform { n: 100 }));
    assert_ne!(w.rec_seed, ops(&rust, "get").rec_seed);
    let go = plan_on(STOP_RULES, caps(false, false), "go");
    assert!(ops(&go, "get").writer.is_none());
    let notes = &go.phases.iter().find(|x| x.name == "get").unwrap().notes;
    assert!(notes.iter().any(|n| n.contains("not applied")), "{notes:?}");
}

const SETTLE: &str = r#"
engines = ["rocksdb"]
[dataset]
records = 100
[[phase]]
kind = "load"
[[phase]]
name = "read-only get"
kind = "get"
open = "read-only"
[[phase]]
kind = "settle"
[[phase]]
kind = "get"
"#;

#[test]
fn a_settle_phase_is_one_settle_step_on_a_read_write_open() {
    let p = plan(SETTLE, caps(true, true));
    let settle = p.phases.iter().find(|x| x.name == "settle").unwrap();
    assert_eq!(settle.kind, "settle");
    assert!(matches!(p.job.steps[settle.main.unwrap()], Step::Settle { stop: false, .. }));
    // The get before it read a read-only open: settle reopens read-write first.
    assert_eq!(kinds_before(&p, "settle"), ["close", "open"]);
    let reopen = settle.before[1];
    assert!(matches!(p.job.steps[reopen], Step::Open { mode: OpenMode::ReadWrite, .. }));
    // The get after it reads the settled store as it is: no reopen, and its ops are the phase's.
    assert!(kinds_before(&p, "get").is_empty());
    assert_eq!(ops(&p, "get").count, 100);
}

#[test]
fn a_settle_phase_is_planned_for_every_engine_and_the_engine_answers() {
    // Not persistent, no read-only open: the policy still plans the step; an engine without
    // settle answers "unsupported" and the phase is N/A (policy::outcome).
    let p = plan(SETTLE, caps(false, true));
    let settle = p.phases.iter().find(|x| x.name == "settle").unwrap();
    assert!(settle.not_applicable.is_none());
    assert!(settle.main.is_some());
}

#[test]
fn a_settle_phase_refuses_fields_that_shape_operations() {
    for (field, toml) in [("threads", "threads = 4"), ("duration", "duration = \"10s\"")] {
        let bad = SETTLE.replace("kind = \"settle\"", &format!("kind = \"settle\"\n{toml}"));
        let s: Scenario = toml::from_str(&bad).unwrap();
        let e = s.check().unwrap_err();
        assert!(e.contains(&format!("phase[3].{field}")) && e.contains("settle phase"), "{e}");
    }
}

#[test]
fn a_rows_threads_and_batch_override_the_phases_they_apply_to() {
    let toml = "[[engine]]\nname = \"lmdb\"\nthreads = 3\nbatch = 50\n[dataset]\nrecords = 100\n\
                [[phase]]\nkind = \"load\"\nbatch = 10\n[[phase]]\nkind = \"get\"\ncount = 90\n";
    let p = plan(toml, caps(true, true));
    assert_eq!(
        (ops(&p, "load").threads, ops(&p, "load").batch),
        (1, 50),
        "the load keeps one thread, takes the row's batch"
    );
    assert_eq!((ops(&p, "get").threads, ops(&p, "get").batch), (3, 1), "reads take the row's threads, not its batch");
}

#[test]
fn a_rows_threads_out_of_range_names_the_field() {
    let s: Scenario = toml::from_str("[[engine]]\nname = \"lmdb\"\nthreads = 0\n[[phase]]\nkind = \"load\"\n").unwrap();
    let e = s.check().unwrap_err();
    assert!(e.contains("engine[1].threads") && e.contains("allowed: 1 to 1024"), "{e}");
}

const SIZE: &str = r#"
engines = ["lmdb"]
[dataset]
records = 100
[[phase]]
kind = "load"
[[phase]]
name = "size-after-load"
kind = "size"
[[phase]]
name = "per-read"
kind = "get"
open_per = "operation"
[[phase]]
name = "get"
kind = "get"
[[phase]]
name = "size-at-end"
kind = "size"
"#;

#[test]
fn a_size_phase_is_the_close_right_after_the_phase_before_it() {
    let p = plan(SIZE, caps(true, true));
    let size = p.phases.iter().find(|x| x.name == "size-after-load").unwrap();
    let load = p.phases.iter().find(|x| x.name == "load").unwrap();
    assert_eq!(size.main, Some(load.main.unwrap() + 1), "nothing runs between the load and the close");
    assert!(matches!(p.job.steps[size.main.unwrap()], Step::Close { stop: true, .. }));
    // The store is closed already: the open-per-read phase sends no second close.
    assert!(kinds_before(&p, "per-read").is_empty());
    // A size phase at the end closed the store: no close after it (a worker refuses a second).
    let closes = p.job.steps.iter().filter(|s| matches!(s, Step::Close { .. })).count();
    assert_eq!(closes, 2, "{:?}", p.job.steps);
    assert!(p.phases.iter().all(|x| x.name != "close"));
}

#[test]
fn a_size_phase_refuses_fields_that_shape_operations() {
    let bad = SIZE.replace(
        "kind = \"size\"\n[[phase]]\nname = \"per-read\"",
        "kind = \"size\"\nbatch = 10\n[[phase]]\nname = \"per-read\"",
    );
    let s: Scenario = toml::from_str(&bad).unwrap();
    let e = s.check().unwrap_err();
    assert!(e.contains("phase[2].batch") && e.contains("size phase"), "{e}");
}

#[test]
fn regression_a_sequential_multi_get_never_asks_for_more_keys_than_there_are_records() {
    // `--ops` replaces `passes` with a count: article 003's bulk read (keys = 1000000) then
    // asked for a million keys of a thousand records in each of its requests.
    let toml = "engines = [\"lmdb\"]\n[dataset]\nrecords = 1000\n[[phase]]\nkind = \"load\"\n\
                [[phase]]\nkind = \"multi-get\"\nname = \"bulk\"\nkeys = 1000000\ncount = 1000\ndistribution = \"sequential\"\n";
    let p = plan(toml, caps(true, true));
    assert_eq!(ops(&p, "bulk").keys_per_request, 1000);
    assert_eq!(ops(&p, "bulk").count, 1_000_000, "1 000 requests of every record");
}

/// A row with a `record` option (redis's) over a dataset with or without fields.
fn record_row(record: &str, fields: bool) -> Result<JobPlan, String> {
    let value = if fields { "{ fields = 10, field_size = 100 }" } else { "{ min = 10, max = 10 }" };
    let text = format!(
        "[dataset]\nrecords = 10\nvalue = {value}\n[[phase]]\nkind = \"load\"\n[[phase]]\nkind = \"scan\"\n\
         count = 2\nlength = 3\n[[engine]]\nname = \"redis\"\n"
    );
    let s: Scenario = toml::from_str(&text).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let data = dataset::resolve(&s, tmp.path()).unwrap();
    let v = s.all_variants()[0].clone();
    let options = BTreeMap::from([("record".to_string(), serde_json::Value::from(record))]);
    let caps = Capabilities { ordered_scan: false, ..caps(true, false) };
    let row = RowFacts { variant: &v, options: &options, caps, runtime: "rust", server: true };
    build(&s, &data, &row)
}

#[test]
fn record_auto_is_a_hash_for_values_with_fields_and_a_hash_scans_its_index() {
    let p = record_row("auto", true).unwrap();
    assert_eq!(p.job.options.get("record").and_then(|v| v.as_str()), Some("hash"));
    assert!(p.phases.iter().find(|x| x.kind == "scan").unwrap().not_applicable.is_none());
    let p = record_row("auto", false).unwrap();
    assert_eq!(p.job.options.get("record").and_then(|v| v.as_str()), Some("blob"));
    let why = p.phases.iter().find(|x| x.kind == "scan").unwrap().not_applicable.clone().unwrap();
    assert!(why.contains("record = \"hash\" has an index"), "{why}");
}

#[test]
fn record_hash_without_fields_is_refused_with_the_fix() {
    let Err(err) = record_row("hash", false) else { panic!("record = hash over plain values was accepted") };
    assert!(err.contains("no fields") && err.contains("record = \"blob\""), "{err}");
}

const REOPEN: &str = r#"
engines = ["lmdb"]
[dataset]
records = 100
[[phase]]
kind = "load"
[[phase]]
kind = "reopen"
[[phase]]
kind = "get"
[[phase]]
kind = "size"
[[phase]]
name = "reopen-after-size"
kind = "reopen"
[[phase]]
name = "g2"
kind = "get"
"#;

#[test]
fn a_reopen_phase_is_a_close_and_a_read_write_open_between_phases() {
    let p = plan(REOPEN, caps(true, true));
    let reopen = p.phases.iter().find(|x| x.name == "reopen").unwrap();
    assert_eq!(kinds_before(&p, "reopen"), ["close"], "the close is a note");
    assert!(matches!(p.job.steps[reopen.main.unwrap()], Step::Open { mode: OpenMode::ReadWrite, stop: true, .. }));
    assert_eq!(reopen.main, Some(ops(&p, "load").index + 2), "nothing runs between the load and the reopen");
    assert!(kinds_before(&p, "get").is_empty(), "the get runs on the reopened store, warm");
    // After a size phase the store is closed: the reopen is the open alone.
    assert!(kinds_before(&p, "reopen-after-size").is_empty());
    assert!(kinds_before(&p, "g2").is_empty());
    let not_persistent = plan(REOPEN, caps(false, false));
    let na = not_persistent.phases.iter().find(|x| x.name == "reopen").unwrap();
    assert!(na.not_applicable.as_deref().is_some_and(|w| w.contains("not persistent")), "{na:?}");
}

#[test]
fn a_reopen_phase_refuses_fields_that_shape_operations() {
    let bad = REOPEN.replacen("kind = \"reopen\"\n", "kind = \"reopen\"\nthreads = 4\n", 1);
    let s: Scenario = toml::from_str(&bad).unwrap();
    let e = s.check().unwrap_err();
    assert!(e.contains("phase[2].threads") && e.contains("reopen phase"), "{e}");
}

/// `batch_bytes` gives a batch of that many bytes of the mean record, rounded up, as Pebble's
/// ycsb commits its load at 1 MiB: 16-byte keys and 48-byte values make 64-byte records, so
/// 1 MiB is 16 384 records, and a byte more one record more.
#[test]
fn batch_bytes_commits_that_many_bytes_of_records_a_batch() {
    let load = |bytes: u64| {
        let toml = format!(
            "engines = [\"lmdb\"]\n[dataset]\nrecords = 100000\nkey = {{ kind = \"decimal\", width = 16 }}\n\
             value = {{ size = 48 }}\n[[phase]]\nkind = \"load\"\nbatch_bytes = {bytes}\n"
        );
        ops(&plan(&toml, caps(true, false)), "load").batch
    };
    assert_eq!(load(1 << 20), 16_384);
    assert_eq!(load((1 << 20) + 1), 16_385);
    assert_eq!(load(1), 1, "a batch holds at least one record");
}

#[test]
fn batch_bytes_is_refused_beside_batch_and_on_phases_without_write_batches() {
    let bad = [
        ("kind = \"insert\"\ncount = 10\nbatch = 10\nbatch_bytes = 1024", "give one"),
        ("kind = \"get\"\nbatch_bytes = 1024", "allowed on load, insert, update and delete"),
        ("kind = \"insert\"\ncount = 10\nbatch_bytes = 0", "out of range (allowed: 1 to 1073741824)"),
    ];
    for (phase, why) in bad {
        let text = format!("engines = [\"lmdb\"]\n[[phase]]\nkind = \"load\"\n[[phase]]\n{phase}\n");
        let s: Scenario = toml::from_str(&text).unwrap();
        let err = s.check().unwrap_err();
        assert!(err.contains("batch_bytes") && err.contains(why), "{phase}: {err}");
    }
}

/// An engine with field-update is handed updates of one field as its own updates; any other
/// engine, or a dataset whose updates write every field, reads and writes back the record.
#[test]
fn field_updates_only_for_an_engine_that_merges_fields_of_a_dataset_that_has_them() {
    let toml = |value: &str| {
        format!(
            "engines = [\"lmdb\"]\n[dataset]\nrecords = 100\nvalue = {value}\n[[phase]]\nkind = \"load\"\n\
             [[phase]]\nname = \"run\"\nkind = \"mixed\"\nmix = {{ read = 50, update = 50 }}\n"
        )
    };
    let one = toml("{ fields = 10, field_size = 100 }");
    let merging = Capabilities { field_update: true, ..caps(true, false) };
    assert!(ops(&plan(&one, merging), "run").field_updates);
    assert!(!ops(&plan(&one, caps(true, false)), "run").field_updates, "an engine that stores values as given");
    let all = toml("{ fields = 10, field_size = 100, write_all_fields = true }");
    assert!(!ops(&plan(&all, merging), "run").field_updates, "every update writes the whole record");
}
