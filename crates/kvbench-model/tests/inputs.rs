//! Hostile input: every number a scenario gives is bounded, with an error naming the file, the
//! line, the field and the allowed range; the scenario parser and the result reader never panic
//! on any input (property tests, bounded in cases so the whole file runs in seconds). The plan
//! file reader's test is kvbench-policy's `tests/plan_file_input.rs` (the policy stores its
//! sample plan).

use std::path::{Path, PathBuf};

use kvbench_model::result::RunResult;
use kvbench_model::scenario::Scenario;
use proptest::prelude::*;

fn write(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("s.toml");
    std::fs::write(&p, body).unwrap();
    p
}

/// A scenario that is valid except for `extra` lines added to its only phase or dataset.
fn scenario_err(dataset: &str, phase: &str, top: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let records = if dataset.contains("records") { "" } else { "records = 100\n" };
    let body = format!(
        "# test\n{top}\nengines = [\"memory\"]\n\n[dataset]\n{records}{dataset}\n\n[[phase]]\nkind = \"load\"\n{phase}\n"
    );
    let p = write(tmp.path(), &body);
    Scenario::from_file(&p).expect_err("must be refused")
}

fn assert_names(err: &str, line: usize, field: &str, range: &str) {
    assert!(err.contains("s.toml"), "file: {err}");
    assert!(err.contains(&format!("line {line}:")), "line {line}: {err}");
    assert!(err.contains(field), "field {field}: {err}");
    assert!(err.contains(range), "range {range}: {err}");
}

#[test]
fn regression_zipf_inf() {
    // Spun forever in plan generation.
    let e = scenario_err("", "distribution = \"zipfian\"\nzipf_exponent = inf", "");
    assert_names(&e, 12, "phase[1].zipf_exponent", "a number > 0 and < 1");
    let e = scenario_err("", "zipf_exponent = nan", "");
    assert_names(&e, 11, "zipf_exponent", "a number > 0 and < 1");
    assert!(scenario_err("", "zipf_exponent = 0.0", "").contains("> 0"));
    // The generator takes (0, 1): 1 and above failed the row instead of the scenario.
    assert_names(&scenario_err("", "zipf_exponent = 1.0", ""), 11, "zipf_exponent", "< 1");
}

#[test]
fn regression_decimal_width() {
    // Panicked in the key generator.
    let e = scenario_err("key = { kind = \"decimal\", width = 100000 }", "", "");
    assert_names(&e, 7, "dataset.key.width", "allowed: 0 to 64");
}

#[test]
fn regression_huge_timeout() {
    // Overflowed Instant (a panic that leaked memcached).
    let e = scenario_err("", "", "timeout = 9223372036854775807");
    assert_names(&e, 2, "timeout", "allowed: 1 to 604800");
}

#[test]
fn regression_huge_value() {
    // Aborted on allocation.
    let e = scenario_err("value = { size = 4000000000 }", "", "");
    assert_names(&e, 7, "dataset.value.size", "allowed: 0 to 67108864");
    let e = scenario_err("[dataset.value]\nmin = 1\nmax = 100000000", "", "");
    assert_names(&e, 9, "dataset.value.max", "67108864");
}

#[test]
fn regression_huge_batch() {
    // Aborted on allocation.
    let e = scenario_err("", "batch = 4294967295", "");
    assert_names(&e, 11, "phase[1].batch", "allowed: 1 to 1000000");
}

#[test]
fn threads_counts_and_rates_are_bounded() {
    assert_names(&scenario_err("", "threads = 0", ""), 11, "threads", "1 to 1024");
    assert_names(&scenario_err("", "threads = 100000", ""), 11, "threads", "1 to 1024");
    assert_names(&scenario_err("", "count = 0", ""), 11, "count", "allowed: 1 to");
    assert_names(&scenario_err("records = 0", "", ""), 6, "dataset.records", "allowed: 1 to");
    assert_names(&scenario_err("", "hot_key = 100", ""), 11, "hot_key", "0 to 99");
    assert_names(&scenario_err("", "", "repetitions = 0"), 2, "repetitions", "1 to 1000");
    let e = scenario_err("", "", "name = \"a\\u0007b\"");
    assert!(e.contains("name") && e.contains("control"), "{e}");
}

