//! Phase policy, decided once for every runtime: which phases an engine can run (N/A and
//! why), the open / reopen / evict / close steps around them, thread counts, seeds and
//! distribution constants. The result is a job (docs/protocol.md) plus the map
//! from its steps back to the scenario's phases, which `derive_result` uses.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use crate::engine::{Capabilities, OpenMode};
use crate::job::{BackgroundWriter, Dist, Job, OpsStep, ReplayStep, ScanLen, Step, PROTOCOL_VERSION};
use crate::scenario::{PhaseDef, Scenario, Variant, Warmup};
use crate::spec::{CacheMode, Distribution, OpenPer, OpsSpec, PhaseKind};

use super::dataset::ResolvedData;

/// One reported phase and the job steps it is made of.
#[derive(Debug, Clone, Default)]
pub struct PhasePlan {
    pub name: String,
    pub kind: String,
    /// The ops step (or the open/close step) whose counters are the phase's figures.
    pub main: Option<usize>,
    /// Steps run before `main` for this phase (close, evict, open): their times become notes.
    pub before: Vec<usize>,
    /// Set when the phase cannot run on this engine: nothing is sent to the worker.
    pub not_applicable: Option<String>,
    pub notes: Vec<String>,
    pub cache: String,
    pub threads: u32,
    pub batch: u32,
    pub unit: String,
    pub rate: Option<f64>,
    /// The row's store is a server (reached by URL): busy client threads are then the load
    /// generator's limit, not the store's work (saturation.rs).
    pub server: bool,
    /// Get phases of server rows: connections per thread, and GETs per connection and unit.
    pub connections: u32,
    pub pipeline: u32,
    /// The phase's fault step, run by the orchestrator (it owns the servers).
    pub kill: Option<crate::scenario::KillDef>,
    /// The phase ends on a duration or a steady state, not only its count.
    pub stop_rule: bool,
    /// Intervals below this fraction of the phase's median interval are stalls.
    pub stall_fraction: f64,
    /// The rate of the background writer the worker runs beside the readers (None: none).
    pub writer: Option<f64>,
    /// The job's interval (ms): stalls are counted over whole intervals.
    pub interval_ms: u64,
}

#[derive(Clone)]
pub struct JobPlan {
    pub job: Job,
    pub phases: Vec<PhasePlan>,
}

impl JobPlan {
    /// Where the job runs, known only when its row is about to: the store's directory, and
    /// the URL and token of the server it reaches (a server kvbench starts has them only then).
    pub fn place(&mut self, dir: &Path, url: Option<String>, token: Option<String>) {
        (self.job.dir, self.job.url, self.job.token) = (dir.to_path_buf(), url, token);
    }
}

/// What the policy needs to know about one row.
pub struct RowFacts<'a> {
    pub variant: &'a Variant,
    /// The row's options resolved against the engine's specs ([`super::options::resolve`]):
    /// what the job carries, and what the policy reads (`connections`, `pipeline`).
    pub options: &'a BTreeMap<String, serde_json::Value>,
    pub caps: Capabilities,
    pub runtime: &'a str,
    /// The store is a server the row reaches by URL (its own, or one kvbench starts).
    pub server: bool,
}

struct Builder<'a> {
    s: &'a Scenario,
    data: &'a ResolvedData,
    row: &'a RowFacts<'a>,
    steps: Vec<Step>,
    phases: Vec<PhasePlan>,
    mode: OpenMode,
    open: bool,
}

/// The row's job and the map from its steps to the scenario's phases; placed ([`JobPlan::place`])
/// before it runs.
pub fn build(scenario: &Scenario, data: &ResolvedData, row: &RowFacts<'_>) -> Result<JobPlan, String> {
    let mut b = Builder {
        s: scenario,
        data,
        row,
        steps: Vec::new(),
        phases: Vec::new(),
        mode: OpenMode::ReadWrite,
        open: false,
    };
    let open = b.push_open(OpenMode::ReadWrite, true);
    b.push(|index| Step::Prepare { index, stop: true });
    b.phases.push(PhasePlan { name: "open".into(), kind: "open".into(), main: Some(open), ..b.single() });
    for (i, def) in scenario.phases.iter().enumerate() {
        let plan = b.phase(i, def).map_err(|e| format!("[[phase]] {} ({}): {e:#}", i + 1, scenario.phase_name(i)))?;
        b.phases.push(plan);
    }
    // A size phase at the end already closed the store.
    if b.open {
        let close = b.push(|index| Step::Close { index, stop: false });
        b.phases.push(PhasePlan { name: "close".into(), kind: "close".into(), main: Some(close), ..b.single() });
    }
    let job = Job {
        protocol: PROTOCOL_VERSION,
        engine: row.variant.name.clone(),
        label: row.variant.label(),
        options: job_options(row, data)?,
        dir: std::path::PathBuf::new(),
        sync: row.variant.effective_sync(scenario),
        url: None,
        token: None,
        dataset: data.dataset.clone(),
        plan: data.plan.clone(),
        progress_ms: 200,
        interval_ms: interval_ms(scenario),
        steps: b.steps,
    };
    Ok(JobPlan { job, phases: b.phases })
}

