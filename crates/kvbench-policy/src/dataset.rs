//! The dataset as every worker derives it (docs/plan-format.md): shapes, seeds, the record
//! space including inserts, and the plan file where something must be stored.

use std::path::{Path, PathBuf};

use crate::derive;
use crate::job::{Dataset, Generator, KeyShape, ValueShape};
use crate::planfile::{self, LoadOrder, PlanFile, PlanId};
use crate::result::PlanInfo;
use crate::scenario::Scenario;
use crate::spec::{KeyKind, Mix, PhaseKind};

/// Stream ids of docs/plan-format.md: phase p's seeds are `stream(seed, base + p)`.
pub const PHASE_SEED_BASE: u64 = 0x1000;

pub struct Seeds {
    pub rec: u64,
    pub kind: u64,
    pub len: u64,
    pub perm: u64,
}

pub fn phase_seeds(seed: u64, phase: u64) -> Seeds {
    Seeds {
        rec: derive::stream(seed, 0x1000 + phase),
        kind: derive::stream(seed, 0x2000 + phase),
        len: derive::stream(seed, 0x3000 + phase),
        perm: derive::stream(seed, 0x4000 + phase),
    }
}

/// A scenario's data, resolved once per run and shared by every row.
pub struct ResolvedData {
    pub dataset: Dataset,
    pub plan: Option<PathBuf>,
    /// Sorted positions a scan can start at.
    pub positions: u64,
    /// Raw bytes of the loaded records' keys and values.
    pub raw_bytes: u64,
    /// Per phase: records inserted before it (phase 0 = load).
    inserted_before: Vec<u64>,
    /// A note for the run (plan built or reused, sizes).
    pub note: String,
    /// The replay phase's stream, when the scenario has one (its keys are the dataset).
    pub replay: Option<crate::replay::ReplayData>,
    /// A replay's plan file is the run's own: removed when the run's data is dropped.
    _owned_plan: Option<OwnedPlan>,
}

/// A plan file removed on drop.
struct OwnedPlan(PathBuf);

impl Drop for OwnedPlan {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl ResolvedData {
    /// What a run's result says of its data: the plan's id and seed, the records, how long
    /// planning took (`generation_ns`) and whether a stored plan was reused.
    pub fn info(&self, scenario: &Scenario, generation_ns: u64) -> PlanInfo {
        PlanInfo {
            hash: plan_id(scenario),
            seed: scenario.seed,
            records: self.dataset.loaded,
            unique_records: self.positions.min(self.dataset.loaded),
            raw_bytes: self.raw_bytes,
            generation_ns,
            reused: self.plan.is_none(),
            trace: self.replay.as_ref().map(|r| r.info.clone()),
        }
    }

    pub fn existing_before(&self, phase: usize) -> u64 {
        self.dataset.loaded + self.inserted_before.get(phase).copied().unwrap_or(0)
    }

