//! The command line over a scenario, in one place beside the scenario model: the base (a file
//! or a named workload), then each flag applied in turn and the scenario checked after each, so
//! an error the flags cause names the flag that caused it (`--records 20000` against a file's
//! `hot_key`, say). The binary parses its flags into [`Flags`] (with [`parse`]'s value parsers)
//! and calls [`build`]; what only the engines' catalog knows, it answers through [`Catalog`].

pub mod parse;
mod vary;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::engine::SyncMode;
use crate::scenario::{self, PhaseDef, RepetitionOrder, Scenario, Variant, Warmup};
use crate::spec::{CacheMode, KeyKind, PhaseKind};

/// The flags that shape a scenario, as values: `run` and `plan` take them alike (`timeout` is a
/// run's alone). `None` and empty lists leave the base as it is.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// The scenario file, as the binary found it; without it, `workload` (or the default).
    pub scenario: Option<PathBuf>,
    pub engines: Option<String>,
    pub records: Option<u64>,
    pub value_size: Option<u32>,
    pub key: Option<KeyKind>,
    pub dataset: Option<String>,
    pub key_column: Option<usize>,
    pub value_column: Option<usize>,
    pub workload: Option<String>,
    pub threads: Option<u32>,
    pub rate: Option<f64>,
    pub ops: Vec<PerPhase<u64>>,
    pub duration: Vec<PerPhase<String>>,
    pub warmup: Vec<PerPhase<Warmup>>,
    /// `ENGINE.OPTION=VALUE`, as written.
    pub options: Vec<String>,
    /// `ENGINE=URL`, as written.
    pub urls: Vec<String>,
    pub batch: Option<u32>,
    pub sync: Option<SyncMode>,
    pub cache: Option<CacheMode>,
    pub seed: Option<u64>,
    pub repetitions: Option<u32>,
    /// `PARAMETER=V1,V2,...`, as written.
    pub vary: Vec<String>,
    pub order: Option<RepetitionOrder>,
    pub memory: Option<String>,
    pub timeout: Option<u64>,
    /// A trace file to replay (`run --trace`): the scenario is its load and its replay.
    pub trace: Option<PathBuf>,
    pub trace_format: Option<String>,
    /// Open-loop speed of the replay phases (the recorded times divided by it).
    pub speed: Option<f64>,
}

/// What the flags need to know of the engines, which the model does not: the binary's catalog
/// answers (the dependency points down, from the binary to the model).
pub trait Catalog {
    /// The rows of the default comparison.
    fn default_engines(&self) -> Vec<String>;
    /// Every available embedded engine: what `--engines all` names.
    fn all_engines(&self) -> Vec<String>;
    /// `options` checked as a scenario's are for `engine`; an engine missing here is left to
    /// the run (its row fails with the reason, as a scenario's does).
    fn check_options(&self, engine: &str, options: &BTreeMap<String, serde_json::Value>) -> Result<(), String>;
    /// Whether `engine` is a server engine (one a `--url` may point at a running server).
    fn is_server(&self, engine: &str) -> bool;
}

/// Records of the default comparison: sized so `make run` takes well under a minute here.
const DEFAULT_RECORDS: u64 = 100_000;

/// `VALUE` for every phase it applies to, or `PHASE=VALUE` for the phase of that name.
#[derive(Debug, Clone, PartialEq)]
pub struct PerPhase<T> {
    pub phase: Option<String>,
    pub value: T,
}

impl<T> PerPhase<T> {
    /// `PHASE=VALUE` or `VALUE`, the value parsed by `parse`.
    pub fn parse(text: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<PerPhase<T>, String> {
        match text.split_once('=') {
            Some((p, v)) if !p.trim().is_empty() => Ok(PerPhase { phase: Some(p.trim().into()), value: parse(v)? }),
            Some(_) => Err(format!("`{text}`: expected VALUE or PHASE=VALUE")),
            None => Ok(PerPhase { phase: None, value: parse(text)? }),
        }
    }
}

/// What one flag does to the scenario.
type Apply<'a> = Box<dyn Fn(&mut Scenario) -> Result<(), String> + 'a>;
/// One flag as the user wrote it, and what it does.
type Step<'a> = (String, Apply<'a>);