/// How a row keeps a record, for engines with a `record` option (redis): `auto` is `hash`
/// when the dataset's values have fields (YCSB's record), `blob` otherwise.
pub fn record_shape(row: &RowFacts<'_>, data: &ResolvedData) -> Option<&'static str> {
    match row.options.get("record")?.as_str()? {
        "hash" => Some("hash"),
        "blob" => Some("blob"),
        _ if data.dataset.value.fields > 0 => Some("hash"),
        _ => Some("blob"),
    }
}

/// The options the job carries: the row's, with `record = "auto"` resolved.
fn job_options(row: &RowFacts<'_>, data: &ResolvedData) -> Result<BTreeMap<String, serde_json::Value>, String> {
    let mut options = row.options.clone();
    if let Some(shape) = record_shape(row, data) {
        if shape == "hash" && data.dataset.value.fields == 0 {
            return Err("option record = \"hash\" keeps a record's fields as a hash: the dataset's values have \
                        no fields (set dataset value `fields`, or record = \"blob\")"
                .into());
        }
        options.insert("record".into(), shape.into());
    }
    Ok(options)
}

/// The timeline's resolution: one second, or a tenth when a phase kills a cluster member (the
/// time to recover is read from the intervals).
pub fn interval_ms(scenario: &Scenario) -> u64 {
    if scenario.phases.iter().any(|p| p.kill.is_some()) {
        100
    } else {
        1000
    }
}

impl Builder<'_> {
    fn single(&self) -> PhasePlan {
        PhasePlan { cache: "-".into(), threads: 1, batch: 1, ..Default::default() }
    }

    fn push(&mut self, make_step: impl FnOnce(usize) -> Step) -> usize {
        let index = self.steps.len();
        self.steps.push(make_step(index));
        index
    }

    /// Close the store unless a size phase already did (a worker refuses to close it twice).
    fn push_close(&mut self, before: &mut Vec<usize>) {
        if std::mem::take(&mut self.open) {
            before.push(self.push(|index| Step::Close { index, stop: true }));
        }
    }

    fn push_open(&mut self, mode: OpenMode, stop: bool) -> usize {
        self.mode = mode;
        self.open = true;
        self.push(|index| Step::Open { index, mode, stop })
    }

    fn phase(&mut self, phase_index: usize, def: &PhaseDef) -> anyhow::Result<PhasePlan> {
        let name = self.s.phase_name(phase_index);
        let mut p = PhasePlan {
            name,
            kind: def.kind.as_str().into(),
            cache: match def.cache {
                CacheMode::Warm => "warm".into(),
                CacheMode::Cold => "cold".into(),
                CacheMode::Reopen => "reopen".into(),
            },
            threads: self.threads_of(def),
            batch: self.batch_of(def),
            rate: def.rate,
            server: self.row.server,
            kill: def.kill.clone(),
            stop_rule: def.duration.is_some() || def.until.is_some(),
            stall_fraction: def.stall_fraction.unwrap_or(crate::scenario::STALL_FRACTION),
            interval_ms: interval_ms(self.s),
            ..Default::default()
        };
        if def.kind == PhaseKind::Settle {
            return Ok(self.settle(p));
        }
        if def.kind == PhaseKind::Size {
            return Ok(self.size(p));
        }
        if def.kind == PhaseKind::Reopen {
            return Ok(self.reopen(p));
        }
        if let Some(why) = not_applicable(def, self.row, self.data) {
            p.not_applicable = Some(why);
            return Ok(p);
        }
        p.unit = unit_of(def, p.batch);
        self.pipelining(def, &mut p)?;
        self.notes(def, &mut p);
        let want = open_mode(def, self.row);
        if def.open_per == OpenPer::Operation {
            self.push_close(&mut p.before);
            p.main = Some(self.ops(phase_index, def, &mut p, want)?);
            self.push_open(want, true);
            return Ok(p);
        }
        if want != self.mode || def.cache != CacheMode::Warm || !self.open {
            self.push_close(&mut p.before);
            if def.cache == CacheMode::Cold {
                p.before.push(self.push(|index| Step::Evict { index, stop: true }));
            }
            p.before.push(self.push_open(want, true));
        }
        if let Some(w) = def.warmup.clone().filter(Warmup::is_some) {
            p.before.push(self.warmup(phase_index, def, &p, want, &w)?);
        }
        p.main = Some(self.ops(phase_index, def, &mut p, want)?);
        Ok(p)
    }

    /// A settle phase: the engine's settle step, untimed, on a read-write open (the database is
    /// reopened read-write when the phase before read it in another mode). An engine without
    /// settle (in-memory stores, servers, build-once files) answers "unsupported": N/A.
    fn settle(&mut self, plan: PhasePlan) -> PhasePlan {
        let mut plan = PhasePlan { cache: "-".into(), threads: 1, batch: 1, ..plan };
        if self.mode != OpenMode::ReadWrite || !self.open {
            self.push_close(&mut plan.before);
            plan.before.push(self.push_open(OpenMode::ReadWrite, true));
        }
        plan.main = Some(self.push(|index| Step::Settle { index, stop: false }));
        plan
    }

    /// A size phase: the store is closed (timed, as any close) and the worker core reads its
    /// files' allocated bytes right after, before anything else touches them (the article
    /// 000 way: `du` once the write's `with` block has closed the store). The next phase
    /// reopens it.
    fn size(&mut self, plan: PhasePlan) -> PhasePlan {
        let mut plan = PhasePlan { cache: "-".into(), threads: 1, batch: 1, unit: "close".into(), ..plan };
        let mut steps = Vec::new();
        self.push_close(&mut steps);
        plan.main = steps.pop();
        if plan.main.is_none() {
            plan.not_applicable = Some("the store is already closed: the phase before was a size phase".into());
        }
        plan
    }

    /// A reopen phase: the store's close (a note) and a read-write open (the phase's figure),
    /// the page cache left as it is; the same two steps every runtime already runs around a
    /// phase, so a worker needs nothing new. After a size phase the store is closed: the open
    /// alone. A store that keeps nothing across a reopen has nothing to reopen: N/A.
    fn reopen(&mut self, plan: PhasePlan) -> PhasePlan {
        let mut plan = PhasePlan { cache: "-".into(), threads: 1, batch: 1, unit: "open".into(), ..plan };
        if !self.row.caps.persistent {
            plan.not_applicable = Some("engine is not persistent: reopening it would find nothing to read".into());
            return plan;
        }
        self.push_close(&mut plan.before);
        plan.main = Some(self.push_open(OpenMode::ReadWrite, true));
        plan
    }

    /// The untimed warm-up of a read phase: operations of the same kind and distribution,
    /// drawn from seeds of their own, run as a step of their own before the measured one (so a
    /// worker needs no warm-up logic, and the measured ops are exactly the phase's); a count,
    /// or for a time as a phase's `duration` runs (the step's count then a cap).
    fn warmup(
        &mut self,
        phase_index: usize,
        def: &PhaseDef,
        plan: &PhasePlan,
        mode: OpenMode,
        warmup_spec: &Warmup,
    ) -> anyhow::Result<usize> {
        anyhow::ensure!(
            !def.kind.may_write(),
            "warmup is for read phases (a warm-up write would change what the phase reads)"
        );
        let mut st = ops_step(self.s, self.data, phase_index, def, plan, mode)?;
        let seeds = super::dataset::phase_seeds(self.s.seed, 0x800 + phase_index as u64);
        let per = st.keys_per_request.max(1) as u64;
        st.name = format!("{} warm-up", plan.name);
        let n = match warmup_spec {
            Warmup::Ops(n) => *n,
            Warmup::For(_) => crate::spec::limits::OPS,
        };
        (st.count, st.rec_seed, st.len_seed, st.perm_seed, st.rate) = (n * per, seeds.rec, seeds.len, seeds.perm, None);
        (st.duration_ms, st.steady) = (warmup_spec.ms(), None);
        Ok(self.push(|index| Step::Ops(Box::new(OpsStep { index, ..st }))))
    }

    /// Connections and pipeline depth of a server row (its engine options, engine.rs). A get
    /// phase then keeps `pipeline` GETs in flight on each of `connections` connections per
    /// thread, refilled as replies arrive (memtier's way); each GET is a sample of its own, timed
    /// from the write that sent it to the read that brought its reply (as memtier times a
    /// pipelined request). Other phases keep one request at a time.
    fn pipelining(&self, def: &PhaseDef, plan: &mut PhasePlan) -> anyhow::Result<()> {
        let conns = option_count(self.row, "connections")?;
        let depth = option_count(self.row, "pipeline")?;
        if conns * depth <= 1 {
            return Ok(());
        }
        anyhow::ensure!(
            def.rate.is_none(),
            "`rate` paces single requests; it cannot be combined with engine options connections x pipeline > 1"
        );
        anyhow::ensure!(def.open_per != OpenPer::Operation, "open_per = \"operation\" cannot be pipelined");
        anyhow::ensure!(
            def.writer.is_none() || def.kind != PhaseKind::Get,
            "a background writer cannot run beside pipelined gets (their replies are checked after the pipeline)"
        );
        if def.kind != PhaseKind::Get {
            // Writes go through each thread's writer, batches pipelined by the engine; other
            // reads use one connection of each thread's reader.
            if !matches!(def.kind, PhaseKind::Load | PhaseKind::Update | PhaseKind::Insert | PhaseKind::Delete) {
                plan.notes.push(format!(
                    "one request at a time on one of the {conns} connections per thread (only get phases are pipelined)"
                ));
            }
            return Ok(());
        }
        (plan.connections, plan.pipeline) = (conns, depth);
        plan.notes.push(format!(
            "pipelined: each thread keeps {depth} GETs in flight on each of its {conns} connections, a new one \
             written as soon as replies free slots; a latency sample is one GET, from the write that sent it to \
             the read that brought its reply (samples overlap, so no harness share is computed)"
        ));
        Ok(())
    }

    fn notes(&self, def: &PhaseDef, plan: &mut PhasePlan) {
        if def.kind == PhaseKind::MultiGet && !self.row.caps.multi_get {
            plan.notes.push("no native multi-get: each request loops over get".into());
        }
        if def.open_per == OpenPer::Operation {
            plan.notes.push("each sample opens the database, reads one key and closes it".into());
        }
        if let Some(r) = self.data.replay.as_ref().filter(|_| def.kind == PhaseKind::Replay) {
            plan.notes.push(replay_note(r, def.speed, plan.threads));
        }
        if let Some(r) = def.rate {
            plan.notes.push(format!(
                "open loop at {r} ops/s: latency counts from each operation's intended start (coordinated omission corrected)"
            ));
        }
        if plan.threads > 1 && self.row.runtime == "python" {
            plan.notes.push(format!(
                "{} Python threads share one interpreter lock (GIL): engine calls that release it run in parallel, \
                 the loop itself does not; run several rows or processes for parallel Python clients",
                plan.threads
            ));
        }
        if plan.threads > 1 && def.kind.may_write() && def.kind != PhaseKind::Load {
            plan.notes.push(format!(
                "{} threads; every read verified against the versions that can be visible (docs/methodology.md)",
                plan.threads
            ));
        }
    }

    fn ops(
        &mut self,
        phase_index: usize,
        def: &PhaseDef,
        plan: &mut PhasePlan,
        mode: OpenMode,
    ) -> anyhow::Result<usize> {
        let mut st = ops_step(self.s, self.data, phase_index, def, plan, mode)?;
        st.writer = self.writer(phase_index, def, plan);
        st.field_updates = self.row.caps.field_update && self.data.dataset.value.merges_updates();
        Ok(self.push(|index| Step::Ops(Box::new(OpsStep { index, ..st }))))
    }

    /// A read phase's background writer: uniform updates over the records present, from seeds
    /// of its own, at `rate`. The Rust worker runs it; other runtimes' rows say it was not
    /// applied (their worker core has no writer thread).
    fn writer(&self, phase_index: usize, def: &PhaseDef, plan: &mut PhasePlan) -> Option<BackgroundWriter> {
        let rate = def.writer?.rate;
        if self.row.runtime != "rust" {
            plan.notes.push(format!(
                "background writer ({rate} updates/s) not applied: only the Rust worker runs one; the readers ran alone"
            ));
            return None;
        }
        plan.writer = Some(rate);
        plan.notes.push(format!(
            "read while writing: one more thread updates uniformly drawn records at {rate}/s while the readers \
             run; ops/s and the latency are the readers' (the writer's latency is kind `update`), every read verified \
             against the versions that can be visible"
        ));
        let n = self.data.existing_before(phase_index).max(1);
        let rec_seed = super::dataset::phase_seeds(self.s.seed, 0x900 + phase_index as u64).rec;
        Some(BackgroundWriter { rate, dist: Dist::Uniform { n }, rec_seed })
    }
}

