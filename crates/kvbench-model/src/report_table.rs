//! A scenario's own report table (`[report]`): the table an article or a peer's benchmark
//! printed, declared beside the phases that measure it. Columns (or rows) are bound to a phase
//! and a metric with the original's unit and rounding; rows are the scenario's engine rows (by
//! label); the differences from the original are text. The table travels in the result (the
//! scenario as run is its `workload`), so a report renders it without the scenario file, and a
//! copied or renamed scenario keeps it.
//!
//! A figure no metric gives (a ratio between two rows, a cell that depends on how a row was
//! built) is a *computed* cell or difference, named from [`COMPUTED_CELLS`] and
//! [`COMPUTED_DIFFERENCES`]; `{name}` in any text is one of [`PLACEHOLDERS`]. The report crate
//! implements exactly these names (a test there checks both lists agree).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::scenario::{At, FieldError};

/// `[report]`: the table, its note and the differences from the original.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportTable {
    pub title: String,
    /// The text between the title and the differences: what a cell is, the original's own
    /// figures. `{placeholders}` are filled from the result.
    #[serde(default)]
    pub note: String,
    /// Each a line under the note, in order: text, or `{ computed = "name" }` (none, one or
    /// several lines, from the figures).
    #[serde(default)]
    pub differences: Vec<Difference>,
    #[serde(default)]
    pub layout: Layout,
    /// `engine-phases`: only phases of this kind (`"mixed"`).
    #[serde(default)]
    pub phase_kind: Option<String>,
    /// The first column's heading in the layouts whose columns are the engine rows.
    #[serde(default)]
    pub first_heading: String,
    #[serde(default, rename = "column")]
    pub columns: Vec<Cell>,
    /// `phases-by-engine`: the table's rows, each a phase and metric (`heading` its name).
    #[serde(default, rename = "row")]
    pub rows: Vec<Cell>,
    /// `engines`: more rows made from a row with other phases (the original's per-mode rows).
    #[serde(default, rename = "extra_row")]
    pub extra_rows: Vec<ExtraRow>,
    /// What a cell shows when its phase did not run as measured.
    #[serde(default)]
    pub unmeasured: Unmeasured,
    /// `smallest-bold`: the smallest figure of each row in bold (the original marked it so).
    #[serde(default)]
    pub mark: Mark,
}

/// How the table's rows and columns map to the result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// A row per engine row, a column per `[[report.column]]`.
    #[default]
    Engines,
    /// A row per engine row and timed phase it ran (open, close and settle steps left out).
    EnginePhases,
    /// A row per `[[report.row]]`, a column per engine row.
    PhasesByEngine,
    /// A row per request size of the multi-get phases; per engine row, a column per
    /// `[[report.column]]` (each selecting a `cache`).
    KeysByEngine,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unmeasured {
    /// `-`.
    #[default]
    Dash,
    /// `n/a` for a phase the row could not run, `-` otherwise.
    NotApplicable,
    /// The phase's status as the result spells it (`failed`, `n/a`), `-` for a phase not run.
    Status,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    #[default]
    None,
    SmallestBold,
}

/// One line of the differences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Difference {
    Text(String),
    Computed(ComputedLine),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputedLine {
    pub computed: String,
}

/// A phase, or the first of several the row ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PhaseRef {
    One(String),
    FirstOf(Vec<String>),
}

impl PhaseRef {
    pub fn names(&self) -> &[String] {
        match self {
            PhaseRef::One(name) => std::slice::from_ref(name),
            PhaseRef::FirstOf(names) => names,
        }
    }
}

/// A column (or a row of `phases-by-engine`): a heading and what its cells show. A cell is
/// `text` (with `{label}`, `{phase}`, `{threads}`), a `computed` cell, or a `metric` of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    #[serde(default)]
    pub heading: String,
    /// 0: always shown; in a narrow terminal the highest numbers go first.
    #[serde(default)]
    pub priority: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<Metric>,
    /// The runtime or internal counter of `metric = "runtime"` / `"internal"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PhaseRef>,
    /// Another phase for the rows of these labels or engines (memcached's bulk read).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phase_for: BTreeMap<String, String>,
    /// Divide by the passes over every record the phase made: its operations over those of
    /// the first of these phases the row ran (an article's op is one pass).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_pass_of: Vec<String>,
    #[serde(default)]
    pub unit: Unit,
    #[serde(default)]
    pub rounding: Rounding,
    #[serde(default)]
    pub decimals: u8,
    /// Appended to a figure (`" ms"`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub suffix: String,
    /// Appended to the cells of the rows of these labels (a row measured another way).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub suffix_for: BTreeMap<String, String>,
    /// A zero is not measured: `-`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_is_unmeasured: bool,
    /// `keys-by-engine`: the phases of this cache (`cold` or `warm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
}

