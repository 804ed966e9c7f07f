//! The exporters: a run's result rendered for people and tools (`report`, the formats a run
//! writes beside its result, HdrHistogram logs) and results compared (`compare`).

use std::path::{Path, PathBuf};

use kvbench_model::input;
use kvbench_model::result::RunResult;
use kvbench_report::{Format, ReportOptions};

use crate::{orchestrate, out};

/// `results/latest.json` when there is one (a dangling link too: reading it says what is wrong).
pub fn latest() -> Option<PathBuf> {
    let p = Path::new("results").join(orchestrate::LATEST);
    p.symlink_metadata().is_ok().then_some(p)
}

/// Read a result file; errors name the file.
pub fn load_result(path: &Path) -> Result<RunResult, String> {
    let text = input::read_regular_text(path, "result file", input::limits::RESULT_BYTES)?;
    RunResult::from_json(&text).map_err(|e| format!("result file {}: {e}", path.display()))
}

/// Write a report; errors name the path and the flag it came from.
fn write_output(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("--output {}: {e}", path.display()))
}

/// A report for people (table, Markdown) shows labels and intents from a file with their
/// control characters escaped, wherever it goes; data formats keep the bytes they were given.
pub fn rendered(result: &RunResult, fmt: Format, options: &ReportOptions) -> String {
    let text = kvbench_report::render_with(result, fmt, options);
    match fmt {
        Format::Table | Format::Markdown => kvbench_report::terminal_safe(&text).into_owned(),
        _ => text,
    }
}

pub fn report(file: &Path, format: &str, output: Option<&Path>, options: &ReportOptions) -> i32 {
    let go = || -> Result<Option<String>, String> {
        let fmt: Format = format.parse().map_err(|e| format!("--format: {e}"))?;
        let r = load_result(file)?;
        if fmt == Format::Hlog {
            return write_hlogs(&r, file, output).map(|()| None);
        }
        let out = rendered(&r, fmt, options);
        match output {
            Some(p) => write_output(p, &out).map(|()| None),
            None => Ok(Some(out)),
        }
    };
    match go() {
        Ok(Some(text)) => out::print_then(&text, 0),
        r => exit_code(r.map(|_| ())),
    }
}

/// `--format A,B,...`: the first is printed, the others written beside the result file.
pub fn formats(list: &str) -> Result<(Format, Vec<Format>), String> {
    let all = list.split(',').map(|f| f.trim().parse::<Format>()).collect::<Result<Vec<_>, _>>();
    let all = all.map_err(|e| format!("--format: {e}"))?;
    let (first, rest) = all.split_first().ok_or("--format: no format given")?;
    Ok((*first, rest.to_vec()))
}

/// One more format of a run, written beside its result file (`RUN.html`, `RUN.csv`, ...).
pub fn export_beside(run: &RunResult, result: &Path, fmt: Format, options: &ReportOptions) {
    let ext = match fmt {
        Format::Json => {
            crate::note!("json: {}", result.display());
            return;
        }
        Format::Hlog => {
            if let Err(e) = write_hlogs(run, result, None) {
                crate::note!("error: {e}");
            }
            return;
        }
        Format::Table => "txt",
        Format::Markdown => "md",
        Format::Csv => "csv",
        Format::Html => "html",
        Format::Ycsb => "ycsb.txt",
        Format::GithubActionBenchmark => "github-action-benchmark.json",
        Format::Bencher => "bencher.json",
    };
    let p = result.with_extension(ext);
    match std::fs::write(&p, rendered(run, fmt, options)) {
        Ok(()) => crate::note!("{ext}: {}", p.display()),
        Err(e) => crate::note!("error: --format: cannot write {}: {e}", p.display()),
    }
}

/// `.hlog` files into `output`, or a directory beside the result file.
pub fn write_hlogs(run: &RunResult, file: &Path, output: Option<&Path>) -> Result<(), String> {
    let dir = match output {
        Some(d) => d.to_path_buf(),
        None => file.with_file_name(format!(
            "{}-hlog",
            file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        )),
    };
    let files = kvbench_report::hlog_files(run);
    if files.is_empty() {
        return Err(format!("{}: no phase carries interval histograms", file.display()));
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("--output {}: {e}", dir.display()))?;
    for (name, text) in &files {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| format!("--output {}: {e}", p.display()))?;
    }
    crate::note!("{} interval logs in {}", files.len(), dir.display());
    Ok(())
}

pub fn exit_code(outcome: Result<(), String>) -> i32 {
    outcome.map_or_else(|e| out::exit_for(&e), |()| 0)
}

pub fn safe(text: String) -> String {
    kvbench_report::terminal_safe(&text).into_owned()
}

/// `gate`: --fail-if-slower's percentage and --strict. Every B is compared with A in turn.
pub fn compare(
    baseline: &Path,
    bs: &[PathBuf],
    format: &str,
    method: &kvbench_report::Method,
    gate: Option<(f64, bool)>,
) -> i32 {
    let go = || -> Result<i32, String> {
        let ra = load_result(baseline)?;
        let rbs = bs.iter().map(|b| load_result(b)).collect::<Result<Vec<_>, _>>()?;
        let out = match format {
            "table" | "markdown" | "md" => {
                let parts = rbs.iter().map(|rb| {
                    let (pre, sections) = kvbench_report::compare(&ra, rb, method);
                    match format {
                        "table" => kvbench_report::text_table_width(&pre, &sections, kvbench_report::terminal_width()),
                        _ => kvbench_report::markdown_of(&pre, &sections),
                    }
                });
                safe(parts.collect::<Vec<_>>().join("\n"))
            }
            "json" => {
                let mut all: Vec<_> = rbs.iter().map(|rb| kvbench_report::compare_json(&ra, rb, method)).collect();
                let j = if all.len() == 1 { all.remove(0) } else { serde_json::Value::Array(all) };
                serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"
            }
            other => return Err(format!("--format: compare prints table, markdown or json (not `{other}`)")),
        };
        if let Err(e) = out::stdout(&out) {
            return Ok(out::failed_output(&e));
        }
        let Some((pct, strict)) = gate else { return Ok(0) };
        let rows: Vec<_> = rbs.iter().flat_map(|rb| kvbench_report::compared(&ra, rb, method)).collect();
        let slow = kvbench_report::regressions(&rows, pct, strict);
        for c in &slow {
            crate::note!("regression: {} {}: {}", c.label, c.phase, c.text());
        }
        if slow.is_empty() {
            let ignored = kvbench_report::regressions(&rows, pct, true).len();
            let note = if ignored > 0 {
                format!(" ({ignored} unreliable ones ignored; --strict counts them)")
            } else {
                String::new()
            };
            crate::note!("no row is called slower than A by more than {pct}%{note}");
            Ok(0)
        } else {
            crate::note!("{} rows slower than A by more than {pct}% (--fail-if-slower)", slow.len());
            Ok(1)
        }
    };
    match go() {
        Ok(code) => code,
        Err(e) => {
            crate::note!("error: {e}");
            2
        }
    }
}