/// What a replay ran: its stream, its timing and how its clients met the threads.
fn replay_note(replay_data: &crate::replay::ReplayData, speed: Option<f64>, threads: u32) -> String {
    let t = &replay_data.info;
    let timing = match speed {
        Some(x) => format!(
            "open loop at the recorded times / {x}: latency counts from each request's due time (coordinated \
             omission corrected)"
        ),
        None => "closed loop: each thread's next request as soon as the last returned".into(),
    };
    let clients = if replay_data.by_client(threads) {
        format!("{} clients on {threads} threads, each client's requests in order on one thread", t.clients)
    } else {
        format!("{} clients dealt request by request to {threads} threads", t.clients)
    };
    format!(
        "replay of {} ({}): {} ops in {} requests on {} keys; {} keys read before written were loaded first \
         (the load phase); {timing}; {clients}",
        t.source, t.format, t.ops, t.requests, t.distinct_keys, t.preloaded
    )
}

/// A count-like engine option of the row (`connections`, `pipeline`): absent, unset, 0 or 1
/// is 1. The options are resolved, so an engine without the option has rejected the row.
fn option_count(row: &RowFacts<'_>, name: &str) -> anyhow::Result<u32> {
    let value = match row.options.get(name) {
        None | Some(serde_json::Value::Null) => return Ok(1),
        Some(v) => v,
    };
    match value.as_u64() {
        Some(n) if n <= 4096 => Ok((n as u32).max(1)),
        _ => anyhow::bail!(
            "engine {} option `{name}` = {value}: expected an integer from 0 to 4096",
            row.variant.label()
        ),
    }
}

