//! The scenario's own table (`[report]` in the scenario, carried in the result's `workload`):
//! an article's or a peer benchmark's layout, units and rounding, filled from kvbench's result,
//! then its differences from the original. Nothing here knows a scenario by name: a copied or
//! renamed scenario keeps its table, and a new one declares its own.

use kvbench_model::report_table::{Cell, Difference, ExtraRow, Layout, Mark, ReportTable, Unmeasured};
use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};

use crate::{collapse, Section};

mod computed;
mod dictionary;
mod figures;
mod go_stores;
mod multiget;
mod placeholders;
mod postgres;
mod python_stores;
#[cfg(test)]
mod tests;

/// The table the result's scenario declares, filled; None when it declares none.
pub fn own_table(run: &RunResult) -> Option<Section> {
    let table: ReportTable = serde_json::from_value(run.workload.get("report")?.clone()).ok()?;
    let (run, _) = collapse(run);
    let (headers, rows) = match table.layout {
        Layout::Engines => (headings(&table.columns), engine_rows(&table, &run)),
        Layout::EnginePhases => (headings(&table.columns), engine_phase_rows(&table, &run)),
        Layout::PhasesByEngine => phases_by_engine(&table, &run),
        Layout::KeysByEngine => multiget::keys_by_engine(&table, &run),
    };
    let priority = match table.layout {
        Layout::Engines | Layout::EnginePhases => table.columns.iter().map(|c| c.priority).collect(),
        _ => vec![0; headers.len()],
    };
    Some(Section {
        title: table.title.clone(),
        note: note(&table, &run),
        best: vec![None; headers.len()],
        headers,
        rows,
        priority,
    })
}

/// The declared note, then one line per difference.
fn note(table: &ReportTable, run: &RunResult) -> String {
    let mut note = placeholders::fill(&table.note, run);
    for difference in &table.differences {
        let lines = match difference {
            Difference::Text(text) => vec![placeholders::fill(text, run)],
            Difference::Computed(line) => computed::difference(&line.computed, run),
        };
        for line in lines {
            note.push_str("\n- ");
            note.push_str(&line);
        }
    }
    note
}

fn headings(cells: &[Cell]) -> Vec<String> {
    cells.iter().map(|c| c.heading.clone()).collect()
}

/// A phase that ran (ok, or failed only as the row declared).
pub(super) fn ran<'a>(row: &'a EngineResult, name: &str) -> Option<&'a PhaseResult> {
    row.phases.iter().find(|p| p.name == name && matches!(p.status, Status::Ok | Status::Expected))
}

/// What a cell reads: the row, its label, the phase the row stands for (engine-phases), and
/// the phases an extra row reads instead.
pub(super) struct Place<'a> {
    pub row: &'a EngineResult,
    pub label: String,
    pub phase: Option<&'a PhaseResult>,
    pub extra: Option<&'a ExtraRow>,
}

impl<'a> Place<'a> {
    fn of(row: &'a EngineResult) -> Self {
        Place { row, label: row.label.clone(), phase: None, extra: None }
    }

    /// The phase a cell reads: the row's own in engine-phases, else the cell's (`phase_for`
    /// this row's label or engine first), renamed by an extra row; Err is the unmeasured cell.
    fn phase_of(&self, cell: &Cell, unmeasured: Unmeasured) -> Result<Option<&'a PhaseResult>, String> {
        if let Some(phase) = self.phase {
            return Ok(Some(phase));
        }
        let own = cell.phase_for.get(&self.row.label).or_else(|| cell.phase_for.get(&self.row.engine));
        let declared: Vec<&String> = match (own, &cell.phase) {
            (Some(name), _) => vec![name],
            (None, Some(phase)) => phase.names().iter().collect(),
            (None, None) => return Ok(None),
        };
        let renamed = |name: &String| self.extra.and_then(|x| x.phases.get(name)).unwrap_or(name).clone();
        let names: Vec<String> = declared.into_iter().map(renamed).collect();
        if let Some(phase) = names.iter().find_map(|name| ran(self.row, name)) {
            return Ok(Some(phase));
        }
        let declared = self.row.phases.iter().find(|p| p.name == names[0]).map(|p| p.status);
        Err(unmeasured_cell(declared, unmeasured))
    }
}

