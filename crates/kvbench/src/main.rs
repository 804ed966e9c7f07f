//! kvbench: honest benchmarks of key-value stores. The binary is glue: the command line,
//! the orchestration of workers, and the Rust worker itself (`kvbench worker`).

mod catalog;
mod orchestrate;
mod serve;
mod worker;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use kvbench_core::engine::SyncMode;
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
    /// List engines with version, capabilities, options, and why one is unavailable.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Render a result file.
    Report {
        file: PathBuf,
        #[arg(long, short, default_value = "table")]
        format: String,
        /// Write to this file instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Put two result files side by side: ops/s and p99 of each row and phase, and B/A.
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// table or markdown.
        #[arg(long, short, default_value = "table")]
        format: String,
    },
    /// Serve an embedded engine over HTTP/1.1 (what the http-* engines start; docs/servers.md).
    Serve {
        #[arg(long)]
        engine: String,
        /// Database directory opened at start (a client may open another with POST /open).
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
        /// Engine option k=v (repeatable).
        #[arg(long = "option")]
        options: Vec<String>,
        #[arg(long, value_parser = parse_sync, default_value = "commit")]
        sync: SyncMode,
        /// Worker threads taking requests.
        #[arg(long, default_value_t = 4)]
        threads: usize,
    },
    /// Execute one job (used by `kvbench run`; not for people).
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        job: PathBuf,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario file (TOML). Without it: the default comparison.
    scenario: Option<PathBuf>,
    /// Comma-separated engines (default: every available embedded engine).
    #[arg(long)]
    engines: Option<String>,
    #[arg(long)]
    records: Option<u64>,
    /// Fixed value size in bytes.
    #[arg(long)]
    value_size: Option<u32>,
    #[arg(long, value_parser = parse_key_kind)]
    key: Option<KeyKind>,
    /// Dataset: a generator (synthetic, json-docs, dictionary, rows) or data you bring
    /// (file:PATH.tsv, dir:PATH of <int>.json files).
    #[arg(long)]
    dataset: Option<String>,
    /// Key column of a file:PATH.tsv dataset (1-based).
    #[arg(long)]
    key_column: Option<usize>,
    /// Value column of a file:PATH.tsv dataset (1-based).
    #[arg(long)]
    value_column: Option<usize>,
    /// Named workload: default, readrandom, readseq, fillrandom, fillseq, overwrite.
    #[arg(long)]
    workload: Option<String>,
    /// Threads of the read phases.
    #[arg(long)]
    threads: Option<u32>,
    /// Open loop: offer get phases this many operations per second (latency counted from each
    /// operation's intended start, so coordinated omission is corrected).
    #[arg(long)]
    rate: Option<f64>,
    /// Records per write batch of the load phase.
    #[arg(long)]
    batch: Option<u32>,
    /// Durability: none, commit, always.
    #[arg(long, value_parser = parse_sync)]
    sync: Option<SyncMode>,
    /// Page cache before each read phase: warm or cold (evicted with posix_fadvise).
    #[arg(long, value_parser = parse_cache)]
    cache: Option<CacheMode>,
    #[arg(long)]
    seed: Option<u64>,
    #[arg(long)]
    repetitions: Option<u32>,
    /// Seconds one engine may take before its worker is killed.
    #[arg(long)]
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
}

fn parse_key_kind(s: &str) -> Result<KeyKind, String> {
    serde_json::from_value(serde_json::Value::String(s.into()))
        .map_err(|_| "key kinds: u32be, u64be, decimal, ycsb".into())
}
fn parse_sync(s: &str) -> Result<SyncMode, String> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| "sync: none, commit, always".into())
}
fn parse_cache(s: &str) -> Result<CacheMode, String> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| "cache: warm, cold".into())
}

/// Records of the default comparison: sized so `make run` takes well under a minute here.
const DEFAULT_RECORDS: u64 = 100_000;