impl Builder<'_> {
    /// The phase's threads: the row's own (`--vary threads=`) where it applies, else the phase's.
    fn threads_of(&self, def: &PhaseDef) -> u32 {
        let row = self.row.variant.threads.filter(|_| def.kind.runs_after_load());
        match &self.data.replay {
            Some(r) if def.kind == PhaseKind::Replay => r.threads(row.or(def.threads)),
            _ => row.or(def.threads).unwrap_or(1).max(1),
        }
    }

    /// The phase's batch: the row's own load batch for a load, else the phase's (in records, or
    /// its `batch_bytes` over the mean record).
    fn batch_of(&self, def: &PhaseDef) -> u32 {
        let row = self.row.variant.batch.filter(|_| def.kind == PhaseKind::Load);
        let by_bytes = def.batch_bytes.map(|b| records_in_bytes(b, self.data.dataset.loaded, self.data.raw_bytes));
        row.or(def.batch).or(by_bytes).unwrap_or(def.kind.default_batch()).max(1)
    }
}

/// Records that make `bytes` of keys and values, rounded up (Pebble's ycsb commits a batch once
/// it holds 1 MiB): the mean record of `records` holding `raw` bytes, within kvbench's batch range.
fn records_in_bytes(bytes: u64, records: u64, raw: u64) -> u32 {
    let mean = (raw as f64 / records.max(1) as f64).max(1.0);
    let n = (bytes as f64 / mean).ceil() as u64;
    n.clamp(1, u64::from(kvbench_model::spec::limits::BATCH)) as u32
}

