//! kvbench: honest benchmarks of key-value stores. The binary is glue: the command line,
//! the orchestration of workers, and the Rust worker itself (`kvbench worker`).
// What kvbench prints goes through `out` (stdout) and `say!` (stderr): no write error panics.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod catalog;
mod hosts;
mod orchestrate;
mod out;
mod plan_cmd;
mod progress;
mod serve;
mod worker;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use kvbench_core::engine::SyncMode;
use kvbench_core::input;
use kvbench_core::result::{RunResult, Status};
use kvbench_core::scenario::{self, Scenario};
use kvbench_core::spec::{CacheMode, KeyKind, PhaseKind};
use kvbench_report::Format;

#[derive(Parser)]
#[command(
    name = "kvbench",
    version,
    about = "Honest benchmarks of key-value stores: same data, same operations, every read verified"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file, or the default comparison shaped by the flags.
    Run(Box<RunArgs>),
    /// Dry run: each phase's op counts by kind, records touched, key skew and sizes, without
    /// an engine (same flags as run); `--dump` prints every op as `kind record`.
    Plan(Box<PlanArgs>),
    /// List engines with version, capabilities, options, and why one is unavailable.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Render a result file: table, markdown, csv, json, html, ycsb, or hlog (HdrHistogram
    /// interval logs, one file per row, repetition and phase, written into a directory).
    Report {
        file: PathBuf,
        #[arg(long, short, default_value = "table")]
        format: String,
        /// Write to this file instead of stdout (for hlog: the directory; default FILE's name
        /// without .json, plus -hlog).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Compare two result files: per row and phase, ops/s of each, B/A and a verdict (Welch's
    /// t-test over the repetitions), and every setting that differs between the runs.
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// table, markdown or json.
        #[arg(long, short, default_value = "table")]
        format: String,
        /// Exit with status 1 when a row of B is significantly slower than A by more than PCT
        /// percent (a regression gate for CI).
        #[arg(long, value_name = "PCT", value_parser = non_negative_f64, allow_hyphen_values = true)]
        fail_if_slower: Option<f64>,
    },
    /// Serve an embedded engine over HTTP/1.1: RocksServer's API and kvbench's own (what the
    /// http-* engines start; docs/servers.md).
    Serve(serve::ServeArgs),
    /// Execute one job (used by `kvbench run`; not for people).
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        job: PathBuf,
    },
}