fn build_scenario(a: &RunArgs) -> Result<Scenario, String> {
    let mut s = match &a.scenario {
        Some(p) => {
            if a.workload.is_some() {
                return Err("give either a scenario file or --workload, not both".into());
            }
            Scenario::from_file(p)?
        }
        None => {
            let name = a.workload.clone().unwrap_or_else(|| "default".into());
            let phases = scenario::workload(&name)?;
            let text = format!("name = {name:?}\nintent = \"kvbench run --workload {name}\"\n");
            let mut s: Scenario = toml::from_str(&text).map_err(|e| e.to_string())?;
            s.phases = phases;
            s.dataset.records = DEFAULT_RECORDS;
            // The quick comparison does not force data to disk (as db_bench's default): with
            // durable commits, Tokyo and Kyoto Cabinet alone take ~3 s per commit here. Every
            // table says `sync = none`; `--sync commit` measures durable commits.
            s.sync = SyncMode::None;
            s.engines = catalog::default_engines();
            s.timeout = 600;
            s
        }
    };
    if let Some(list) = &a.engines {
        let wanted: Vec<String> = list.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
        let all = s.all_variants();
        let mut kept = Vec::new();
        for w in &wanted {
            let matched: Vec<_> = all.iter().filter(|v| &v.name == w || &v.label() == w).cloned().collect();
            if matched.is_empty() {
                kept.push(kvbench_core::scenario::Variant {
                    name: w.clone(),
                    label: None,
                    options: Default::default(),
                    open: Default::default(),
                    sync: None,
                    url: None,
                });
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
    for p in s.phases.iter_mut() {
        // --threads and --rate apply to every phase after the load (mixed and writing phases
        // included: reads stay verified on every thread); the load keeps its own settings.
        if let (Some(t), false) = (a.threads, p.kind == PhaseKind::Load) {
            p.threads = Some(t);
        }
        if let (Some(r), false) = (a.rate, p.kind == PhaseKind::Load) {
            p.rate = Some(r);
        }
        if let (Some(b), PhaseKind::Load) = (a.batch, p.kind) {
            p.batch = Some(b);
        }
        if let Some(c) = a.cache {
            if p.kind != PhaseKind::Load {
                p.cache = c;
            }
        }
    }
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
    s.check()?;
    Ok(s)
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Cmd::Worker { job } => worker::main(&job),
        Cmd::Serve { engine, dir, listen, options, sync, threads } => {
            serve::main(serve::ServeArgs { engine, dir, listen, options, sync, threads })
        }
        Cmd::List { json } => {
            print!("{}", catalog::print_list(json));
            0
        }
        Cmd::Report { file, format, output } => report(&file, &format, output.as_deref()),
        Cmd::Compare { a, b, format } => compare(&a, &b, &format),
        Cmd::Run(a) => run(*a),
    };
    std::process::exit(code);
}

fn report(file: &std::path::Path, format: &str, output: Option<&std::path::Path>) -> i32 {
    let go = || -> Result<(), String> {
        let fmt: Format = format.parse()?;
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let r = RunResult::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let out = kvbench_report::render(&r, fmt);
        match output {
            Some(p) => std::fs::write(p, out).map_err(|e| format!("{}: {e}", p.display())),
            None => {
                print!("{out}");
                Ok(())
            }
        }
    };
    match go() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn compare(a: &std::path::Path, b: &std::path::Path, format: &str) -> i32 {
    let load = |p: &std::path::Path| -> Result<RunResult, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        RunResult::from_json(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let go = || -> Result<String, String> {
        let (ra, rb) = (load(a)?, load(b)?);
        let (pre, sections) = kvbench_report::compare(&ra, &rb);
        match format {
            "table" => Ok(kvbench_report::text_table(&pre, &sections)),
            "markdown" | "md" => Ok(kvbench_report::markdown_of(&pre, &sections)),
            other => Err(format!("compare formats: table, markdown (not `{other}`)")),
        }
    };
    match go() {
        Ok(out) => {
            print!("{out}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn run(a: RunArgs) -> i32 {
    let fmt: Format = match a.format.parse() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let s = match build_scenario(&a) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let opts = orchestrate::RunOptions {
        out_dir: a.out.clone(),
        data_dir: a.data_dir.clone(),
        plan_dir: a.plan_dir.clone(),
        keep_data: a.keep_data,
        progress: !a.no_progress,
        command: std::env::args().collect(),
    };
    match orchestrate::run(&s, &opts) {
        Ok((r, path)) => {
            print!("{}", kvbench_report::render(&r, fmt));
            eprintln!("result: {}", path.display());
            if orchestrate::interrupted() {
                eprintln!("interrupted by the user: the rows run so far are in the result");
                130
            } else if r.engines.iter().any(|e| e.status == Status::Failed) {
                eprintln!("some rows failed; see the status column");
                1
            } else {
                0
            }
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    }
}