fn unit_of(def: &PhaseDef, batch: u32) -> String {
    match def.kind {
        _ if def.open_per == OpenPer::Operation => "open+op+close",
        PhaseKind::MultiGet | PhaseKind::Scan => "request",
        PhaseKind::Load | PhaseKind::Update | PhaseKind::Insert | PhaseKind::Delete if batch > 1 => "batch",
        _ => "op",
    }
    .into()
}

/// Why an engine cannot run a phase, decided from its declared capabilities.
pub fn not_applicable(def: &PhaseDef, row: &RowFacts<'_>, data: &ResolvedData) -> Option<String> {
    let caps = row.caps;
    let mix = def.mix.unwrap_or_default();
    let mixed = def.kind == PhaseKind::Mixed;
    let rewrites = matches!(def.kind, PhaseKind::Update | PhaseKind::Delete | PhaseKind::Rmw | PhaseKind::Insert)
        || mixed && (mix.update + mix.delete + mix.rmw + mix.insert) > 0.0;
    if rewrites && caps.build_once {
        return Some("engine is written once (build-once): no updates, inserts or deletes".into());
    }
    if (def.kind == PhaseKind::Delete || mixed && mix.delete > 0.0) && !caps.delete {
        return Some("engine cannot delete".into());
    }
    // A hash record keeps an index of its keys in order, which scans read.
    let scans = caps.ordered_scan || record_shape(row, data) == Some("hash");
    if (def.kind == PhaseKind::Scan || mixed && mix.scan > 0.0) && !scans {
        let why =
            if record_shape(row, data).is_some() { " (record = \"hash\" has an index that scans read)" } else { "" };
        return Some(format!("engine has no ordered scan{why}"));
    }
    if def.writer.is_some() && caps.build_once {
        return Some("engine is written once (build-once): no background writer".into());
    }
    if def.writer.is_some() && open_mode(def, row) != OpenMode::ReadWrite {
        return Some("the background writer needs a read-write open".into());
    }
    if def.kind.may_write() && def.kind != PhaseKind::Load && row.variant.open != OpenMode::ReadWrite {
        return Some(format!("reads use a {:?} open; writes are not possible", row.variant.open).to_lowercase());
    }
    let want = open_mode(def, row);
    match want {
        OpenMode::ReadOnly if !caps.read_only_open => return Some("engine has no read-only open".into()),
        OpenMode::Secondary if !caps.secondary_open => return Some("engine has no secondary open".into()),
        _ => {}
    }
    let reopens = def.cache != CacheMode::Warm || def.open_per == OpenPer::Operation || want != OpenMode::ReadWrite;
    if reopens && !caps.persistent {
        return Some("engine is not persistent: reopening it would find nothing to read".into());
    }
    replay_not_applicable(def, row, data)
}