#[derive(clap::Args)]
struct PlanArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Print every operation, one `kind record` line each (scans: `scan position length`).
    #[arg(long)]
    dump: bool,
    /// Only this phase.
    #[arg(long)]
    phase: Option<String>,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario file (TOML). Without it: the default comparison.
    scenario: Option<PathBuf>,
    /// Comma-separated engines (default: every available embedded engine).
    #[arg(long)]
    engines: Option<String>,
    #[arg(long, value_parser = positive_u64, allow_hyphen_values = true)]
    records: Option<u64>,
    /// Fixed value size in bytes.
    #[arg(long, value_parser = positive_u32, allow_hyphen_values = true)]
    value_size: Option<u32>,
    #[arg(long, value_parser = parse_key_kind)]
    key: Option<KeyKind>,
    /// Dataset: a generator (synthetic, json-docs, dictionary, rows) or data you bring
    /// (file:PATH.tsv, dir:PATH of <int>.json files).
    #[arg(long)]
    dataset: Option<String>,
    /// Key column of a file:PATH.tsv dataset (1-based).
    #[arg(long, value_parser = column, allow_hyphen_values = true)]
    key_column: Option<usize>,
    /// Value column of a file:PATH.tsv dataset (1-based).
    #[arg(long, value_parser = column, allow_hyphen_values = true)]
    value_column: Option<usize>,
    /// Named workload: default, readrandom, readseq, fillrandom, fillseq, overwrite.
    #[arg(long)]
    workload: Option<String>,
    /// Threads of the read phases.
    #[arg(long, value_parser = positive_u32, allow_hyphen_values = true)]
    threads: Option<u32>,
    /// Open loop: offer get phases this many operations per second (latency counted from each
    /// operation's intended start, so coordinated omission is corrected).
    #[arg(long, value_parser = positive_f64, allow_hyphen_values = true)]
    rate: Option<f64>,
    /// Run each phase after the load for this long ("500ms", "90s", "10m", "1h") instead of
    /// its count (a phase's own `count` becomes a cap); phases that insert keep their count.
    #[arg(long, value_parser = parse_duration)]
    duration: Option<String>,
    /// Records per write batch of the load phase.
    #[arg(long, value_parser = positive_u32, allow_hyphen_values = true)]
    batch: Option<u32>,
    /// Durability: none, commit, always.
    #[arg(long, value_parser = parse_sync)]
    sync: Option<SyncMode>,
    /// Before each read phase: warm, cold (reopened, files evicted with posix_fadvise) or
    /// reopen (reopened, page cache kept).
    #[arg(long, value_parser = parse_cache)]
    cache: Option<CacheMode>,
    #[arg(long, value_parser = whole_u64, allow_hyphen_values = true)]
    seed: Option<u64>,
    #[arg(long, value_parser = positive_u32, allow_hyphen_values = true)]
    repetitions: Option<u32>,
    /// Memory budget of every row (`512MiB`, `2GiB`): the worker and the servers it uses run
    /// in a memory cgroup of this size, page cache included (cgroup v2 or v1, as root).
    #[arg(long, value_parser = parse_memory, value_name = "SIZE")]
    memory: Option<String>,
    /// Seconds one engine may take before its worker is killed.
    #[arg(long, value_parser = positive_u64, allow_hyphen_values = true)]
    timeout: Option<u64>,
    /// Where result files go.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Where databases are created (must be a real disk for honest numbers).
    #[arg(long, default_value = ".kvbench/data")]
    data_dir: PathBuf,
    /// Where plans are cached.
    #[arg(long, default_value = ".kvbench/plans")]
    plan_dir: PathBuf,
    /// Keep the databases after the run.
    #[arg(long)]
    keep_data: bool,
    /// Report format printed at the end.
    #[arg(long, short, default_value = "table")]
    format: String,
    #[arg(long)]
    no_progress: bool,
    /// Run even when the size guard estimates that the store would not fit on disk.
    #[arg(long)]
    no_size_check: bool,
    /// Run every row's worker on these hosts over SSH, started together: `[user@]host,...`.
    /// Each host gets its own directory; the report has a row per host (`LABEL@h1`, ...) and
    /// the merged row (histograms merged, ops/s over the common wall time, clock offsets).
    #[arg(long, value_name = "HOSTS")]
    hosts: Option<String>,
    /// SSH port of the --hosts.
    #[arg(long, value_parser = positive_u16, allow_hyphen_values = true)]
    ssh_port: Option<u16>,
    /// SSH private key for the --hosts (default: the user's keys and agent).
    #[arg(long, value_name = "FILE")]
    ssh_identity: Option<PathBuf>,
    /// More `ssh -o NAME=VALUE` options for the --hosts (repeatable), e.g. UserKnownHostsFile=FILE.
    #[arg(long = "ssh-option", value_name = "NAME=VALUE")]
    ssh_options: Vec<String>,
    /// Directory on the --hosts under which each run keeps its files (removed afterwards
    /// unless --keep-data).
    #[arg(long, default_value = "/tmp/kvbench-hosts", value_name = "DIR")]
    remote_dir: String,
    /// A kvbench already installed on the --hosts (default: this one is uploaded).
    #[arg(long, value_name = "PATH")]
    remote_kvbench: Option<String>,
}