/// A flag that cannot fail on its own (the check after it may).
fn set<'a>(change: impl Fn(&mut Scenario) + 'a) -> Apply<'a> {
    Box::new(move |s| {
        change(s);
        Ok(())
    })
}

/// The scenario a command line describes: its base, then every flag in turn, each checked.
pub fn build(flags: &Flags, catalog: &dyn Catalog) -> Result<Scenario, String> {
    let mut s = base_scenario(flags, catalog)?;
    for (flag, apply) in steps(flags, catalog) {
        apply(&mut s).map_err(|e| if e.starts_with(&flag) { e } else { format!("{flag}: {e}") })?;
        s.check().map_err(|e| format!("{e}, because of {flag}"))?;
    }
    s.check()?;
    Ok(s)
}

fn base_scenario(flags: &Flags, catalog: &dyn Catalog) -> Result<Scenario, String> {
    if let Some(t) = &flags.trace {
        return trace_scenario(flags, t, catalog);
    }
    if flags.trace_format.is_some() {
        return Err("--trace-format names the format of a --trace file".into());
    }
    if let Some(p) = &flags.scenario {
        if flags.workload.is_some() {
            return Err("give either a scenario file or --workload, not both".into());
        }
        return Scenario::from_file(p);
    }
    let name = flags.workload.clone().unwrap_or_else(|| "default".into());
    let phases = scenario::workload(&name)?;
    let text = format!("name = {name:?}\nintent = \"kvbench run --workload {name}\"\n");
    let mut s: Scenario = toml::from_str(&text).map_err(|e| e.to_string())?;
    s.phases = phases;
    s.dataset.records = DEFAULT_RECORDS;
    // The quick comparison does not force data to disk (as db_bench's default): with durable
    // commits, Tokyo and Kyoto Cabinet alone take seconds per commit. Every table says
    // `sync = none`; `--sync commit` measures durable commits.
    s.sync = SyncMode::None;
    s.engines = catalog.default_engines();
    s.timeout = 600;
    Ok(s)
}

/// `run --trace FILE`: the default rows load the keys the trace reads before it writes them,
/// then replay it.
fn trace_scenario(flags: &Flags, trace: &std::path::Path, catalog: &dyn Catalog) -> Result<Scenario, String> {
    if flags.scenario.is_some() || flags.workload.is_some() {
        return Err("--trace replays a trace as the whole workload: give no scenario file or --workload".into());
    }
    if flags.records.is_some() || flags.dataset.is_some() || flags.value_size.is_some() || flags.key.is_some() {
        return Err("--trace: the trace's keys and value sizes are the dataset (--records, --dataset, \
                    --value-size and --key do not apply)"
            .into());
    }
    let stem = trace.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "trace".into());
    let text = format!(
        "name = {:?}\nintent = {:?}\n",
        format!("trace-{stem}"),
        format!("kvbench run --trace {}", trace.display())
    );
    let mut s: Scenario = toml::from_str(&text).map_err(|e| e.to_string())?;
    let mut load = PhaseDef::new(PhaseKind::Load);
    load.distribution = Some(crate::spec::Distribution::Sequential);
    let mut replay = PhaseDef::new(PhaseKind::Replay);
    replay.trace = Some(trace.display().to_string());
    replay.trace_format = flags.trace_format.clone();
    s.phases = vec![load, replay];
    s.sync = SyncMode::None;
    s.engines = catalog.default_engines();
    s.timeout = 600;
    Ok(s)
}