    pub fn insert_base(&self, phase: usize) -> u64 {
        self.existing_before(phase)
    }
}

/// Mixed phases' kinds and thresholds, in a fixed kind order.
pub fn mix_kinds(mix: &Mix) -> anyhow::Result<(Vec<PhaseKind>, Vec<u64>)> {
    let parts = [
        (PhaseKind::Get, mix.read),
        (PhaseKind::Update, mix.update),
        (PhaseKind::Insert, mix.insert),
        (PhaseKind::Scan, mix.scan),
        (PhaseKind::Rmw, mix.rmw),
        (PhaseKind::Delete, mix.delete),
    ];
    let used: Vec<(PhaseKind, f64)> = parts.into_iter().filter(|(_, f)| *f > 0.0).collect();
    let fractions: Vec<f64> = used.iter().map(|(_, f)| *f).collect();
    Ok((used.into_iter().map(|(k, _)| k).collect(), derive::thresholds(&fractions)?))
}

/// The kind of a mixed phase's op from its `draw` (docs/plan-format.md, "Kind").
pub fn pick_kind(kinds: &[PhaseKind], thresholds: &[u64], draw: u64) -> PhaseKind {
    let i = thresholds.iter().position(|&t| draw < t).unwrap_or(kinds.len().saturating_sub(1));
    kinds.get(i).copied().unwrap_or(PhaseKind::Get)
}

fn key_shape(scenario: &Scenario) -> KeyShape {
    KeyShape { kind: scenario.dataset.key.kind, width: scenario.dataset.key.width }
}

fn generator(scenario: &Scenario) -> Generator {
    if scenario.dataset.source.is_some() {
        return Generator::Stored;
    }
    match scenario.dataset.generator.as_deref() {
        None | Some("synthetic") => Generator::Synthetic,
        Some("json-docs") => Generator::JsonDocs,
        _ => Generator::Stored,
    }
}

/// Inserts each phase makes, exactly (mixed phases: counted from the kind stream).
fn inserts_per_phase(scenario: &Scenario, loaded: u64) -> anyhow::Result<Vec<u64>> {
    let mut out = Vec::new();
    let mut existing = loaded;
    for (i, p) in scenario.phases.iter().enumerate() {
        let spec = p.ops_spec();
        let n = match p.kind {
            PhaseKind::Insert => spec.count.unwrap_or(loaded),
            PhaseKind::Mixed if spec.mix.insert > 0.0 => {
                let (kinds, thr) = mix_kinds(&spec.mix)?;
                let seed = phase_seeds(scenario.seed, i as u64).kind;
                let count = spec.count.unwrap_or(existing);
                (0..count).filter(|&k| pick_kind(&kinds, &thr, derive::rnd(seed, k)) == PhaseKind::Insert).count()
                    as u64
            }
            _ => 0,
        };
        out.push(n);
        existing += n;
    }
    Ok(out)
}

fn scans(scenario: &Scenario) -> bool {
    scenario
        .phases
        .iter()
        .any(|p| p.kind == PhaseKind::Scan || p.kind == PhaseKind::Mixed && p.ops_spec().mix.scan > 0.0)
}

fn ordered(kind: KeyKind, width: u32, total: u64) -> bool {
    match kind {
        KeyKind::U32be | KeyKind::U64be | KeyKind::DbBench => true,
        KeyKind::Decimal => width >= 20 || 10u64.checked_pow(width).is_some_and(|p| total <= p),
        KeyKind::Ycsb | KeyKind::Random => false,
    }
}

/// Resolve the scenario's dataset; builds (or reuses) a plan file only where data must be stored.
pub fn resolve(scenario: &Scenario, plan_dir: &Path) -> anyhow::Result<ResolvedData> {
    resolve_guarded(scenario, plan_dir, None)
}

/// As [`resolve`], and with `data_dir` the size guard runs before anything large is written:
/// the run is refused when its plan file and store would not fit (docs/methodology.md).
pub fn resolve_guarded(scenario: &Scenario, plan_dir: &Path, data_dir: Option<&Path>) -> anyhow::Result<ResolvedData> {
    if let Some((i, p)) = scenario.replay_phase() {
        return resolve_replay(scenario, i, p, plan_dir);
    }
    let gen = generator(scenario);
    let key = key_shape(scenario);
    let (min, max) = match gen {
        Generator::JsonDocs => (scenario.dataset.value.min.unwrap_or(0), scenario.dataset.value.max.unwrap_or(2000)),
        _ => scenario.dataset.value.range().map_err(|e| anyhow::anyhow!("dataset: {e}"))?,
    };
    let v = &scenario.dataset.value;
    if v.fields.is_some() && gen != Generator::Synthetic {
        anyhow::bail!("dataset.value.fields: fields are for generated values (generator synthetic)");
    }
    let (fields, write_all_fields) = (v.fields.unwrap_or(0), v.write_all_fields.unwrap_or(false));
    let value = ValueShape { min, max, content: v.content, fields, write_all_fields };
    let seed = scenario.seed;
    let mut dataset = Dataset {
        generator: gen,
        key,
        value,
        loaded: scenario.dataset.records,
        total: scenario.dataset.records,
        ordered: false,
        pool_seed: derive::stream(seed, 1),
        value_seed: derive::stream(seed, 2),
        open_records: 0,
        open_bytes: 0,
    };
    let mut plan = None;
    let mut positions = 0;
    let mut raw_bytes = 0;
    let mut note = String::new();
    if gen == Generator::Stored {
        let (file, why) = stored_plan(scenario, plan_dir)?;
        let h = file.header();
        if h.records == 0 {
            let src = scenario.dataset.source.as_deref().unwrap_or_default();
            anyhow::bail!("dataset.source `{src}`: no records (allowed: a file of at least one record)");
        }
        dataset.loaded = h.records;
        positions = h.distinct;
        raw_bytes = h.raw_bytes;
        dataset.value.max = dataset.value.max.max(file.longest_value() as u32);
        note = why.unwrap_or_else(|| format!("{} records stored in {}", h.records, file.path().display()));
        plan = Some(file.path().to_path_buf());
    }
    let per_phase = inserts_per_phase(scenario, dataset.loaded)?;
    let inserted: u64 = per_phase.iter().sum();
    dataset.total = dataset.loaded + inserted;
    if gen != Generator::Stored {
        dataset.ordered = ordered(key.kind, key.width, dataset.total);
        positions = dataset.total;
        if let Some(data_dir) = data_dir {
            guard(&dataset, scenario, plan_dir, data_dir)?;
        }
        raw_bytes = derived_raw_bytes(&dataset)?;
        if !dataset.ordered && scans(scenario) {
            let (file, why) = sorted_plan(scenario, &dataset, plan_dir)?;
            note =
                why.unwrap_or_else(|| format!("key order of {} records in {}", dataset.total, file.path().display()));
            plan = Some(file.path().to_path_buf());
        }
    }
    dataset.open_records = dataset.total;
    dataset.open_bytes = raw_bytes.saturating_mul(2).max(1 << 20);
    let mut inserted_before = Vec::with_capacity(per_phase.len());
    let mut acc = 0;
    for n in &per_phase {
        inserted_before.push(acc);
        acc += n;
    }
    Ok(ResolvedData { dataset, plan, positions, raw_bytes, inserted_before, note, replay: None, _owned_plan: None })
}

/// The dataset of a scenario with a replay phase: the stream's distinct keys, those it reads
/// before writing loaded by the load phase (records `0 .. loaded`), the others written by the
/// replay itself.
fn resolve_replay(
    scenario: &Scenario,
    phase_index: usize,
    phase: &crate::scenario::PhaseDef,
    plan_dir: &Path,
) -> anyhow::Result<ResolvedData> {
    if let Some(j) = scenario.phases.iter().position(|phase| phase.inserts()) {
        anyhow::bail!(
            "phase {}: a scenario with a replay has no inserts (its keys are the stream's)",
            scenario.phase_name(j)
        );
    }
    let (file, replay) = crate::replay::plan(scenario, phase_index, phase, plan_dir)?;
    let h = file.header();
    let path = file.path().to_path_buf();
    let dataset = Dataset {
        generator: Generator::Stored,
        key: key_shape(scenario),
        value: ValueShape { min: 0, max: file.longest_value() as u32, ..ValueShape::default() },
        loaded: replay.info.preloaded,
        total: h.records,
        ordered: false,
        pool_seed: derive::stream(scenario.seed, 1),
        value_seed: derive::stream(scenario.seed, 2),
        open_records: h.records,
        open_bytes: h.raw_bytes.saturating_mul(2).max(1 << 20),
    };
    let note = format!(
        "replay of {} ({}): {} ops on {} keys, {} loaded first",
        replay.info.source, replay.info.format, replay.info.ops, h.records, replay.info.preloaded
    );
    Ok(ResolvedData {
        dataset,
        plan: Some(path.clone()),
        positions: h.distinct,
        raw_bytes: h.raw_bytes,
        inserted_before: vec![0; scenario.phases.len()],
        note,
        replay: Some(replay),
        _owned_plan: Some(OwnedPlan(path)),
    })
}

/// The plan's id: a hash of everything that decides keys, values and op streams.
pub fn plan_id(scenario: &Scenario) -> String {
    let spec = serde_json::json!({ "seed": scenario.seed, "dataset": scenario.dataset, "phases": scenario.phases });
    let text = serde_json::to_vec(&spec).unwrap_or_default();
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&text))
}

