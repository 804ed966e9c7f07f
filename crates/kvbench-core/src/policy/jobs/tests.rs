//! Decisions of the job builder that the article scenarios rely on.

use std::path::Path;

use super::*;
use crate::policy::dataset;

fn caps(persistent: bool, read_only: bool) -> Capabilities {
    Capabilities { persistent, read_only_open: read_only, batch: true, ..Default::default() }
}

fn plan(toml: &str, caps: Capabilities) -> JobPlan {
    let s: Scenario = toml::from_str(toml).unwrap();
    s.check().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let data = dataset::resolve(&s, tmp.path()).unwrap();
    let v = s.all_variants()[0].clone();
    let row = RowFacts {
        variant: &v,
        caps,
        runtime: "rust",
        dir: Path::new("/nonexistent"),
        url: None,
        token: None,
        sync: s.sync,
    };
    build(&s, &data, &row).unwrap()
}

fn kinds_before(p: &JobPlan, phase: &str) -> Vec<&'static str> {
    let ph = p.phases.iter().find(|x| x.name == phase).unwrap();
    ph.before
        .iter()
        .map(|&i| match &p.job.steps[i] {
            Step::Open { .. } => "open",
            Step::Close { .. } => "close",
            Step::Evict { .. } => "evict",
            Step::Prepare { .. } => "prepare",
            Step::Ops(_) => "ops",
        })
        .collect()
}

fn ops<'a>(p: &'a JobPlan, phase: &str) -> &'a OpsStep {
    let main = p.phases.iter().find(|x| x.name == phase).unwrap().main.unwrap();
    match &p.job.steps[main] {
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
        ("name = \"l2\"\nkind = \"load\"\npasses = 2", "passes"),
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