/// Every flag given, in the order they apply: rows, data, then phases and run settings.
fn steps<'a>(flags: &'a Flags, catalog: &'a dyn Catalog) -> Vec<Step<'a>> {
    let mut v: Vec<Step> = Vec::new();
    if let Some(list) = &flags.engines {
        v.push((format!("--engines {list}"), set(move |s| keep_engines(s, &expand_all(list, catalog)))));
    }
    for o in &flags.options {
        v.push((format!("--set {o}"), Box::new(move |s| engine_option(s, o, catalog))));
    }
    for u in &flags.urls {
        v.push((format!("--url {u}"), Box::new(move |s| engine_url(s, u, catalog))));
    }
    dataset_steps(flags, &mut v);
    phase_steps(flags, &mut v);
    per_phase_steps(flags, &mut v);
    run_steps(flags, &mut v);
    // Last: a varied memory or sync wins over the flags that set every row's (its errors name
    // the --vary).
    if !flags.vary.is_empty() {
        v.push((format!("--vary {}", flags.vary.join(" --vary ")), Box::new(move |s| vary::apply(s, &flags.vary))));
    }
    if let Some(x) = flags.timeout {
        v.push((
            format!("--timeout {x}"),
            set(move |s| {
                s.timeout = x;
                s.timeout_fixed = true;
            }),
        ));
    }
    v
}

/// `--engines` with `all` replaced by every available embedded engine.
fn expand_all(list: &str, catalog: &dyn Catalog) -> String {
    let names: Vec<String> = list
        .split(',')
        .map(str::trim)
        .flat_map(|x| if x == "all" { catalog.all_engines() } else { vec![x.to_string()] })
        .collect();
    names.join(",")
}

/// `--engines`: the rows named (a scenario's variants by name or label, else a plain row).
fn keep_engines(scenario: &mut Scenario, list: &str) {
    let wanted: Vec<String> = list.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
    let all = scenario.all_variants();
    let mut kept = Vec::new();
    for w in &wanted {
        let matched: Vec<_> = all.iter().filter(|v| &v.name == w || &v.label() == w).cloned().collect();
        if matched.is_empty() {
            kept.push(Variant { name: w.clone(), ..Default::default() });
        } else {
            kept.extend(matched);
        }
    }
    scenario.engines.clear();
    scenario.variants = kept;
    // A ratio between rows that were filtered out has nothing to compare.
    let labels: Vec<String> = scenario.variants.iter().map(|v| v.label()).collect();
    scenario.ratios.retain(|r| labels.contains(&r.numerator) && labels.contains(&r.denominator));
}

/// The rows named `who` (by engine name or label), every row as a variant so it can be changed.
fn rows_named<'s>(scenario: &'s mut Scenario, who: &str) -> Result<Vec<&'s mut Variant>, String> {
    scenario.variants = scenario.all_variants();
    scenario.engines.clear();
    let labels: Vec<String> = scenario.variants.iter().map(Variant::label).collect();
    let rows: Vec<&mut Variant> = scenario.variants.iter_mut().filter(|v| v.name == who || v.label() == who).collect();
    if rows.is_empty() {
        return Err(format!("no row is engine or label `{who}` (rows: {})", labels.join(", ")));
    }
    Ok(rows)
}

/// `-o ENGINE.OPTION=VALUE`: the option on every row of that engine (or label), its value read
/// as TOML (`64MiB` and other words as strings) and checked against the engine's options.
fn engine_option(scenario: &mut Scenario, text: &str, catalog: &dyn Catalog) -> Result<(), String> {
    let parsed =
        text.split_once('=').and_then(|(k, v)| row_and_option(scenario, k).map(|(e, o)| (e.trim(), o.trim(), v)));
    let Some((who, option, value)) = parsed.filter(|(e, o, _)| !e.is_empty() && !o.is_empty()) else {
        return Err("expected ENGINE.OPTION=VALUE (e.g. rocksdb.compression=zstd)".into());
    };
    let value = toml_value(value);
    for row in rows_named(scenario, who)? {
        let mut options = row.options.clone();
        options.insert(option.to_string(), value.clone());
        catalog.check_options(&row.name, &options)?;
        row.options = options;
    }
    Ok(())
}