/// A whole number of at least `min`, with an error that says so (negatives included).
fn at_least<T: std::str::FromStr + PartialOrd + std::fmt::Display>(s: &str, min: T) -> Result<T, String> {
    match s.trim().parse::<T>() {
        Ok(v) if v >= min => Ok(v),
        _ => Err(format!("must be a whole number >= {min} (got `{s}`)")),
    }
}
fn positive_u32(s: &str) -> Result<u32, String> {
    at_least(s, 1u32)
}
fn positive_u16(s: &str) -> Result<u16, String> {
    at_least(s, 1u16)
}
fn positive_u64(s: &str) -> Result<u64, String> {
    at_least(s, 1u64)
}
/// A column of a `file:` dataset: 1 to `limits::COLUMN`.
fn column(s: &str) -> Result<usize, String> {
    let max = kvbench_core::spec::limits::COLUMN;
    at_least(s, 1usize)
        .ok()
        .filter(|&c| c <= max)
        .ok_or_else(|| format!("must be a column from 1 to {max} (got `{s}`)"))
}
fn whole_u64(s: &str) -> Result<u64, String> {
    at_least(s, 0u64)
}
fn positive_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("must be a number > 0 (got `{s}`)")),
    }
}
/// `--duration`: checked with the scenario's own parser, kept as written.
fn parse_duration(s: &str) -> Result<String, String> {
    scenario::parse_duration_ms(s, 1, scenario::DURATION_MAX_MS).map(|_| s.to_string())
}
fn non_negative_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("must be a number >= 0 (got `{s}`)")),
    }
}

fn parse_memory(s: &str) -> Result<String, String> {
    kvbench_core::spec::parse_memory(s).map(|_| s.trim().to_string())
}

fn parse_key_kind(s: &str) -> Result<KeyKind, String> {
    serde_json::from_value(serde_json::Value::String(s.into()))
        .map_err(|_| "key kinds: u32be, u64be, decimal, ycsb".into())
}
fn parse_sync(s: &str) -> Result<SyncMode, String> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| "sync: none, commit, always".into())
}
fn parse_cache(s: &str) -> Result<CacheMode, String> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| "allowed: warm, cold, reopen".to_string())
}

/// Records of the default comparison: sized so `make run` takes well under a minute here.
const DEFAULT_RECORDS: u64 = 100_000;

/// The scenario a `run` or `plan` command line describes: a file or a named workload, then
/// the flags, which override it.
fn build_scenario(a: &RunArgs) -> Result<Scenario, String> {
    let mut s = base_scenario(a)?;
    if let Some(list) = &a.engines {
        keep_engines(&mut s, list);
    }
    dataset_flags(&mut s, a);
    phase_flags(&mut s, a);
    if let Some(x) = a.sync {
        s.sync = x;
    }
    if let Some(x) = a.seed {
        s.seed = x;
    }
    if let Some(x) = a.repetitions {
        s.repetitions = x;
    }
    if let Some(x) = a.timeout {
        s.timeout = x;
    }
    if let Some(m) = &a.memory {
        // The flag bounds every row, the scenario's own per-row budgets included.
        s.memory = Some(m.clone());
        s.variants.iter_mut().for_each(|v| v.memory = None);
    }
    s.check()?;
    Ok(s)
}

/// Where the rows' engines were named: the scenario file, unless `--engines` chose them.
fn engines_file(a: &RunArgs) -> Option<&std::path::Path> {
    a.scenario.as_deref().filter(|_| a.engines.is_none())
}

fn base_scenario(a: &RunArgs) -> Result<Scenario, String> {
    if let Some(p) = &a.scenario {
        if a.workload.is_some() {
            return Err("give either a scenario file or --workload, not both".into());
        }
        return Scenario::from_file(p);
    }
    let name = a.workload.clone().unwrap_or_else(|| "default".into());
    let phases = scenario::workload(&name)?;
    let text = format!("name = {name:?}\nintent = \"kvbench run --workload {name}\"\n");
    let mut s: Scenario = toml::from_str(&text).map_err(|e| e.to_string())?;
    s.phases = phases;
    s.dataset.records = DEFAULT_RECORDS;
    // The quick comparison does not force data to disk (as db_bench's default): with durable
    // commits, Tokyo and Kyoto Cabinet alone take seconds per commit. Every table says
    // `sync = none`; `--sync commit` measures durable commits.
    s.sync = SyncMode::None;
    s.engines = catalog::default_engines();
    s.timeout = 600;
    Ok(s)
}