#[test]
fn every_shipped_scenario_is_within_bounds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut n = 0;
    for dir in [root.clone(), root.join("ci")] {
        for f in std::fs::read_dir(&dir).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "toml") {
                Scenario::from_file(&f.path()).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
    }
    assert!(n >= 10, "found {n} scenarios");
}

/// Values of every TOML type, including the troublesome ones.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        prop_oneof![Just(0i64), Just(1), Just(-1), Just(u32::MAX as i64), Just(i64::MAX)].prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        prop_oneof![Just("inf"), Just("-inf"), Just("nan"), Just("1e308"), Just("0.0")].prop_map(String::from),
        "[a-z/._ -]{0,12}".prop_map(|s| format!("{s:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        Just("[]".to_string()),
        Just("{ size = 5 }".to_string()),
    ]
}

const TOP: &[&str] = &["name", "seed", "timeout", "repetitions", "sync", "engines"];
const DATASET: &[&str] = &["records", "key", "value", "generator"];
const PHASE: &[&str] = &[
    "name",
    "kind",
    "count",
    "distribution",
    "keys",
    "length",
    "hot_key",
    "zipf_exponent",
    "batch",
    "threads",
    "rate",
    "open_per",
    "mix",
];

fn lines(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(keys), toml_value()), 0..5).prop_map(|kv| {
        let mut seen = std::collections::BTreeSet::new();
        kv.into_iter().filter(|(k, _)| seen.insert(*k)).map(|(k, v)| format!("{k} = {v}\n")).collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any mix of fields and values: parsed or refused with a message, never a panic; what
    /// is accepted is within bounds.
    #[test]
    fn the_scenario_parser_never_panics(top in lines(TOP), ds in lines(DATASET), ph in lines(PHASE)) {
        let tmp = tempfile::tempdir().unwrap();
        let body = format!("engines = [\"memory\"]\n{top}\n[dataset]\n{ds}\n[[phase]]\nkind = \"load\"\n{ph}");
        let body = body.replacen("engines = [\"memory\"]\n", "", usize::from(top.contains("engines")));
        let p = write(tmp.path(), &body);
        match Scenario::from_file(&p) {
            Ok(s) => {
                prop_assert!(s.check().is_ok());
                prop_assert!(s.timeout <= 7 * 24 * 3600);
                prop_assert!(s.phases.iter().all(|p| p.zipf_exponent.is_none_or(|z| z.is_finite() && z > 0.0)));
                prop_assert!(s.dataset.key.width <= 64);
            }
            Err(e) => prop_assert!(e.contains("s.toml") && !e.is_empty()),
        }
    }

    /// Arbitrary bytes as a scenario file.
    #[test]
    fn arbitrary_scenario_text_never_panics(text in ".{0,200}") {
        let tmp = tempfile::tempdir().unwrap();
        let p = write(tmp.path(), &text);
        let _ = Scenario::from_file(&p);
    }

    /// Arbitrary text, and a real result with one byte changed, through the result reader.
    #[test]
    fn the_result_reader_never_panics(text in ".{0,200}", at in any::<prop::sample::Index>(), b in any::<u8>()) {
        let _ = RunResult::from_json(&text);
        let mut good = sample_result().into_bytes();
        let i = at.index(good.len());
        good[i] = b;
        let _ = RunResult::from_json(&String::from_utf8_lossy(&good));
    }
}

/// A valid result file with a row of each status (the reader must accept it before the
/// mutations mean anything).
fn sample_result() -> String {
    use kvbench_model::result::{EngineResult, PhaseResult, Status};
    let row = |status| EngineResult {
        label: format!("{status:?}"),
        status,
        phases: vec![PhaseResult { name: "load".into(), ..Default::default() }],
        ..Default::default()
    };
    let r = RunResult {
        schema: kvbench_model::result::SCHEMA.into(),
        engines: [Status::Ok, Status::Failed, Status::NotApplicable, Status::Interrupted].map(row).to_vec(),
        ..Default::default()
    };
    serde_json::to_string(&r).unwrap()
}

#[test]
fn the_sample_result_is_read_with_every_status() {
    let r = RunResult::from_json(&sample_result()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.engines[3].status, kvbench_model::result::Status::Interrupted);
    assert!(sample_result().contains("\"interrupted\""));
}