/// What a cell reads from a phase (or the row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Wall time of the phase, ns (the time inside the calls for results without one).
    Wall,
    /// Time inside the engine's calls, ns.
    Elapsed,
    Ops,
    Requests,
    OpsPerSec,
    /// Requests over the wall time: a scan counts once, as the peers count it.
    RequestsPerSec,
    LatencyMin,
    LatencyMean,
    LatencyP50,
    LatencyP95,
    LatencyP99,
    LatencyP999,
    /// From the phase's histogram.
    LatencyP9999,
    LatencyMax,
    CpuUser,
    CpuSys,
    /// Peak resident memory, bytes.
    MaxRss,
    /// The row's space on disk after the run, bytes.
    Space,
    /// Space on disk when the phase ended (allocated blocks), bytes.
    PhaseSpace,
    /// The lengths of the store's files summed when the phase ended, bytes (what a harness
    /// that adds up file sizes reports; a sparse or preallocated file counts its length).
    PhaseFileBytes,
    DiskRead,
    DiskWrite,
    /// Device bytes written over the records' bytes (phases that wrote records).
    WriteAmplification,
    /// Share of the phase's whole intervals that stalled, percent.
    StallPercent,
    /// A runtime counter (`counter = "alloc_bytes"`).
    Runtime,
    /// An engine internal (`counter = "pebble.read_amp"`).
    Internal,
}

impl Metric {
    /// Whether the metric reads the row, not a phase.
    pub fn of_row(self) -> bool {
        self == Metric::Space
    }
}

/// The unit a figure is shown in: times convert from ns, the others are shown as measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    #[default]
    Count,
    Ns,
    Us,
    Ms,
    S,
    Bytes,
}

/// How a figure is rounded, as the original printed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rounding {
    /// `decimals` digits after the point.
    #[default]
    Fixed,
    /// `decimals` digits at and above 1, that many significant digits below (`0.0733`).
    Significant,
    /// Bytes in the largest binary unit with one decimal (`3.0 MiB`, `512 B`).
    Binary,
    /// Bytes in the largest binary unit with `decimals` digits (`3.00 GiB`, `12.00 B`).
    BinaryFixed,
    /// `1m 26s`, or seconds with one decimal below a minute.
    Minutes,
}

/// `[[report.extra_row]]`: after each row of `of` (labels), a row named `label` (`{label}` is
/// the row's) reading `phases` instead, its `blank` columns `-`; only when the row ran (or
/// declared) the first replacement phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraRow {
    pub label: String,
    pub of: Vec<String>,
    pub phases: BTreeMap<String, String>,
    #[serde(default)]
    pub blank: Vec<String>,
}

/// The computed cells the report implements.
pub const COMPUTED_CELLS: [&str; 6] = [
    "space_after_write",
    "write_time_with_close",
    "fsync_on_off",
    "rate_over_insert_at_same_sync",
    "label_with_bolt_version",
    "cold_request_ms",
];

/// The computed differences the report implements.
pub const COMPUTED_DIFFERENCES: [&str; 25] = [
    "open_per_read_cost",
    "random_key_reads",
    "load_batches",
    "one_put_against_batches",
    "lmdb_one_transaction",
    "typed_keys",
    "open_mode_rows",
    "read_write_open_cost",
    "where_space_was_measured",
    "speedb_space_against_rocksdb",
    "lmdb_space",
    "cold_cache_method",
    "settled_before_eviction",
    "http_against_in_process",
    "insert_statements",
    "open_per_read_against_once",
    "cdb_builds",
    "declared_mismatches",
    "memcached_bulk_against_per_key",
    "passes_per_article_op",
    "overwrite_pass_values",
    "single_puts_against_one_batch",
    "record_size",
    "size_on_disk_against_records",
    "go_allocation_counters",
];

