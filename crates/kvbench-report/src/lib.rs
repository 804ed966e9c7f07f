//! kvbench-report: every view of a result file. It stands on the model alone and never
//! measures: what it shows is in the result (docs/results.md).
//!
//! Every format renders the same [`Section`] model, so the terminal table, Markdown and HTML
//! always agree; CSV, JSON, YCSB lines and `.hlog` interval logs are flat views of the canonical
//! JSON. Beside the per-run views ([`render`], [`render_with`]): [`compare()`] and its verdicts
//! across runs, the `[report]` table a scenario declares for the article or suite it reproduces
//! ([`own_table`]), the dashboard over a history ([`dashboard()`]), and the regime line that says
//! whether the data fit in memory ([`regime`]).
//!
//! A result rendered as Markdown: the summary names each row's space and load rate.
//!
//! ```
//! use kvbench_model::result::{EngineResult, PhaseResult, RunResult, Status};
//! use kvbench_report::{render, Format};
//!
//! let load = PhaseResult {
//!     name: "load".into(),
//!     kind: "load".into(),
//!     status: Status::Ok,
//!     ops: 1000,
//!     wall_ns: 2_000_000,
//!     elapsed_ns: 2_000_000,
//!     ops_per_sec: 500_000.0,
//!     ..Default::default()
//! };
//! let row = EngineResult {
//!     label: "lmdb".into(),
//!     engine: "lmdb".into(),
//!     status: Status::Ok,
//!     space_bytes: 192 << 10,
//!     phases: vec![load],
//!     ..Default::default()
//! };
//! let run = RunResult { scenario: "quick".into(), engines: vec![row], ..Default::default() };
//! let page = render(&run, Format::Markdown);
//! assert!(page.contains("| lmdb |") && page.contains("192.0 KiB"), "{page}");
//! ```

use kvbench_model::result::RunResult;

use phase_tables::DEFAULT_PERCENTILES;
use sections::{sections_of, Versions};

mod axis;
#[cfg(any(test, feature = "browser-test"))]
pub mod browser;
mod compare;
mod csv;
mod dashboard;
mod escape;
mod export;
mod hlog;
mod html;
mod human;
mod phase_tables;
mod regime;
mod repetitions;
mod sections;
mod svg;
mod tables;
mod text;
pub mod trend;
mod ycsb;

pub use compare::{
    compare, compare_json, compared, differences, rank_p, regressions, unreliable, verdict, Compared, Method, Verdict,
};
pub use csv::csv;
pub use dashboard::dashboard;
pub use escape::{csv_neutral, terminal_safe};
pub use export::{bencher, github_action_benchmark};
pub use hlog::hlog_files;
pub use tables::own_table;
pub use text::{fit_table, markdown_of, terminal_width, text_table, text_table_width};
pub use ycsb::ycsb;

pub(crate) use human::first_line;
pub use human::{human_bytes, human_ns, human_rate, short_version};
pub use phase_tables::{parse_percentiles, HARNESS_WARN};
pub(crate) use regime::preamble;
pub use regime::{regime, row_regime, trace_line};
pub(crate) use repetitions::{by_label, pooled_histogram};
pub use repetitions::{collapse, median, WIDE_SPREAD};
pub(crate) use sections::phase_names;
pub use sections::{sections, sections_with, space_measured, wall_ns, Section};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
    Html,
    /// YCSB's summary lines, so YCSB's parsers read kvbench results.
    Ycsb,
    /// HdrHistogram interval logs, one file per row, repetition and phase (needs `--output DIR`).
    Hlog,
    /// github-action-benchmark's `customBiggerIsBetter` JSON (ops/s per row and phase).
    GithubActionBenchmark,
    /// Bencher's metric format (throughput, p99, device bytes per op).
    Bencher,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(text: &str) -> Result<Format, String> {
        Ok(match text {
            "table" => Format::Table,
            "markdown" | "md" => Format::Markdown,
            "csv" => Format::Csv,
            "json" => Format::Json,
            "html" => Format::Html,
            "ycsb" => Format::Ycsb,
            "hlog" => Format::Hlog,
            "github-action-benchmark" => Format::GithubActionBenchmark,
            "bencher" => Format::Bencher,
            other => {
                return Err(format!(
                    "unknown format `{other}` (table, markdown, csv, json, html, ycsb, hlog, github-action-benchmark, bencher)"
                ))
            }
        })
    }
}

/// What the command line chose about a report, passed down to whatever renders it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// The percentiles the phase tables show, in percent, each in (0, 100] (`--percentiles`).
    pub percentiles: Vec<f64>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { percentiles: DEFAULT_PERCENTILES.to_vec() }
    }
}

impl ReportOptions {
    /// The options with `--percentiles` when it was given, the defaults otherwise.
    pub fn with_percentiles(list: Option<Vec<f64>>) -> Self {
        match list {
            Some(p) if !p.is_empty() => ReportOptions { percentiles: p },
            _ => ReportOptions::default(),
        }
    }
}

/// The report as one text with the default options (see [`render_with`]).
pub fn render(run: &RunResult, format: Format) -> String {
    render_with(run, format, &ReportOptions::default())
}

/// The report as one text. `Hlog` is a set of files: see [`hlog_files`]; here it lists them.
pub fn render_with(run: &RunResult, format: Format, options: &ReportOptions) -> String {
    match format {
        Format::Table => table(run, options),
        Format::Markdown => markdown(run, options),
        Format::Csv => csv(run),
        Format::Json => serde_json::to_string_pretty(run).expect("result serialises") + "\n",
        // A page has room for a whole version string; a table cell does not.
        Format::Html => html::page(run, &sections_of(run, options, Versions::Whole)),
        Format::Ycsb => ycsb(run),
        Format::Hlog => hlog_files(run).iter().map(|(name, _)| format!("{name}\n")).collect(),
        Format::GithubActionBenchmark => github_action_benchmark(run),
        Format::Bencher => bencher(run),
    }
}

/// The terminal table, fitted to the terminal's width when there is one.
pub fn table(run: &RunResult, options: &ReportOptions) -> String {
    text_table_width(&preamble(run), &sections_with(run, options), terminal_width())
}

pub fn markdown(run: &RunResult, options: &ReportOptions) -> String {
    markdown_of(&preamble(run), &sections_with(run, options))
}

#[cfg(test)]
mod chromium;

#[cfg(test)]
mod table_snapshots;

#[cfg(test)]
mod tests;