/// What a replay's stream needs of an engine: writes, deletes and scans where it has them.
fn replay_not_applicable(def: &PhaseDef, row: &RowFacts<'_>, data: &ResolvedData) -> Option<String> {
    if def.kind == PhaseKind::Load && data.replay.is_some() && data.dataset.loaded == 0 {
        return Some("nothing to load: the stream writes every key before it reads it".into());
    }
    let r = data.replay.as_ref().filter(|_| def.kind == PhaseKind::Replay)?;
    let caps = row.caps;
    if r.writes && caps.build_once {
        return Some("engine is written once (build-once): the stream writes".into());
    }
    if r.deletes && !caps.delete {
        return Some("engine cannot delete: the stream deletes".into());
    }
    if r.scans && !caps.ordered_scan {
        return Some("engine has no ordered scan: the stream seeks".into());
    }
    None
}

/// Bytes the multi-get requests of a worker may hold at once (each thread's request, its keys'
/// values at their largest): a worker of huge values must not grow by their product.
pub const MULTI_GET_HOLD: u64 = 1 << 30;

/// A multi-get phase whose requests may hold more than [`MULTI_GET_HOLD`] in the worker is
/// refused, naming what to lower.
fn multi_get_hold(def: &PhaseDef, plan: &PhasePlan, kpr: u64, value_max: u64) -> anyhow::Result<()> {
    let threads = u64::from(plan.threads.max(1));
    let hold = kpr.saturating_mul(value_max.max(1)).saturating_mul(threads);
    if def.kind != PhaseKind::MultiGet || hold <= MULTI_GET_HOLD {
        return Ok(());
    }
    let fits = (MULTI_GET_HOLD / value_max.max(1) / threads).max(1);
    anyhow::bail!(
        "phase {}: {threads} thread(s) of multi-get requests of {kpr} keys with values up to {value_max} bytes would \
         hold {hold} bytes in the worker, above its limit of {MULTI_GET_HOLD}: keys_per_request at most {fits} \
         at this value size and thread count, or smaller values",
        plan.name
    )
}