/// A cell whose phase did not run as measured (`status` None: not in the row at all).
fn unmeasured_cell(status: Option<Status>, unmeasured: Unmeasured) -> String {
    match (unmeasured, status) {
        (Unmeasured::NotApplicable, Some(Status::NotApplicable)) => "n/a".into(),
        (Unmeasured::Status, Some(status)) => {
            serde_json::to_value(status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        }
        _ => "-".into(),
    }
}

/// A cell's text and the figure it is ranked by.
pub(super) fn cell(cell: &Cell, place: &Place, table: &ReportTable, run: &RunResult) -> (String, Option<f64>) {
    if let Some(text) = &cell.text {
        return (placeholders::fill_row(text, &place.label, place.phase), None);
    }
    let phase = match place.phase_of(cell, table.unmeasured) {
        Ok(phase) => phase,
        Err(text) => return (text, None),
    };
    if let Some(name) = &cell.computed {
        return (computed::cell(name, run, place.row, phase), None);
    }
    let Some(metric) = cell.metric else { return ("-".into(), None) };
    let value = match (metric.of_row(), phase) {
        (true, _) => Some(place.row.space_bytes as f64),
        (false, Some(phase)) => figures::value(metric, cell.counter.as_deref(), place.row, phase)
            .map(|v| v / figures::passes(cell, place.row, phase)),
        (false, None) => None,
    };
    match value.filter(|v| !(cell.zero_is_unmeasured && *v == 0.0)) {
        Some(v) => {
            let suffix = cell.suffix_for.get(&place.label).map_or("", String::as_str);
            (figures::written(cell, v) + suffix, Some(v))
        }
        None => ("-".into(), None),
    }
}

/// `engines`: a row per engine row, each followed by the extra rows made from it.
fn engine_rows(table: &ReportTable, run: &RunResult) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for row in &run.engines {
        let place = Place::of(row);
        rows.push(table.columns.iter().map(|c| cell(c, &place, table, run).0).collect());
        for extra in table.extra_rows.iter().filter(|x| follows(x, row)) {
            let label = placeholders::fill_row(&extra.label, &row.label, None);
            let place = Place { label, extra: Some(extra), ..Place::of(row) };
            let cells = table.columns.iter().map(|c| {
                if extra.blank.contains(&c.heading) {
                    "-".to_string()
                } else {
                    cell(c, &place, table, run).0
                }
            });
            rows.push(cells.collect());
        }
    }
    rows
}

/// Whether an extra row follows `row`: one of its labels, and the row declared the phase it
/// reads instead (a mode the binding lacks still gets its row, of dashes).
fn follows(extra: &ExtraRow, row: &EngineResult) -> bool {
    let first = extra.phases.values().next();
    extra.of.contains(&row.label) && first.is_some_and(|name| row.phases.iter().any(|p| &p.name == name))
}

/// The operation phases a row ran (not its open, close, reopen or settle steps), in the row's order.
fn timed(row: &EngineResult) -> impl Iterator<Item = &PhaseResult> {
    row.phases.iter().filter(|p| {
        !matches!(p.kind.as_str(), "settle" | "open" | "close" | "reopen")
            && matches!(p.status, Status::Ok | Status::Expected)
    })
}

/// `engine-phases`: a row per engine row and timed phase (of `phase_kind`, if given).
fn engine_phase_rows(table: &ReportTable, run: &RunResult) -> Vec<Vec<String>> {
    let kind_fits = |p: &PhaseResult| table.phase_kind.as_ref().is_none_or(|k| &p.kind == k);
    let mut rows = Vec::new();
    for row in &run.engines {
        for phase in timed(row).filter(|p| kind_fits(p)) {
            let place = Place { phase: Some(phase), ..Place::of(row) };
            rows.push(table.columns.iter().map(|c| cell(c, &place, table, run).0).collect());
        }
    }
    rows
}

/// `phases-by-engine`: a row per declared row, a column per engine row; with `smallest-bold`
/// each row's smallest figure in bold (the first of a tie).
fn phases_by_engine(table: &ReportTable, run: &RunResult) -> (Vec<String>, Vec<Vec<String>>) {
    let mut headers = vec![table.first_heading.clone()];
    headers.extend(run.engines.iter().map(|e| e.label.clone()));
    let rows = table
        .rows
        .iter()
        .map(|def| {
            let cells: Vec<(String, Option<f64>)> =
                run.engines.iter().map(|e| cell(def, &Place::of(e), table, run)).collect();
            std::iter::once(def.heading.clone()).chain(marked(cells, table.mark)).collect()
        })
        .collect();
    (headers, rows)
}

/// The cells' texts, the smallest figure in bold when the table marks it.
pub(super) fn marked(cells: Vec<(String, Option<f64>)>, mark: Mark) -> Vec<String> {
    let best = match mark {
        Mark::None => None,
        Mark::SmallestBold => cells
            .iter()
            .enumerate()
            .filter_map(|(i, (_, v))| v.map(|v| (i, v)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i),
    };
    cells
        .into_iter()
        .enumerate()
        .map(|(i, (text, _))| if Some(i) == best { format!("**{text}**") } else { text })
        .collect()
}