/// `ENGINE.OPTION` split at its last dot, or at an earlier one where only that names a row: an
/// engine name may hold dots (`ycsb:site.ycsb.db.rocksdb.RocksDBClient.rocksdb.dir`), as may a
/// YCSB binding's property.
fn row_and_option<'k>(scenario: &Scenario, key: &'k str) -> Option<(&'k str, &'k str)> {
    let rows = scenario.all_variants();
    let names_row = |who: &str| rows.iter().any(|v| v.name == who.trim() || v.label() == who.trim());
    let split = |i: usize| (&key[..i], &key[i + 1..]);
    let mut dots = key.rmatch_indices('.').map(|(i, _)| i);
    let last = dots.clone().next()?;
    Some(split(dots.find(|&i| names_row(&key[..i])).unwrap_or(last)))
}

/// A flag's value as TOML reads it (number, boolean, quoted string), else the text itself.
fn toml_value(text: &str) -> serde_json::Value {
    let t = text.trim();
    toml::from_str::<BTreeMap<String, serde_json::Value>>(&format!("v = {t}"))
        .ok()
        .and_then(|mut m| m.remove("v"))
        .unwrap_or_else(|| serde_json::Value::String(t.to_string()))
}

/// `--url ENGINE=URL`: the rows of a server engine use a running server instead of starting one.
fn engine_url(scenario: &mut Scenario, text: &str, catalog: &dyn Catalog) -> Result<(), String> {
    let Some((who, url)) = text.split_once('=').filter(|(w, u)| !w.trim().is_empty() && !u.trim().is_empty()) else {
        return Err("expected ENGINE=URL (e.g. redis=redis://127.0.0.1:6379)".into());
    };
    for row in rows_named(scenario, who.trim())? {
        if !catalog.is_server(&row.name) {
            return Err(format!("{} is not a server engine: a URL applies to server engines only", row.name));
        }
        row.url = Some(url.trim().to_string());
    }
    Ok(())
}

fn dataset_steps<'a>(flags: &'a Flags, steps: &mut Vec<Step<'a>>) {
    if let Some(n) = flags.records {
        steps.push((format!("--records {n}"), set(move |s| s.dataset.records = n)));
    }
    if let Some(n) = flags.value_size {
        steps.push((
            format!("--value-size {n}"),
            Box::new(move |s| {
                (s.dataset.value.size, s.dataset.value.min, s.dataset.value.max) = (Some(n), None, None);
                Ok(())
            }),
        ));
    }
    if let Some(k) = flags.key {
        steps.push((format!("--key {}", key_name(k)), set(move |s| s.dataset.key.kind = k)));
    }
    if let Some(d) = &flags.dataset {
        steps.push((format!("--dataset {d}"), set(move |s| set_dataset(s, d))));
    }
    if let Some(c) = flags.key_column {
        steps.push((format!("--key-column {c}"), set(move |s| s.dataset.key_column = Some(c))));
    }
    if let Some(c) = flags.value_column {
        steps.push((format!("--value-column {c}"), set(move |s| s.dataset.value_column = Some(c))));
    }
}

fn key_name(kind: KeyKind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

fn set_dataset(scenario: &mut Scenario, dataset: &str) {
    if dataset.starts_with("file:") || dataset.starts_with("dir:") {
        (scenario.dataset.source, scenario.dataset.generator) = (Some(dataset.to_string()), None);
    } else {
        (scenario.dataset.generator, scenario.dataset.source) = (Some(dataset.to_string()), None);
    }
}

/// The phases after the load that run operations (settle and size phases run none).
fn timed(scenario: &mut Scenario) -> impl Iterator<Item = &mut PhaseDef> {
    scenario.phases.iter_mut().filter(|p| p.kind.runs_after_load())
}

/// --threads, --rate and --cache apply to every phase after the load (mixed and writing
/// phases included: reads stay verified on every thread) but settle phases; --batch to the load.
fn phase_steps<'a>(flags: &'a Flags, steps: &mut Vec<Step<'a>>) {
    if let Some(t) = flags.threads {
        steps.push((format!("--threads {t}"), set(move |s| timed(s).for_each(|p| p.threads = Some(t)))));
    }
    if let Some(r) = flags.rate {
        steps.push((format!("--rate {r}"), set(move |s| timed(s).for_each(|p| p.rate = Some(r)))));
    }
    if let Some(x) = flags.speed {
        steps.push((format!("--speed {x}"), Box::new(move |s| set_speed(s, x))));
    }
    if let Some(c) = flags.cache {
        let name = serde_json::to_value(c).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        steps.push((format!("--cache {name}"), set(move |s| timed(s).for_each(|p| p.cache = c))));
    }
    if let Some(b) = flags.batch {
        let load = move |s: &mut Scenario| {
            s.phases.iter_mut().filter(|p| p.kind == PhaseKind::Load).for_each(|p| p.batch = Some(b));
            Ok(())
        };
        steps.push((format!("--batch {b}"), Box::new(load)));
    }
}