/// `{name}` in a note, a difference or a text cell, filled from the result.
pub const PLACEHOLDERS: [&str; 13] = [
    "records",
    "filesystem",
    "data_dir",
    "unique_records",
    "repetitions",
    "hot_key",
    "table_setting",
    "postgres_durability",
    "postgres_connection",
    "sync_settings",
    "label",
    "phase",
    "threads",
];

/// The placeholders a text cell may use (the row's and the phase's).
const ROW_PLACEHOLDERS: [&str; 3] = ["label", "phase", "threads"];

/// Longest title, note or difference text, in characters.
const TEXT_CHARS: usize = 4096;

/// Most digits after the point a cell may ask for.
const DECIMALS_MAX: u8 = 9;

fn err(path: &[At], message: impl Into<String>) -> FieldError {
    FieldError::new(path, message)
}

fn with(path: &[At], more: &[At]) -> Vec<At> {
    path.iter().chain(more).copied().collect()
}

impl ReportTable {
    /// Every field within its bounds and consistent with its layout; `at` is `[report]`'s path.
    pub fn check(&self, at: &[At]) -> Result<(), FieldError> {
        if self.title.trim().is_empty() {
            return Err(err(&with(at, &[At::Key("title")]), "is empty: the table needs a title"));
        }
        check_text(&self.title, &with(at, &[At::Key("title")]), false)?;
        check_text(&self.note, &with(at, &[At::Key("note")]), false)?;
        for (i, d) in self.differences.iter().enumerate() {
            let here = with(at, &[At::Key("differences"), At::Index(i)]);
            match d {
                Difference::Text(text) => check_text(text, &here, false)?,
                Difference::Computed(line) => check_name(&line.computed, &COMPUTED_DIFFERENCES, &here)?,
            }
        }
        self.check_layout(at)?;
        for (key, cells) in [("column", &self.columns), ("row", &self.rows)] {
            for (i, cell) in cells.iter().enumerate() {
                cell.check(&with(at, &[At::Key(key), At::Index(i)]), self.layout)?;
            }
        }
        for (i, extra) in self.extra_rows.iter().enumerate() {
            self.check_extra_row(extra, &with(at, &[At::Key("extra_row"), At::Index(i)]))?;
        }
        Ok(())
    }

    fn check_layout(&self, at: &[At]) -> Result<(), FieldError> {
        let by_row = self.layout == Layout::PhasesByEngine;
        let (needed, other) = if by_row { ("row", &self.columns) } else { ("column", &self.rows) };
        let declared = if by_row { &self.rows } else { &self.columns };
        if declared.is_empty() {
            return Err(err(
                &with(at, &[At::Key("layout")]),
                format!("layout {:?} needs at least one [[report.{needed}]]", self.layout),
            ));
        }
        if !other.is_empty() {
            let unused = if by_row { "column" } else { "row" };
            let m = format!("[[report.{unused}]] is not read by layout {:?} (its {needed}s are declared)", self.layout);
            return Err(err(&with(at, &[At::Key(unused)]), m));
        }
        if !self.extra_rows.is_empty() && self.layout != Layout::Engines {
            return Err(err(&with(at, &[At::Key("extra_row")]), "extra rows need layout = \"engines\""));
        }
        if self.phase_kind.is_some() && self.layout != Layout::EnginePhases {
            return Err(err(&with(at, &[At::Key("phase_kind")]), "phase_kind needs layout = \"engine-phases\""));
        }
        Ok(())
    }

    fn check_extra_row(&self, extra: &ExtraRow, at: &[At]) -> Result<(), FieldError> {
        check_text(&extra.label, &with(at, &[At::Key("label")]), true)?;
        if extra.of.is_empty() || extra.phases.is_empty() {
            return Err(err(at, "needs `of` (the labels it follows) and `phases` (old = new)"));
        }
        for name in &extra.blank {
            if !self.columns.iter().any(|c| &c.heading == name) {
                let headings: Vec<&str> = self.columns.iter().map(|c| c.heading.as_str()).collect();
                let m = format!("`{name}` is not a column (allowed: {})", headings.join(", "));
                return Err(err(&with(at, &[At::Key("blank")]), m));
            }
        }
        Ok(())
    }
}