/// `--engines`: the rows named (a scenario's variants by name or label, else a plain row).
fn keep_engines(s: &mut Scenario, list: &str) {
    let wanted: Vec<String> = list.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
    let all = s.all_variants();
    let mut kept = Vec::new();
    for w in &wanted {
        let matched: Vec<_> = all.iter().filter(|v| &v.name == w || &v.label() == w).cloned().collect();
        if matched.is_empty() {
            kept.push(kvbench_core::scenario::Variant { name: w.clone(), ..Default::default() });
        } else {
            kept.extend(matched);
        }
    }
    s.engines.clear();
    s.variants = kept;
    // A ratio between rows that were filtered out has nothing to compare.
    let labels: Vec<String> = s.variants.iter().map(|v| v.label()).collect();
    s.ratios.retain(|r| labels.contains(&r.numerator) && labels.contains(&r.denominator));
}

fn dataset_flags(s: &mut Scenario, a: &RunArgs) {
    if let Some(n) = a.records {
        s.dataset.records = n;
    }
    if let Some(v) = a.value_size {
        s.dataset.value.size = Some(v);
        s.dataset.value.min = None;
        s.dataset.value.max = None;
    }
    if let Some(k) = a.key {
        s.dataset.key.kind = k;
    }
    if let Some(d) = &a.dataset {
        if d.starts_with("file:") || d.starts_with("dir:") {
            s.dataset.source = Some(d.clone());
            s.dataset.generator = None;
        } else {
            s.dataset.generator = Some(d.clone());
            s.dataset.source = None;
        }
    }
    if a.key_column.is_some() {
        s.dataset.key_column = a.key_column;
    }
    if a.value_column.is_some() {
        s.dataset.value_column = a.value_column;
    }
}

/// --threads, --rate, --cache and --duration (not to phases that insert) apply to every phase
/// after the load (mixed and writing phases included: reads stay verified on every thread) but
/// settle phases, which run no operations; --batch to the load.
fn phase_flags(s: &mut Scenario, a: &RunArgs) {
    for p in s.phases.iter_mut().filter(|p| p.kind != PhaseKind::Settle) {
        let load = p.kind == PhaseKind::Load;
        if let (Some(t), false) = (a.threads, load) {
            p.threads = Some(t);
        }
        if let (Some(r), false) = (a.rate, load) {
            p.rate = Some(r);
        }
        if let (Some(b), true) = (a.batch, load) {
            p.batch = Some(b);
        }
        if let (Some(c), false) = (a.cache, load) {
            p.cache = c;
        }
        if let (Some(d), false) = (&a.duration, load || p.inserts()) {
            p.duration = Some(d.clone());
        }
    }
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Cmd::Worker { job } => worker::main(&job),
        Cmd::Serve(a) => serve::main(a),
        Cmd::List { json } => print_then(&catalog::print_list(json), 0),
        Cmd::Report { file, format, output } => report(&file, &format, output.as_deref()),
        Cmd::Compare { a, b, format, fail_if_slower } => compare(&a, &b, &format, fail_if_slower),
        Cmd::Run(a) => run(*a),
        Cmd::Plan(a) => dry_run(&a),
    };
    std::process::exit(code);
}

fn dry_run(a: &PlanArgs) -> i32 {
    let r = build_scenario(&a.run)
        .and_then(|s| catalog::check_names(&s, engines_file(&a.run)).map(|_| s))
        .and_then(|s| plan_cmd::main(&s, &a.run.plan_dir, a.dump, a.phase.as_deref()));
    r.map_or_else(|e| out::exit_for(&e), |()| 0)
}

/// Read a result file; errors name the file.
fn load_result(p: &Path) -> Result<RunResult, String> {
    let text = input::read_regular_text(p, "result file", input::limits::RESULT_BYTES)?;
    RunResult::from_json(&text).map_err(|e| format!("result file {}: {e}", p.display()))
}

/// Write a report; errors name the path and the flag it came from.
fn write_output(p: &Path, text: &str) -> Result<(), String> {
    std::fs::write(p, text).map_err(|e| format!("--output {}: {e}", p.display()))
}

/// `text` on stdout, then `code`; or the error and [`out::EXIT_OUTPUT`] when stdout fails.
fn print_then(text: &str, code: i32) -> i32 {
    match out::stdout(text) {
        Ok(()) => code,
        Err(e) => out::failed_output(&e),
    }
}

