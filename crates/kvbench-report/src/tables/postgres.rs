//! Computed cells and differences of PostgreSQL's INSERT against COPY (article 002's table):
//! the fsync column, the ratio to INSERT, and how the rows reached and configured the server.

use kvbench_model::result::{EngineResult, PhaseResult, RunResult};

use super::ran;

fn is_insert(row: &EngineResult) -> bool {
    row.options.get("load").and_then(|v| v.as_str()) == Some("insert")
}

/// `off` for rows that ran without durability (sync = none), `on` otherwise.
pub(super) fn fsync_on_off(row: &EngineResult) -> String {
    if row.sync == "none" { "off" } else { "on" }.into()
}

/// The row's rate in `phase` over the INSERT row's of the same sync.
pub(super) fn rate_over_insert_at_same_sync(
    run: &RunResult,
    row: &EngineResult,
    phase: &PhaseResult,
) -> Option<String> {
    let insert = run.engines.iter().find(|e| is_insert(e) && e.sync == row.sync).and_then(|e| ran(e, &phase.name))?;
    (insert.ops_per_sec > 0.0).then(|| format!("{:.1}x", phase.ops_per_sec / insert.ops_per_sec))
}

/// How the INSERT rows sent their statements, from each row's `one-row writes` setting.
pub(super) fn insert_statements(run: &RunResult) -> String {
    let rows: Vec<String> = run
        .engines
        .iter()
        .filter(|e| is_insert(e))
        .filter_map(|e| Some(format!("{}: {}", e.label, e.settings.get("one-row writes")?)))
        .collect();
    let theirs = "the article's client sent every INSERT with its SQL text and parameters, so the server parsed and planned it for each row";
    if rows.is_empty() {
        return format!("{theirs}; the INSERT rows here do not say how they sent theirs (a result from before the `prepared` option)");
    }
    format!("{theirs}; kvbench's INSERT rows: {}", rows.join("; "))
}

/// A setting the rows report (the first row that has it).
pub(super) fn setting(run: &RunResult, name: &str) -> Option<String> {
    run.engines.iter().find_map(|e| e.settings.get(name).cloned())
}

/// How the client reached the server, from the rows' `connection` setting (older results:
/// `access`).
pub(super) fn connection(run: &RunResult) -> String {
    match setting(run, "connection").or_else(|| setting(run, "access")) {
        Some(c) if c.starts_with("TCP") => format!(
            "kvbench's client (Rust, each row's `client` setting) connects over loopback TCP ({c}, a password login), as the article's OCaml client connected to localhost"
        ),
        Some(c) if c.contains("Unix socket") => "kvbench's client (Rust, each row's `client` setting) connects over the server's Unix socket, where the article's OCaml client connected over TCP to localhost: each INSERT's round trip here skips the loopback TCP stack (connection = \"tcp\" takes the article's way)".into(),
        Some(c) => format!("kvbench's client (Rust, each row's `client` setting) reached the server by {c}, not OCaml"),
        None => "kvbench's client is Rust (each row's `client` setting), not OCaml".into(),
    }
}

/// What `fsync` on/off meant for the server, as the rows read it back.
pub(super) fn durability(run: &RunResult) -> String {
    let mut pairs: Vec<String> = run
        .engines
        .iter()
        .filter_map(|e| {
            Some(format!(
                "fsync={} with synchronous_commit={}",
                e.settings.get("fsync")?,
                e.settings.get("synchronous_commit")?
            ))
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    if pairs.is_empty() {
        "fsync=off rows also set synchronous_commit=off (sync = none sets both), fsync=on rows keep both on".into()
    } else {
        format!("the rows ran {} (sync = none sets both off)", pairs.join(", "))
    }
}