impl Cell {
    fn check(&self, at: &[At], layout: Layout) -> Result<(), FieldError> {
        let kinds = [self.text.is_some(), self.computed.is_some(), self.metric.is_some()];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(err(at, "needs exactly one of `text`, `computed` or `metric`"));
        }
        check_text(&self.heading, &with(at, &[At::Key("heading")]), true)?;
        if let Some(text) = &self.text {
            check_text(text, &with(at, &[At::Key("text")]), true)?;
        }
        if let Some(name) = &self.computed {
            check_name(name, &COMPUTED_CELLS, &with(at, &[At::Key("computed")]))?;
        }
        if self.decimals > DECIMALS_MAX {
            let m = format!("{} is out of range (allowed: 0 to {DECIMALS_MAX})", self.decimals);
            return Err(err(&with(at, &[At::Key("decimals")]), m));
        }
        let Some(metric) = self.metric else { return Ok(()) };
        let counted = matches!(metric, Metric::Runtime | Metric::Internal);
        if counted != self.counter.is_some() {
            let m = "`counter` goes with metric = \"runtime\" or \"internal\", and only with them";
            return Err(err(&with(at, &[At::Key("counter")]), m));
        }
        // In engine-phases the row is the phase; elsewhere a phase metric names its phase.
        let needs_phase = !metric.of_row() && layout != Layout::EnginePhases && layout != Layout::KeysByEngine;
        if needs_phase && self.phase.is_none() {
            return Err(err(&with(at, &[At::Key("phase")]), format!("metric {metric:?} needs a `phase`")));
        }
        Ok(())
    }
}

fn check_name(name: &str, allowed: &[&str], at: &[At]) -> Result<(), FieldError> {
    if allowed.contains(&name) {
        return Ok(());
    }
    Err(err(at, format!("`{name}` is not a computed name (allowed: {})", allowed.join(", "))))
}

/// Bounded printable text whose `{placeholders}` are known (`row`: also the row's own).
fn check_text(text: &str, at: &[At], row: bool) -> Result<(), FieldError> {
    if text.chars().count() > TEXT_CHARS {
        return Err(err(at, format!("is {} characters long (allowed: at most {TEXT_CHARS})", text.chars().count())));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(err(at, "contains control characters (allowed: printable text and newlines)"));
    }
    for name in placeholders(text) {
        let known = if row { ROW_PLACEHOLDERS.contains(&name) } else { PLACEHOLDERS.contains(&name) };
        if !known {
            let allowed = if row { ROW_PLACEHOLDERS.join(", ") } else { PLACEHOLDERS.join(", ") };
            return Err(err(at, format!("`{{{name}}}` is not a placeholder (allowed: {allowed})")));
        }
    }
    Ok(())
}