/// The resolved ops step of phase `phase_index` (its `index` is set by the caller).
fn ops_step(
    scenario: &Scenario,
    data: &ResolvedData,
    phase_index: usize,
    def: &PhaseDef,
    plan: &PhasePlan,
    mode: OpenMode,
) -> anyhow::Result<OpsStep> {
    anyhow::ensure!(def.kind.runs_ops(), "a {} phase has no operations", def.kind.as_str());
    if def.kind == PhaseKind::Replay {
        return replay_step(data, def, plan, mode);
    }
    let spec = def.ops_spec();
    let seeds = super::dataset::phase_seeds(scenario.seed, phase_index as u64);
    let existing = data.existing_before(phase_index);
    let mut kpr = spec.keys_per_request.max(1) as u64;
    if def.passes.is_some() || spec.distribution == Distribution::Sequential {
        // A pass, or a walk in key order, reads every record once before any again: a
        // request never holds more keys than there are (`--ops` on article 003's bulk read
        // would otherwise ask for a million keys of a thousand records, a thousand times).
        kpr = kpr.min(existing.max(1));
    }
    multi_get_hold(def, plan, kpr, u64::from(data.dataset.value.max))?;
    let count = step_count(def, &spec, data, existing, kpr);
    let (dist, perm_seed) = step_dist(scenario, data, def, &spec, existing, count, seeds.perm)?;
    let (kinds, thresholds) =
        if def.kind == PhaseKind::Mixed { super::dataset::mix_kinds(&spec.mix)? } else { (vec![], vec![]) };
    if def.kind == PhaseKind::Update && plan.batch > 1 && data.dataset.value.merges_updates() {
        anyhow::bail!(
            "phase {}: an update of one field reads and writes back each record on its own, so it has no \
             batches (batch {}): set batch = 1, or write_all_fields = true in dataset.value",
            plan.name,
            plan.batch
        );
    }
    Ok(OpsStep {
        index: 0,
        name: plan.name.clone(),
        kind: def.kind,
        count,
        threads: plan.threads,
        batch: plan.batch,
        keys_per_request: kpr as u32,
        connections: plan.connections.max(1),
        pipeline: plan.pipeline.max(1),
        kinds,
        thresholds,
        dist,
        rec_seed: seeds.rec,
        kind_seed: seeds.kind,
        len_seed: seeds.len,
        perm_seed,
        scan: ScanLen {
            min: spec.scan_min.min(spec.scan_length).max(if spec.scan_length > 0 { 1 } else { 0 }),
            max: spec.scan_length,
        },
        insert_base: data.insert_base(phase_index),
        last: existing.saturating_sub(1),
        rate: def.rate,
        open_per_op: def.open_per == OpenPer::Operation,
        field_updates: false,
        mode,
        finish: def.kind == PhaseKind::Load,
        verify: true,
        stop: def.kind == PhaseKind::Load,
        duration_ms: duration_of(def),
        steady: def.steady(),
        writer: None,
        replay: None,
    })
}

/// A replay phase's step: the OPS section's requests, on the phase's threads.
fn replay_step(data: &ResolvedData, def: &PhaseDef, plan: &PhasePlan, mode: OpenMode) -> anyhow::Result<OpsStep> {
    let r = data.replay.as_ref().context("a replay phase without its stream")?;
    Ok(OpsStep {
        index: 0,
        name: plan.name.clone(),
        kind: PhaseKind::Replay,
        count: r.info.ops,
        threads: plan.threads,
        batch: 1,
        keys_per_request: 1,
        connections: 1,
        pipeline: 1,
        kinds: vec![],
        thresholds: vec![],
        dist: Dist::Sequential { n: data.dataset.total.max(1), start: 0 },
        rec_seed: 0,
        kind_seed: 0,
        len_seed: 0,
        perm_seed: 0,
        scan: ScanLen::default(),
        insert_base: 0,
        last: 0,
        rate: None,
        open_per_op: false,
        field_updates: false,
        mode,
        finish: false,
        verify: true,
        stop: false,
        duration_ms: duration_of(def),
        steady: None,
        writer: None,
        replay: Some(ReplayStep { speed: def.speed, by_client: r.by_client(plan.threads) }),
    })
}

/// A phase's duration; `until = "steady"` without one is capped at
/// [`crate::scenario::STEADY_CAP_MS`].
fn duration_of(def: &PhaseDef) -> Option<u64> {
    def.duration_ms().or(def.until.map(|_| crate::scenario::STEADY_CAP_MS))
}

/// How many ops a phase's step makes: every record once (or `passes` times) unless the phase
/// gives its count or its `share` of the records; a multi-get's count is whole requests
/// (`passes` of them cover every record that many times).
fn step_count(def: &PhaseDef, spec: &OpsSpec, data: &ResolvedData, existing: u64, kpr: u64) -> u64 {
    if let Some(n) = def.share_of(existing) {
        // A share of the records counts keys: a multi-get's requests are whole.
        return if def.kind == PhaseKind::MultiGet { n.div_ceil(kpr) * kpr } else { n };
    }
    if spec.count.is_none() && duration_of(def).is_some() {
        // Ended by its duration or a steady state: without a count of its own, a phase runs
        // as many ops as a phase may have (the stream is the same for any length).
        return crate::spec::limits::OPS * if def.kind == PhaseKind::MultiGet { kpr } else { 1 };
    }
    let passes = u64::from(def.passes.unwrap_or(1));
    match def.kind {
        PhaseKind::Load => data.dataset.loaded * passes,
        PhaseKind::MultiGet => spec.count.unwrap_or(existing.div_ceil(kpr) * passes) * kpr,
        PhaseKind::Scan => spec.count.unwrap_or(1),
        PhaseKind::Insert => spec.count.unwrap_or(data.dataset.loaded),
        _ => spec.count.unwrap_or(existing * passes),
    }
}