/// A report for people (table, Markdown) shows labels and intents from a file with their
/// control characters escaped, wherever it goes; data formats keep the bytes they were given.
fn rendered(r: &RunResult, fmt: Format) -> String {
    let text = kvbench_report::render(r, fmt);
    match fmt {
        Format::Table | Format::Markdown => kvbench_report::terminal_safe(&text).into_owned(),
        _ => text,
    }
}

fn report(file: &Path, format: &str, output: Option<&Path>) -> i32 {
    let go = || -> Result<Option<String>, String> {
        let fmt: Format = format.parse().map_err(|e| format!("--format: {e}"))?;
        let r = load_result(file)?;
        if fmt == Format::Hlog {
            return write_hlogs(&r, file, output).map(|()| None);
        }
        let out = rendered(&r, fmt);
        match output {
            Some(p) => write_output(p, &out).map(|()| None),
            None => Ok(Some(out)),
        }
    };
    match go() {
        Ok(Some(text)) => print_then(&text, 0),
        r => exit_code(r.map(|_| ())),
    }
}

/// `.hlog` files into `output`, or a directory beside the result file.
fn write_hlogs(r: &RunResult, file: &Path, output: Option<&Path>) -> Result<(), String> {
    let dir = match output {
        Some(d) => d.to_path_buf(),
        None => file.with_file_name(format!(
            "{}-hlog",
            file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        )),
    };
    let files = kvbench_report::hlog_files(r);
    if files.is_empty() {
        return Err(format!("{}: no phase carries interval histograms", file.display()));
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("--output {}: {e}", dir.display()))?;
    for (name, text) in &files {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| format!("--output {}: {e}", p.display()))?;
    }
    crate::say!("{} interval logs in {}", files.len(), dir.display());
    Ok(())
}

fn exit_code(r: Result<(), String>) -> i32 {
    r.map_or_else(|e| out::exit_for(&e), |()| 0)
}

fn safe(text: String) -> String {
    kvbench_report::terminal_safe(&text).into_owned()
}

fn compare(a: &Path, b: &Path, format: &str, fail_if_slower: Option<f64>) -> i32 {
    let go = || -> Result<i32, String> {
        let (ra, rb) = (load_result(a)?, load_result(b)?);
        let (pre, sections) = kvbench_report::compare(&ra, &rb);
        let out = match format {
            "table" => safe(kvbench_report::text_table_width(&pre, &sections, kvbench_report::terminal_width())),
            "markdown" | "md" => safe(kvbench_report::markdown_of(&pre, &sections)),
            "json" => serde_json::to_string_pretty(&kvbench_report::compare_json(&ra, &rb)).unwrap_or_default() + "\n",
            other => return Err(format!("--format: compare prints table, markdown or json (not `{other}`)")),
        };
        if let Err(e) = out::stdout(&out) {
            return Ok(out::failed_output(&e));
        }
        let Some(pct) = fail_if_slower else { return Ok(0) };
        let rows = kvbench_report::compared(&ra, &rb);
        let slow = kvbench_report::regressions(&rows, pct);
        for c in &slow {
            crate::say!("regression: {} {}: {}", c.label, c.phase, c.verdict.text());
        }
        if slow.is_empty() {
            crate::say!("no row is significantly slower than A by more than {pct}%");
            Ok(0)
        } else {
            crate::say!("{} rows slower than A by more than {pct}% (--fail-if-slower)", slow.len());
            Ok(1)
        }
    };
    match go() {
        Ok(code) => code,
        Err(e) => {
            crate::say!("error: {e}");
            2
        }
    }
}

/// `--hosts` and its SSH flags; the SSH flags alone are an error (they would do nothing).
fn hosts_of(a: &RunArgs) -> Result<Option<orchestrate::HostsRun>, String> {
    let Some(list) = &a.hosts else {
        if a.ssh_port.is_some() || a.ssh_identity.is_some() || !a.ssh_options.is_empty() || a.remote_kvbench.is_some() {
            return Err("--ssh-port, --ssh-identity, --ssh-option and --remote-kvbench need --hosts".into());
        }
        return Ok(None);
    };
    let hosts = hosts::parse_hosts(list)?;
    for o in &a.ssh_options {
        if !o.contains('=') || o.starts_with('=') {
            return Err(format!("--ssh-option `{o}`: expected NAME=VALUE"));
        }
    }
    if !a.remote_dir.starts_with('/') {
        return Err(format!("--remote-dir `{}`: must be an absolute path", a.remote_dir));
    }
    let ssh = hosts::Ssh {
        program: None,
        port: a.ssh_port,
        identity: a.ssh_identity.clone(),
        options: a.ssh_options.clone(),
    };
    Ok(Some(orchestrate::HostsRun::new(hosts, ssh, a.remote_dir.clone(), a.remote_kvbench.clone())))
}

