//! `{name}` in a table's note, differences and text cells, filled from the result.

use kvbench_model::report_table::placeholders;
use kvbench_model::result::{PhaseResult, RunResult};
use kvbench_model::spec::HotKey;

/// `text` with the run's placeholders filled (an unknown one is left as written).
pub(super) fn fill(text: &str, run: &RunResult) -> String {
    replace(text, |name| run_value(name, run))
}

/// A text cell: `{label}`, and the row's phase's `{phase}` and `{threads}`.
pub(super) fn fill_row(text: &str, label: &str, phase: Option<&PhaseResult>) -> String {
    replace(text, |name| match name {
        "label" => Some(label.to_string()),
        "phase" => phase.map(|p| p.name.clone()),
        "threads" => phase.map(|p| p.threads.to_string()),
        _ => None,
    })
}

fn replace(text: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = text.to_string();
    for name in placeholders(text) {
        if let Some(v) = value(name) {
            out = out.replacen(&format!("{{{name}}}"), &v, 1);
        }
    }
    out
}

fn run_value(name: &str, run: &RunResult) -> Option<String> {
    Some(match name {
        "records" => run.plan.records.to_string(),
        "filesystem" => run.environment.filesystem.clone(),
        "data_dir" => run.environment.data_dir.clone(),
        "unique_records" => run.plan.unique_records.to_string(),
        "repetitions" => repetitions(run).to_string(),
        "hot_key" => hot_key(run),
        "table_setting" => {
            super::postgres::setting(run, "table").unwrap_or_else(|| "a table (k text primary key, v text)".into())
        }
        "postgres_durability" => super::postgres::durability(run),
        "postgres_connection" => super::postgres::connection(run),
        "sync_settings" => sync_settings(run),
        _ => return None,
    })
}

/// The repetitions the scenario declared (the cells are their median).
pub(super) fn repetitions(run: &RunResult) -> u64 {
    run.workload.get("repetitions").and_then(|v| v.as_u64()).unwrap_or(1)
}

/// The record the scenario's first hot-key phase read (`key 123456`), from the scenario as run
/// and the record count.
fn hot_key(run: &RunResult) -> String {
    let phases = run.workload.get("phase").and_then(|p| p.as_array());
    let hot =
        phases.into_iter().flatten().find_map(|p| serde_json::from_value::<HotKey>(p.get("hot_key")?.clone()).ok());
    match hot.and_then(|h| h.record(run.plan.records)) {
        Some(record) => format!("key {record}"),
        None => "one hot key".into(),
    }
}

/// Which sync setting the rows ran with, naming the rows that differ from the first.
fn sync_settings(run: &RunResult) -> String {
    let first = run.engines.first().map(|e| e.sync.as_str()).unwrap_or("none");
    let other: Vec<String> =
        run.engines.iter().filter(|e| e.sync != first).map(|e| format!("{} sync = {}", e.label, e.sync)).collect();
    if other.is_empty() {
        format!("every row ran with sync = {first}")
    } else {
        format!("rows ran with sync = {first} except {}", other.join(", "))
    }
}