/// `--speed`: every replay phase's.
fn set_speed(scenario: &mut Scenario, speed: f64) -> Result<(), String> {
    let mut replays = scenario.phases.iter_mut().filter(|p| p.kind == PhaseKind::Replay).peekable();
    if replays.peek().is_none() {
        return Err("applies to replay phases (a --trace, or kind = \"replay\"); this scenario has none".into());
    }
    replays.for_each(|p| p.speed = Some(speed));
    Ok(())
}

/// --ops, --duration and --warmup: every phase they apply to, or `PHASE=` one.
fn per_phase_steps<'a>(flags: &'a Flags, steps: &mut Vec<Step<'a>>) {
    for o in &flags.ops {
        steps.push((flag_text("--ops", o, o.value), Box::new(move |s| set_ops(s, o))));
    }
    for d in &flags.duration {
        steps.push((flag_text("--duration", d, &d.value), Box::new(move |s| set_duration(s, d))));
    }
    for w in &flags.warmup {
        let shown = match &w.value {
            Warmup::Ops(n) => n.to_string(),
            Warmup::For(d) => d.clone(),
        };
        steps.push((flag_text("--warmup", w, shown), Box::new(move |s| set_warmup(s, w))));
    }
}

fn flag_text<T>(flag: &str, per_phase: &PerPhase<T>, shown: impl std::fmt::Display) -> String {
    match &per_phase.phase {
        Some(name) => format!("{flag} {name}={shown}"),
        None => format!("{flag} {shown}"),
    }
}

/// The phase called `name`; the error lists the names there are.
fn phase_named<'s>(scenario: &'s mut Scenario, name: &str) -> Result<&'s mut PhaseDef, String> {
    let names: Vec<String> = (0..scenario.phases.len()).map(|i| scenario.phase_name(i)).collect();
    match names.iter().position(|n| n == name) {
        Some(i) => Ok(&mut scenario.phases[i]),
        None => Err(format!("no phase named `{name}` (phases: {})", names.join(", "))),
    }
}

/// `--ops N`: the count of every phase after the load (a phase's `passes` or `share` replaced):
/// requests of a multi-get, scans of a scan phase's length. A full-scan phase stays one scan
/// unless named (`--ops scan=N`).
fn set_ops(scenario: &mut Scenario, ops: &PerPhase<u64>) -> Result<(), String> {
    let set = |p: &mut PhaseDef| (p.count, p.passes, p.share) = (Some(ops.value), None, None);
    match &ops.phase {
        None => timed(scenario).filter(|p| !p.full_scan()).for_each(set),
        Some(name) => {
            let p = phase_named(scenario, name)?;
            match p.kind {
                PhaseKind::Load => return Err("a load writes every record once: its size is --records".into()),
                k if !k.runs_ops() => return Err(format!("a {} phase runs no operations", k.as_str())),
                _ => set(p),
            }
        }
    }
    Ok(())
}

/// `--duration S`: every phase after the load that does not insert (an insert count sizes the
/// dataset); `PHASE=S` names one, and a phase that cannot run for a duration is an error.
fn set_duration(scenario: &mut Scenario, duration: &PerPhase<String>) -> Result<(), String> {
    let set = |p: &mut PhaseDef| (p.duration, p.passes, p.share) = (Some(duration.value.clone()), None, None);
    match &duration.phase {
        None => timed(scenario).filter(|p| !p.inserts()).for_each(set),
        Some(name) => set(phase_named(scenario, name)?),
    }
    Ok(())
}