/// How a phase's step picks records, and the seed of its permutation (a `load-order` phase
/// replays the load's).
fn step_dist(
    scenario: &Scenario,
    data: &ResolvedData,
    def: &PhaseDef,
    spec: &OpsSpec,
    existing: u64,
    count: u64,
    perm: u64,
) -> anyhow::Result<(Dist, u64)> {
    // A scan starts at a record's key as YCSB's does, so it draws a record like a read.
    let mut n = existing;
    if spec.distribution == Distribution::Zipfian && def.kind != PhaseKind::Load {
        // YCSB's CoreWorkload: the chooser spans the records plus twice the inserts the mix
        // expects, plus one; a draw above the newest record is drawn again (plan-format.md).
        let m = &spec.mix;
        let parts = m.read + m.update + m.insert + m.scan + m.rmw + m.delete;
        let share = if def.kind == PhaseKind::Mixed && parts > 0.0 { m.insert / parts } else { 0.0 };
        n = existing + (count as f64 * share * 2.0) as u64 + 1;
    }
    let load = scenario.phases.iter().position(|p| p.kind == PhaseKind::Load);
    let dist = match (def.kind, spec.distribution) {
        // A later load in the first load's order (an overwrite pass of the same values).
        (PhaseKind::Load, Distribution::LoadOrder) => load_order(scenario, load, data.dataset.loaded),
        (PhaseKind::Load, Distribution::Sequential) => Dist::Sequential { n, start: 0 },
        (PhaseKind::Load, _) => Dist::Shuffle { n },
        (_, Distribution::LoadOrder) => load_order(scenario, load, data.dataset.loaded),
        (_, d) => resolve_dist(d, n, spec)?,
    };
    let perm_seed = match (spec.distribution, load) {
        (Distribution::LoadOrder, Some(l)) => super::dataset::phase_seeds(scenario.seed, l as u64).perm,
        _ => perm,
    };
    Ok((dist, perm_seed))
}

/// The open mode of a phase: writes read-write; reads the phase's own `open`, else the row's.
fn open_mode(def: &PhaseDef, row: &RowFacts<'_>) -> OpenMode {
    if def.kind.may_write() {
        OpenMode::ReadWrite
    } else {
        def.open.unwrap_or(row.variant.open)
    }
}

/// `load-order`: the order the scenario's load wrote the records in, every pass.
fn load_order(scenario: &Scenario, load: Option<usize>, loaded: u64) -> Dist {
    let sequential = load.is_none_or(|l| scenario.phases[l].ops_spec().distribution == Distribution::Sequential);
    if sequential {
        Dist::Sequential { n: loaded, start: 0 }
    } else {
        Dist::LoadOrder { n: loaded }
    }
}

fn resolve_dist(dist: Distribution, records: u64, spec: &crate::spec::OpsSpec) -> anyhow::Result<Dist> {
    Ok(match dist {
        Distribution::Sequential => Dist::Sequential { n: records, start: 0 },
        Distribution::Shuffle => Dist::Shuffle { n: records },
        Distribution::LoadOrder => Dist::LoadOrder { n: records },
        Distribution::Uniform => Dist::Uniform { n: records },
        Distribution::Hot => Dist::Hot {
            n: records,
            record: spec.hot_key.and_then(|h| h.record(records)).unwrap_or(records / 2).min(records.saturating_sub(1)),
        },
        Distribution::Zipfian => crate::derive::zipfian_dist(records, spec.zipf_exponent)?,
        Distribution::Latest => crate::derive::latest_dist(records, records.saturating_sub(1), spec.zipf_exponent)?,
    })
}

/// Capabilities from the names a worker's `--list` gives.
pub fn caps_from_names(names: &[String]) -> Capabilities {
    let has = |n: &str| names.iter().any(|x| x == n);
    Capabilities {
        ordered_scan: has("scan"),
        multi_get: has("multi-get"),
        batch: has("batch"),
        read_only_open: has("read-only"),
        secondary_open: has("secondary"),
        persistent: has("persistent"),
        build_once: has("build-once"),
        delete: has("delete"),
        field_update: has("field-update"),
    }
}

#[cfg(test)]
mod tests;