/// Keys plus load values of the derived records (the raw data size of space amplification).
fn derived_raw_bytes(ds: &Dataset) -> anyhow::Result<u64> {
    let keys = derive::Keys::new(ds, None)?;
    let values = derive::Values::new(ds, None)?;
    let (mut k, mut v) = (Vec::new(), Vec::new());
    let mut total = 0u64;
    for r in 0..ds.loaded {
        keys.key(r, &mut k);
        values.value(r, 0, &mut v);
        total += (k.len() + v.len()) as u64;
    }
    Ok(total)
}

/// A hash of what decides a plan file's bytes; a brought file's size and modification time
/// are part of it, so an edited file gets a new plan.
fn spec_hash(scenario: &Scenario, what: &str) -> (u64, Vec<u8>) {
    let load = scenario.phases.first().map(|p| p.ops_spec().distribution);
    let mut json = serde_json::to_vec(&serde_json::json!({
        "what": what, "seed": scenario.seed, "dataset": scenario.dataset, "load": load, "format": planfile::VERSION,
        "inserts": inserts_per_phase(scenario, scenario.dataset.records).unwrap_or_default(),
    }))
    .unwrap_or_default();
    let spec = json.clone();
    if let Some(src) = &scenario.dataset.source {
        let path = src.split_once(':').map(|(_, p)| p).unwrap_or(src);
        if let Ok(m) = std::fs::metadata(path) {
            let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            json.extend_from_slice(format!("{}:{:?}", m.len(), mtime).as_bytes());
        }
    }
    (xxhash_rust::xxh3::xxh3_64(&json), spec)
}

