//! The lines above every report: the run, the machine, the intent, the regime (the data against
//! each row's memory budget, or the machine's memory), a replayed trace and the warnings.

use kvbench_model::result::{EngineResult, RunResult};

use crate::human::human_bytes;

pub(crate) fn preamble(run: &RunResult) -> Vec<String> {
    let env = &run.environment;
    let mut lines = vec![
        format!("kvbench {} — scenario {} — run {}", run.kvbench_version, run.scenario, run.run_id),
        format!(
            "{} ({} cores, {}), {} {}, data on {} ({})",
            env.cpu_model,
            env.cores,
            human_bytes(env.memory_bytes),
            env.os,
            env.kernel,
            env.data_dir,
            env.filesystem
        ),
    ];
    if !run.intent.is_empty() {
        lines.push(format!("intent: {}", run.intent));
    }
    lines.push(regime(run));
    if let Some(t) = &run.plan.trace {
        lines.push(trace_line(t));
    }
    for w in &run.warnings {
        lines.push(format!("WARNING: {w}"));
    }
    lines
}

/// What a replay ran: the stream, its identity and what it holds.
pub fn trace_line(info: &kvbench_model::result::TraceInfo) -> String {
    let kinds: Vec<String> = info.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let hash = if info.hash.is_empty() { String::new() } else { format!(", xxh3 {}", info.hash) };
    let mut line = format!(
        "trace: {} ({}{hash}): {} ops ({}) in {} requests from {} clients over {:.3} s, {} distinct keys ({} \
         loaded first), reads per write {:.2}",
        info.source,
        info.format,
        info.ops,
        kinds.join(", "),
        info.requests,
        info.clients,
        info.duration_us as f64 / 1e6,
        info.distinct_keys,
        info.preloaded,
        info.read_write_ratio
    );
    if !info.skipped.is_empty() {
        let skipped: Vec<String> = info.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        line.push_str(&format!("; not replayed: {}", skipped.join(", ")));
    }
    if info.resized_puts > 0 {
        line.push_str(&format!("; {} puts replayed at their key's first size", info.resized_puts));
    }
    line
}

/// The regime of the run: its data against each row's memory budget as it was applied (with
/// what the limit did: peak, limit hits, OOM kills), a budget given but never applied (the row
/// failed first), or against the machine's memory for rows without one.
pub fn regime(run: &RunResult) -> String {
    let data = human_bytes(run.plan.raw_bytes);
    let applied: Vec<&EngineResult> = run.engines.iter().filter(|e| e.budget.is_some()).collect();
    let not_applied: Vec<&EngineResult> =
        run.engines.iter().filter(|e| e.budget.is_none() && e.budget_requested.is_some()).collect();
    let unbounded: Vec<&str> = run
        .engines
        .iter()
        .filter(|e| e.budget.is_none() && e.budget_requested.is_none())
        .map(|e| e.label.as_str())
        .collect();
    if applied.is_empty() && not_applied.is_empty() {
        let largest = run.engines.iter().map(|e| e.space_bytes).max().unwrap_or(0);
        return format!("regime: {data} of data (keys+values), {}", without_budget(run, largest));
    }
    let mut parts = Vec::new();
    if !applied.is_empty() {
        parts.push(format!("memory budget per row (a cgroup: heap and page cache) {}", applied_budgets(run, &applied)));
    }
    let mut asked: Vec<u64> = not_applied.iter().filter_map(|e| e.budget_requested).collect();
    asked.sort_unstable();
    asked.dedup();
    for limit in asked {
        let rows: Vec<&str> =
            not_applied.iter().filter(|e| e.budget_requested == Some(limit)).map(|e| e.label.as_str()).collect();
        parts.push(format!(
            "memory budget {} NOT applied to {} (failed before its cgroup held it: no figures under a budget)",
            human_bytes(limit),
            rows.join(", ")
        ));
    }
    if !unbounded.is_empty() {
        parts.push(format!("without a budget: {}", unbounded.join(", ")));
    }
    format!("regime: {data} of data (keys+values); {}", parts.join("; "))
}

/// Each applied limit with its rows and what the limit did to each.
fn applied_budgets(run: &RunResult, rows: &[&EngineResult]) -> String {
    let mut limits: Vec<u64> = rows.iter().filter_map(|e| e.budget.as_ref().map(|b| b.limit_bytes)).collect();
    limits.sort_unstable();
    limits.dedup();
    let each = limits.iter().map(|&l| {
        let pressure: Vec<String> = rows
            .iter()
            .filter_map(|e| e.budget.as_ref().filter(|b| b.limit_bytes == l).map(|b| (e, b)))
            .map(|(e, b)| {
                format!(
                    "{}: peak {}, {} limit hits, {} OOM kills",
                    e.label,
                    human_bytes(b.peak_bytes),
                    b.limit_hits,
                    b.oom_kills
                )
            })
            .collect();
        format!("{} ({})", against_budget(run.plan.raw_bytes, l), pressure.join("; "))
    });
    each.collect::<Vec<_>>().join("; ")
}

/// One row's regime, for a series in the history: its data against its own budget, or
/// against the machine's memory.
pub fn row_regime(run: &RunResult, row: &EngineResult) -> String {
    match (&row.budget, row.budget_requested) {
        (Some(b), _) => format!(
            "{} of data; memory budget {}",
            human_bytes(run.plan.raw_bytes),
            against_budget(run.plan.raw_bytes, b.limit_bytes)
        ),
        (None, Some(asked)) => {
            format!("{} of data; memory budget {} NOT applied", human_bytes(run.plan.raw_bytes), human_bytes(asked))
        }
        (None, None) => {
            format!("{} of data, {}", human_bytes(run.plan.raw_bytes), without_budget(run, row.space_bytes))
        }
    }
}

fn against_budget(raw: u64, limit: u64) -> String {
    let x = raw as f64 / limit.max(1) as f64;
    let fits = if x <= 1.0 { "fits in" } else { "is" };
    format!("{}: the data {fits} {x:.2}x the budget", human_bytes(limit))
}

/// The machine's memory against the larger of the data and `space` (the store on disk).
fn without_budget(run: &RunResult, space: u64) -> String {
    let mem = run.environment.memory_bytes;
    let fits = if space.max(run.plan.raw_bytes) < mem { "the store fits in memory" } else { "larger than memory" };
    format!("no memory budget, {} of memory: {fits}", human_bytes(mem))
}