/// `--warmup N|S`: every read phase (get, multi-get, scans of a length), or `PHASE=` one; as
/// with `--ops`, a full-scan phase is left alone unless named.
fn set_warmup(scenario: &mut Scenario, warmup: &PerPhase<Warmup>) -> Result<(), String> {
    let set = |p: &mut PhaseDef| p.warmup = Some(warmup.value.clone());
    match &warmup.phase {
        None => timed(scenario).filter(|p| !p.kind.may_write() && !p.full_scan()).for_each(set),
        Some(name) => set(phase_named(scenario, name)?),
    }
    Ok(())
}

fn run_steps<'a>(flags: &'a Flags, steps: &mut Vec<Step<'a>>) {
    if let Some(x) = flags.sync {
        let name = serde_json::to_value(x).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        steps.push((format!("--sync {name}"), set(move |s| s.sync = x)));
    }
    if let Some(x) = flags.seed {
        steps.push((format!("--seed {x}"), set(move |s| s.seed = x)));
    }
    if let Some(x) = flags.repetitions {
        steps.push((format!("--repetitions {x}"), set(move |s| s.repetitions = x)));
    }
    if let Some(x) = flags.order {
        let name = serde_json::to_value(x).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        steps.push((format!("--order {name}"), set(move |s| s.order = x)));
    }
    if let Some(m) = &flags.memory {
        // The flag bounds every row, the scenario's own per-row budgets included.
        let set = move |s: &mut Scenario| {
            s.memory = Some(m.clone());
            s.variants.iter_mut().for_each(|v| v.memory = None);
            Ok(())
        };
        steps.push((format!("--memory {m}"), Box::new(set)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two engines in the default comparison, three in all.
    struct Three;

    impl Catalog for Three {
        fn default_engines(&self) -> Vec<String> {
            vec!["lmdb".into(), "rocksdb".into()]
        }
        fn all_engines(&self) -> Vec<String> {
            vec!["lmdb".into(), "rocksdb".into(), "qdbm-villa".into()]
        }
        fn check_options(&self, _: &str, _: &BTreeMap<String, serde_json::Value>) -> Result<(), String> {
            Ok(())
        }
        fn is_server(&self, _: &str) -> bool {
            false
        }
    }

    fn rows(engines: Option<&str>) -> Vec<String> {
        let flags = Flags { engines: engines.map(String::from), ..Default::default() };
        build(&flags, &Three).unwrap().all_variants().iter().map(|v| v.label()).collect()
    }

    #[test]
    fn engines_all_names_every_available_engine_and_the_default_is_the_representative_set() {
        assert_eq!(rows(None), ["lmdb", "rocksdb"]);
        assert_eq!(rows(Some("all")), ["lmdb", "rocksdb", "qdbm-villa"]);
        assert_eq!(rows(Some("sqlite,all")), ["sqlite", "lmdb", "rocksdb", "qdbm-villa"]);
    }

    #[test]
    fn an_option_of_an_engine_whose_name_holds_dots_goes_to_that_row() {
        let binding = "ycsb:site.ycsb.db.rocksdb.RocksDBClient";
        let flags = Flags {
            engines: Some(format!("{binding},rocksdb")),
            options: vec![format!("{binding}.rocksdb.dir=/tmp/x"), "rocksdb.compression=zstd".into()],
            ..Default::default()
        };
        let s = build(&flags, &Three).unwrap();
        let v = s.all_variants();
        assert_eq!(v[0].name, binding);
        assert_eq!(v[0].options.get("rocksdb.dir"), Some(&serde_json::json!("/tmp/x")), "{:?}", v[0].options);
        assert_eq!(v[1].options.get("compression"), Some(&serde_json::json!("zstd")));
        let flags = Flags { options: vec!["ycsb:no.Such.dir=1".into()], ..flags };
        let e = build(&flags, &Three).unwrap_err();
        assert!(e.contains("no row is engine or label `ycsb:no.Such`"), "{e}");
    }
}
