//! The data of a scenario with a replay phase: its stream (a trace file, db_bench's mixgraph,
//! a fitted model) made into the plan every engine replays (kvbench_plan::replay), with what
//! the stream holds for the result and the row's rules (threads, capabilities).

use std::path::{Path, PathBuf};

use anyhow::Context;
use kvbench_model::replay::Stream;
use kvbench_model::result::TraceInfo;
use kvbench_plan::replay::{self, Origin};
use kvbench_trace::{Format, TraceError, TraceOp};

use crate::planfile::{PlanFile, PlanId};
use crate::scenario::{PhaseDef, Scenario};

/// What a replay stream holds, as the policy needs it for every row.
#[derive(Debug, Clone)]
pub struct ReplayData {
    pub info: TraceInfo,
    /// Kinds the stream runs (for capabilities): it writes, deletes, scans.
    pub writes: bool,
    pub deletes: bool,
    pub scans: bool,
}

impl ReplayData {
    fn new(info: TraceInfo) -> ReplayData {
        let has = |k: &str| info.by_kind.get(k).is_some_and(|&n| n > 0);
        let (writes, deletes, scans) = (has("put") || has("delete"), has("delete"), has("scan"));
        ReplayData { info, writes, deletes, scans }
    }

    /// Threads of the replay: as given, else one a client of the stream.
    pub fn threads(&self, given: Option<u32>) -> u32 {
        given.unwrap_or(self.info.clients).clamp(1, crate::spec::limits::THREADS)
    }

    /// Each client's requests stay on one thread, in order, unless there are more threads
    /// than clients (then requests are dealt to threads in turn).
    pub fn by_client(&self, threads: u32) -> bool {
        self.info.clients >= threads
    }
}

/// The replay phase's plan file (built once per run) and what its stream holds.
pub fn plan(
    scenario: &Scenario,
    phase_index: usize,
    phase: &PhaseDef,
    plan_dir: &Path,
) -> anyhow::Result<(PlanFile, ReplayData)> {
    std::fs::create_dir_all(plan_dir)
        .with_context(|| format!("plan directory {}: cannot create", plan_dir.display()))?;
    let path = plan_dir.join(format!("replay-{}-{phase_index}.kvbplan", std::process::id()));
    let spec = serde_json::to_vec(&serde_json::json!({ "seed": scenario.seed, "phase": phase })).unwrap_or_default();
    let id = PlanId { seed: scenario.seed, spec_hash: xxhash_rust::xxh3::xxh3_64(&spec), spec_json: &spec };
    let info = match phase.stream() {
        Some(Stream::Trace) => from_trace(&path, id, phase)?,
        Some(Stream::Mixgraph) | Some(Stream::Model) => from_model(&path, id, scenario, phase)?,
        None => anyhow::bail!("phase {}: a replay phase needs one stream", scenario.phase_name(phase_index)),
    };
    let file = PlanFile::open(&path)?;
    Ok((file, ReplayData::new(info)))
}

fn from_trace(path: &Path, id: PlanId, phase: &PhaseDef) -> anyhow::Result<TraceInfo> {
    let file = PathBuf::from(phase.trace.as_deref().unwrap_or_default());
    let format = phase.trace_format.as_deref().map(Format::parse).transpose().map_err(anyhow::Error::msg)?;
    let mut reader = kvbench_trace::open(&file, format)?;
    let (source, fmt) = (file.display().to_string(), reader.format().as_str());
    let mut info = replay::build(path, id, &mut reader, Origin { source: &source, format: fmt })?;
    info.hash = reader.hash().map(|h| format!("{h:016x}")).unwrap_or_default();
    info.bytes = reader.bytes_read();
    info.skipped = reader.skipped().clone();
    Ok(info)
}

fn from_model(path: &Path, id: PlanId, scenario: &Scenario, phase: &PhaseDef) -> anyhow::Result<TraceInfo> {
    let records = scenario.dataset.records;
    let ops = phase.count.unwrap_or(records);
    let (name, mut stream) = generated(phase, ops, records, scenario.seed)?;
    let origin = Origin { source: name, format: name };
    replay::build(path, id, &mut stream, origin)
}

type Ops = Box<dyn Iterator<Item = Result<TraceOp, TraceError>>>;

/// The generated stream of a mixgraph or model phase, its parameters checked first.
fn generated(phase: &PhaseDef, ops: u64, records: u64, seed: u64) -> anyhow::Result<(&'static str, Ops)> {
    use kvbench_trace::{mixgraph::Mixgraph, model::Model};
    let bad = |what: &str, e: String| anyhow::anyhow!("{what}: {e}");
    if let Some(v) = &phase.mixgraph {
        let m: Mixgraph = serde_json::from_value(v.clone()).map_err(|e| bad("mixgraph", e.to_string()))?;
        m.validate().map_err(|e| bad("mixgraph", e))?;
        return Ok(("mixgraph", Box::new(m.stream(ops, records, seed).map(Ok))));
    }
    let v = phase.model.as_ref().context("a model phase needs `model`")?;
    let m: Model = serde_json::from_value(v.clone()).map_err(|e| bad("model", e.to_string()))?;
    m.validate().map_err(|e| bad("model", e))?;
    Ok(("model", Box::new(m.stream(ops, records, seed).map(Ok))))
}