/// The `{name}`s of a text: a brace pair around a lower-case word (other braces are text).
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let word = after.find('}').map(|close| &after[..close]);
        match word.filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_')) {
            Some(name) => {
                out.push(name);
                rest = &after[name.len() + 1..];
            }
            None => rest = after,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<ReportTable, String> {
        let t: ReportTable = toml::from_str(text).map_err(|e| e.to_string())?;
        t.check(&[At::Key("report")]).map_err(|e| e.to_string())?;
        Ok(t)
    }

    const ENGINES: &str = "title = \"t\"\n[[column]]\nheading = \"name\"\ntext = \"{label}\"\n";

    #[test]
    fn a_table_of_text_metric_and_computed_columns_parses() {
        let t = table(&format!(
            "{ENGINES}[[column]]\nheading = \"read\"\nphase = [\"a\", \"b\"]\nmetric = \"latency-mean\"\nunit = \"ms\"\n\
             decimals = 2\n[[column]]\nheading = \"x\"\ncomputed = \"fsync_on_off\"\n"
        ))
        .unwrap();
        assert_eq!(t.columns[1].phase.as_ref().map(|p| p.names().len()), Some(2));
        assert_eq!(t.columns[1].unit, Unit::Ms);
    }

    #[test]
    fn differences_mix_text_and_computed_lines() {
        let t = table(&format!("differences = [\"plain\", {{ computed = \"typed_keys\" }}]\n{ENGINES}")).unwrap();
        assert_eq!(t.differences[0], Difference::Text("plain".into()));
        assert!(matches!(&t.differences[1], Difference::Computed(c) if c.computed == "typed_keys"));
    }

    #[test]
    fn an_unknown_computed_name_is_refused_naming_the_field_and_the_allowed_names() {
        let e = table(&format!("{ENGINES}[[column]]\nheading = \"x\"\ncomputed = \"nope\"\n")).unwrap_err();
        assert!(e.contains("report.column[2].computed") && e.contains("fsync_on_off"), "{e}");
        let e = table(&format!("differences = [{{ computed = \"nope\" }}]\n{ENGINES}")).unwrap_err();
        assert!(e.contains("report.differences[1]") && e.contains("typed_keys"), "{e}");
    }

    #[test]
    fn a_metric_without_its_phase_or_counter_is_refused() {
        let e = table(&format!("{ENGINES}[[column]]\nheading = \"x\"\nmetric = \"wall\"\n")).unwrap_err();
        assert!(e.contains("report.column[2].phase"), "{e}");
        let e =
            table(&format!("{ENGINES}[[column]]\nheading = \"x\"\nphase = \"p\"\nmetric = \"runtime\"\n")).unwrap_err();
        assert!(e.contains("counter"), "{e}");
    }

    #[test]
    fn a_cell_with_two_sources_or_an_unknown_placeholder_is_refused() {
        let e = table(&format!("{ENGINES}[[column]]\nheading = \"x\"\ntext = \"a\"\ncomputed = \"fsync_on_off\"\n"))
            .unwrap_err();
        assert!(e.contains("exactly one of"), "{e}");
        let e = table(&format!("note = \"{{nope}} of {{records}}\"\n{ENGINES}")).unwrap_err();
        assert!(e.contains("report.note") && e.contains("`{nope}`") && e.contains("records"), "{e}");
        let e = table("title = \"t\"\n[[column]]\nheading = \"name\"\ntext = \"{records}\"\n").unwrap_err();
        assert!(e.contains("report.column[1].text") && e.contains("label, phase, threads"), "{e}");
    }

    #[test]
    fn a_layout_reads_only_its_own_declarations() {
        let e = table("title = \"t\"\nlayout = \"phases-by-engine\"\n").unwrap_err();
        assert!(e.contains("[[report.row]]"), "{e}");
        let e = table(&format!("{ENGINES}[[row]]\nheading = \"r\"\ntext = \"-\"\n")).unwrap_err();
        assert!(e.contains("report.row") && e.contains("not read"), "{e}");
        let e = table(&format!("{ENGINES}[[extra_row]]\nlabel = \"{{label}} x\"\nof = [\"a\"]\nphases = {{ a = \"b\" }}\nblank = [\"nope\"]\n"))
            .unwrap_err();
        assert!(e.contains("report.extra_row[1].blank") && e.contains("allowed: name"), "{e}");
    }

    #[test]
    fn a_bad_table_in_a_scenario_file_names_the_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let text = "engines = [\"memory\"]\n[[phase]]\nkind = \"load\"\n\n[report]\ntitle = \"t\"\n\n\
                    [[report.column]]\nheading = \"n\"\ntext = \"{label}\"\n\n[[report.column]]\nheading = \"x\"\n\
                    metric = \"wall\"\nphase = \"load\"\ndecimals = 12\n";
        std::fs::write(&path, text).unwrap();
        let e = crate::scenario::Scenario::from_file(&path).unwrap_err();
        assert!(e.contains("s.toml, line 16") && e.contains("report.column[2].decimals"), "{e}");
        assert!(e.contains("allowed: 0 to 9"), "{e}");
    }

    #[test]
    fn placeholders_are_brace_pairs_around_lower_case_words() {
        assert_eq!(placeholders("a {records} b {x} {} {Up} {phase}.t{threads}"), ["records", "x", "phase", "threads"]);
    }
}