/// The directories a run writes to exist and are writable; errors name the flag.
fn prepare_dirs(a: &RunArgs) -> Result<(), String> {
    for (flag, dir) in [("--out", &a.out), ("--data-dir", &a.data_dir), ("--plan-dir", &a.plan_dir)] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("{flag} {}: cannot create the directory: {e}", dir.display()))?;
        // A new file of a random name (O_EXCL), removed on drop: never one planted there.
        tempfile::Builder::new()
            .prefix(".kvbench-write-test-")
            .tempfile_in(dir)
            .map_err(|e| format!("{flag} {}: cannot write there: {e}", dir.display()))?;
    }
    Ok(())
}

/// Exit status of a run whose results could not go to `--out` and went to a fallback place.
const EXIT_FALLBACK: i32 = 3;

fn run(a: RunArgs) -> i32 {
    let fmt: Format = match a.format.parse() {
        Ok(f) => f,
        Err(e) => {
            crate::say!("error: {e}");
            return 2;
        }
    };
    let s = match build_scenario(&a)
        .and_then(|s| catalog::check_names(&s, engines_file(&a)).map(|_| s))
        .and_then(|s| prepare_dirs(&a).map(|_| s))
    {
        Ok(s) => s,
        Err(e) => {
            crate::say!("error: {e}");
            return 2;
        }
    };
    let hosts = match hosts_of(&a) {
        Ok(h) => h,
        Err(e) => {
            crate::say!("error: {e}");
            return 2;
        }
    };
    let opts = orchestrate::RunOptions {
        out_dir: a.out.clone(),
        data_dir: a.data_dir.clone(),
        plan_dir: a.plan_dir.clone(),
        keep_data: a.keep_data,
        progress: !a.no_progress,
        size_check: !a.no_size_check,
        command: std::env::args().collect(),
        hosts,
        scenario_file: a.scenario.clone(),
    };
    match orchestrate::run(&s, &opts) {
        Ok((r, written)) => {
            let path = &written.path;
            let mut printed = None;
            if fmt == Format::Hlog {
                if let Err(e) = write_hlogs(&r, path, None) {
                    crate::say!("error: {e}");
                }
            } else if let Err(e) = out::stdout(&rendered(&r, fmt)) {
                printed = Some(out::failed_output(&e));
            }
            crate::say!("result: {}", path.display());
            if let Some(sig) = orchestrate::process::stop_signal() {
                crate::say!("{}: the rows run so far are in the result", orchestrate::process::interruption());
                orchestrate::process::exit_status(sig)
            } else if let Some(code) = printed {
                code
            } else if let Some(why) = &written.fallback_because {
                crate::say!("error: --out {}: {why}; the results are in {}", a.out.display(), path.display());
                EXIT_FALLBACK
            } else if r.engines.iter().any(|e| e.status == Status::Failed) {
                crate::say!("some rows failed; see the status column");
                1
            } else {
                0
            }
        }
        Err(e) => {
            crate::say!("error: {e:#}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_the_write_probe_never_writes_through_a_planted_symlink() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        // The probe's old name was predictable: the process id.
        std::os::unix::fs::symlink(&victim, d.path().join(format!(".kvbench-write-test-{}", std::process::id())))
            .unwrap();
        let a = Cli::parse_from(["kvbench", "run", "--out", d.path().to_str().unwrap()]);
        let Cmd::Run(a) = a.command else { unreachable!() };
        let dirs = tempfile::tempdir().unwrap();
        let a = RunArgs { data_dir: dirs.path().join("data"), plan_dir: dirs.path().join("plans"), ..*a };
        prepare_dirs(&a).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }
}