fn load_order(scenario: &Scenario) -> LoadOrder {
    match scenario.phases.first().map(|p| p.ops_spec().distribution) {
        Some(kvbench_spec::Distribution::Sequential) => LoadOrder::Sequential,
        _ => LoadOrder::Shuffle { perm_seed: phase_seeds(scenario.seed, 0).perm },
    }
}

use crate::spec as kvbench_spec;

fn stored_plan(scenario: &Scenario, dir: &Path) -> anyhow::Result<(PlanFile, Option<String>)> {
    let (hash, spec) = spec_hash(scenario, "stored");
    let id = PlanId { seed: scenario.seed, spec_hash: hash, spec_json: &spec };
    planfile::ensure(dir, hash, |path| {
        let mut source =
            crate::gen::source_for(scenario.seed, &scenario.dataset).map_err(|e| anyhow::anyhow!("dataset: {e}"))?;
        planfile::build_stored(path, id, source.as_mut(), load_order(scenario))
    })
}

fn sorted_plan(scenario: &Scenario, ds: &Dataset, dir: &Path) -> anyhow::Result<(PlanFile, Option<String>)> {
    let (hash, spec) = spec_hash(scenario, "sorted");
    let id = PlanId { seed: scenario.seed, spec_hash: hash, spec_json: &spec };
    planfile::ensure(dir, hash, |path| planfile::build_sorted(path, id, ds.key, ds.total))
}

/// The size guard for a derived dataset: the SORTED file (when scans need it) and the store.
fn guard(ds: &Dataset, scenario: &Scenario, plan_dir: &Path, data_dir: &Path) -> anyhow::Result<()> {
    let mut sizes = crate::sizeguard::estimate(ds, &[], None, 0);
    if !ds.ordered && scans(scenario) {
        sizes.plan_bytes = (crate::planfile::HEADER + 2 * crate::planfile::ENTRY) as u64 + 4 * ds.total;
    }
    crate::sizeguard::check(sizes, plan_dir, data_dir)
}
