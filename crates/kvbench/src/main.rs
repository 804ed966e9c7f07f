//! kvbench: honest benchmarks of key-value stores. The binary is glue: the command line
//! (parsed here, turned into a scenario by `kvbench_model::flags`), the run (`orchestrate`),
//! the exporters (`export`), `kvbench serve` (`kvbench_serve`) and the Rust worker itself
//! (`kvbench worker`).
// What kvbench prints goes through `out` (stdout) and `note!` (stderr): no write error panics.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod catalog;
mod estimate;
mod export;
mod history;
mod hosts;
mod list_cache;
mod orchestrate;
mod out;
mod plan_cmd;
mod progress;
mod timeout;
mod trace_cmd;
mod worker;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use kvbench_model::engine::SyncMode;
use kvbench_model::flags::parse;
use kvbench_model::flags::{self, Flags, PerPhase};
use kvbench_model::result::Status;
use kvbench_model::scenario::{RepetitionOrder, Scenario, Warmup};
use kvbench_model::spec::{CacheMode, KeyKind};
use kvbench_report::{Format, ReportOptions};

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
    /// List engines, one a line, and why one is unavailable; `list ENGINE`: its capabilities
    /// and options.
    List {
        /// One engine: its capabilities and options with their defaults.
        engine: Option<String>,
        /// Print the list as JSON (every field, for scripts).
        #[arg(long)]
        json: bool,
    },
    /// Render a result file: table, markdown, csv, json, html, ycsb, hlog (HdrHistogram
    /// interval logs, one file per row, repetition and phase, written into a directory),
    /// github-action-benchmark or bencher.
    Report {
        /// The result file (JSON) a run wrote (default: results/latest.json, the newest run
        /// written to results/).
        file: Option<PathBuf>,
        /// table, markdown, csv, json, html, ycsb, hlog, github-action-benchmark or bencher.
        #[arg(long, short, default_value = "table")]
        format: String,
        /// Latency percentiles of the phase tables (default 50,95,99,99.9).
        #[arg(long, value_name = "P,P,...", value_parser = kvbench_report::parse_percentiles)]
        percentiles: Option<Percentiles>,
        /// Write to this file instead of stdout (for hlog: the directory; default FILE's name
        /// without .json, plus -hlog).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Compare two result files: per row and phase, ops/s of each, B/A and a verdict (ratio of
    /// medians with a bootstrap interval over the repetitions, beyond a noise floor), and every
    /// setting that differs between the runs.
    Compare {
        /// The baseline run.
        a: PathBuf,
        /// The runs compared with it (each against A, in turn).
        #[arg(required = true, num_args = 1..)]
        b: Vec<PathBuf>,
        /// table, markdown or json.
        #[arg(long, short, default_value = "table")]
        format: String,
        /// Exit with status 1 when a row of B is called slower than A by more than PCT percent
        /// (a regression gate for CI); unreliable verdicts never fail it unless --strict.
        #[arg(long, value_name = "PCT", value_parser = parse::non_negative_f64, allow_hyphen_values = true)]
        fail_if_slower: Option<f64>,
        /// Smallest difference called, in percent (the noise floor is at least this).
        #[arg(long, value_name = "PCT", default_value = "5", value_parser = parse::non_negative_f64, allow_hyphen_values = true)]
        min_effect: f64,
        /// Let --fail-if-slower fail on verdicts marked unreliable (busy machine, debug build,
        /// different machines, the same run twice).
        #[arg(long)]
        strict: bool,
    },
    /// The results store: runs appended with `run --history`, listed; with --label/--phase,
    /// each figure's trend over the runs with its steps (lasting changes of level).
    History(history::HistoryArgs),
    /// Write the results store as a static, offline page: an index of phases and engines, the
    /// changes, per phase a chart per metric with the engines as lines, and an engine filter.
    Dashboard(history::DashboardArgs),
    /// Serve an embedded engine over HTTP/1.1: RocksServer's API and kvbench's own (what the
    /// http-* engines start; docs/servers.md).
    Serve(kvbench_serve::ServeArgs),
    /// Traces: `describe` a recorded operation stream (ops by kind, key popularity and its
    /// Zipf exponent, sizes, rate, working set); `fit` writes a scenario that reproduces it.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCmd),
    /// Execute one job (used by `kvbench run`; not for people).
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        job: PathBuf,
    },
}

#[derive(clap::Args)]
#[group(skip)]
struct PlanArgs {
    #[command(flatten)]
    scen: ScenarioArgs,
    /// Print every operation, one `kind record` line each (scans: `scan position length`).
    #[arg(long)]
    dump: bool,
    /// Only this phase.
    #[arg(long)]
    phase: Option<String>,
}

/// The flags that shape the scenario: `run` and `plan` take them alike.
// No group: clap's usage line would list every flag of a group as an alternative.
#[derive(clap::Args)]
#[group(skip)]
struct ScenarioArgs {
    /// Scenario file (TOML). Without it: the default comparison.
    scenario: Option<PathBuf>,
    /// Comma-separated engines; `all`: every available embedded engine (default: one engine
    /// per storage design and runtime, `kvbench list` marks them).
    #[arg(long)]
    engines: Option<String>,
    /// Records of the dataset (the load writes each once; phases without a count touch each once).
    #[arg(long, value_parser = parse::positive_u64, allow_hyphen_values = true)]
    records: Option<u64>,
    /// Fixed value size in bytes.
    #[arg(long, value_parser = parse::positive_u32, allow_hyphen_values = true)]
    value_size: Option<u32>,
    /// Key format: u32be, u64be (big-endian record number), decimal (zero-padded), ycsb, random
    /// (16 random-looking bytes) or db-bench (db_bench's: 8 big-endian bytes padded with `0`).
    #[arg(long, value_parser = parse::key_kind)]
    key: Option<KeyKind>,
    /// Dataset: a generator (synthetic, json-docs, dictionary, rows) or data you bring
    /// (file:PATH.tsv, dir:PATH of <int>.json files).
    #[arg(long)]
    dataset: Option<String>,
    /// Key column of a file:PATH.tsv dataset (1-based).
    #[arg(long, value_parser = parse::column, allow_hyphen_values = true)]
    key_column: Option<usize>,
    /// Value column of a file:PATH.tsv dataset (1-based).
    #[arg(long, value_parser = parse::column, allow_hyphen_values = true)]
    value_column: Option<usize>,
    /// Named workload: default, readrandom, readseq, fillrandom, fillseq, overwrite.
    #[arg(long)]
    workload: Option<String>,
    /// Threads of every phase after the load (mixed and writing phases included).
    #[arg(long, value_parser = parse::positive_u32, allow_hyphen_values = true)]
    threads: Option<u32>,
    /// Open loop: offer every phase after the load this many operations per second (latency
    /// counted from each operation's intended start, so coordinated omission is corrected).
    #[arg(long, value_parser = parse::positive_f64, allow_hyphen_values = true)]
    rate: Option<f64>,
    /// Operations of every phase after the load, or PHASE=N for one (repeatable): gets, multi-get
    /// requests, scans of the phase's length; a full-scan phase stays one scan unless named.
    #[arg(long, value_name = "N|PHASE=N", value_parser = parse::ops)]
    ops: Vec<PerPhase<u64>>,
    /// Run each phase after the load for this long ("500ms", "90s", "10m", "1h"), or
    /// PHASE=DURATION for one (repeatable); a count becomes a cap; phases that insert keep their count.
    #[arg(long, value_name = "DURATION|PHASE=DURATION", value_parser = parse::duration)]
    duration: Vec<PerPhase<String>>,
    /// Untimed operations before every read phase, counted as --ops counts (full-scan phases
    /// only when named): a count or a duration ("5s"), or PHASE=... for one (repeatable).
    #[arg(long, value_name = "N|DURATION|PHASE=...", value_parser = parse::warmup)]
    warmup: Vec<PerPhase<Warmup>>,
    /// An engine option on every row of ENGINE (name or label), checked as a scenario's
    /// options are (repeatable): `--set rocksdb.compression=zstd`.
    #[arg(short = 'O', long = "set", value_name = "ENGINE.OPTION=VALUE")]
    options: Vec<String>,
    /// The old spelling of --set, refused with the new one named.
    #[arg(long = "option", hide = true, value_parser = parse::old_option)]
    _old_option: Vec<String>,
    /// A running server for the rows of a server engine instead of one kvbench starts
    /// (repeatable): `--url redis=redis://127.0.0.1:6379`; `--url postgres=env:PG_URL` or
    /// `file:PATH` keeps a password off the command line.
    #[arg(long = "url", value_name = "ENGINE=URL")]
    urls: Vec<String>,
    /// Records per write batch of the load phase.
    #[arg(long, value_parser = parse::positive_u32, allow_hyphen_values = true)]
    batch: Option<u32>,
    /// Durability: none, commit, always.
    #[arg(long, value_parser = parse::sync)]
    sync: Option<SyncMode>,
    /// Before each phase after the load: warm, cold (reopened, files evicted with
    /// posix_fadvise) or reopen (reopened, page cache kept).
    #[arg(long, value_parser = parse::cache)]
    cache: Option<CacheMode>,
    /// Seed of every generator: the same seed gives the same keys, values and operations.
    #[arg(long, value_parser = parse::whole_u64, allow_hyphen_values = true)]
    seed: Option<u64>,
    /// Runs of every row (reports give the median and spread; compare needs two or more).
    #[arg(long, value_parser = parse::positive_u32, allow_hyphen_values = true)]
    repetitions: Option<u32>,
    /// One row per value: `ENGINE.OPTION=V1,V2,...`, `sync=`, `memory=`, `threads=` or `batch=` (repeatable);
    /// rows labelled `LABEL PARAMETER=VALUE`, each with a verdict against the first value.
    #[arg(long, value_name = "PARAMETER=V1,V2")]
    vary: Vec<String>,
    /// Order of the repetitions: interleaved (round by round, row order rotated each round, so
    /// drift hits every row alike; the default) or sequential (each row's back to back).
    #[arg(long, value_parser = parse::order)]
    order: Option<RepetitionOrder>,
    /// Memory budget of every row (`512MiB`, `2GiB`): the worker and the servers it uses run
    /// in a memory cgroup of this size, page cache included (cgroup v2 or v1, as root).
    #[arg(long, value_parser = parse::memory, value_name = "SIZE")]
    memory: Option<String>,
    /// Where result files go (`plan` reads the earlier ones there for its estimate).
    #[arg(short = 'o', long = "output", visible_alias = "out", default_value = "results", value_parser = parse::output_dir)]
    out: PathBuf,
    /// Where plans are cached.
    #[arg(long, default_value = ".kvbench/plans")]
    plan_dir: PathBuf,
    /// Replay this trace on every row (a RocksDB trace file, Redis MONITOR output, memcached
    /// `watch` output or a cache-trace CSV): the keys it reads before writing are loaded, then
    /// its operations run as recorded, every read verified.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Format of the --trace file: rocksdb, redis-monitor, memcached-watch or cache-csv
    /// (default: recognised from its first bytes).
    #[arg(long, value_name = "FORMAT")]
    trace_format: Option<String>,
    /// Replay at the recorded times divided by N (open loop; 2 is twice as fast); without it a
    /// replay is closed-loop, each request as soon as the last returned.
    #[arg(long, value_name = "N", value_parser = parse::positive_f64, allow_hyphen_values = true)]
    speed: Option<f64>,
}

/// `run`: the scenario's flags, then what only a run does.
#[derive(clap::Args)]
#[group(skip)]
struct RunArgs {
    #[command(flatten)]
    scen: ScenarioArgs,
    /// Start a run estimated at over 10 min without asking (a run without a terminal stops
    /// there otherwise).
    #[arg(long)]
    yes: bool,
    /// Seconds every row's worker may take before it is killed, as given (without it: the
    /// scenario's timeout, lengthened for a row larger than its memory budget or estimated longer).
    #[arg(long, value_parser = parse::positive_u64, allow_hyphen_values = true)]
    timeout: Option<u64>,
    /// Classpath of the YCSB bindings that `ycsb:CLASS` rows load in the Java worker
    /// (`JAR:DIR/*:...`; `DIR/*` is every jar in DIR), beside the worker's own.
    #[arg(long, value_name = "CLASSPATH")]
    classpath: Option<String>,
    /// Also append the run to this results store (SQLite; `kvbench history`, `dashboard`);
    /// without PATH, history.sqlite in the --output directory.
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    history: Option<Option<PathBuf>>,
    /// Where databases are created (must be a real disk for honest numbers).
    #[arg(long, default_value = ".kvbench/data")]
    data_dir: PathBuf,
    /// Keep the databases after the run.
    #[arg(long)]
    keep_data: bool,
    /// Report formats, comma-separated: table, markdown, csv, json, html, ycsb, hlog,
    /// github-action-benchmark or bencher; the first printed at the end, the others written
    /// beside the result file.
    #[arg(long, short, default_value = "table")]
    format: String,
    /// No live progress line on stderr.
    #[arg(long)]
    no_progress: bool,
    /// Latency percentiles of the phase tables (default 50,95,99,99.9).
    #[arg(long, value_name = "P,P,...", value_parser = kvbench_report::parse_percentiles)]
    percentiles: Option<Percentiles>,
    /// Where stderr is not a terminal (CI logs): a status line every SECS seconds (0: none).
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = parse::whole_u64, allow_hyphen_values = true)]
    status_interval: u64,
    /// Run even when the size guard estimates that the store would not fit on disk.
    #[arg(long)]
    no_size_check: bool,
    /// Run every row's worker on these hosts over SSH, started together: `[user@]host,...`.
    /// Each host gets its own directory; the report has a row per host (`LABEL@h1`, ...) and
    /// the merged row (histograms merged, ops/s over the common wall time, clock offsets).
    #[arg(long, value_name = "HOSTS")]
    hosts: Option<String>,
    /// SSH port of the --hosts.
    #[arg(long, value_parser = parse::positive_u16, allow_hyphen_values = true)]
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

/// A run's flags read the scenario's as its own (`a.out`, `a.scenario`).
impl std::ops::Deref for RunArgs {
    type Target = ScenarioArgs;
    fn deref(&self) -> &ScenarioArgs {
        &self.scen
    }
}

/// `--percentiles`: a list for clap, which would otherwise take `Vec` as a repeated flag.
type Percentiles = Vec<f64>;

impl ScenarioArgs {
    /// The scenario these flags describe, translated beside the model ([`flags::build`]);
    /// `timeout` is a run's flag alone.
    fn scenario(&self, timeout: Option<u64>) -> Result<Scenario, String> {
        let mut s = flags::build(&self.flags(timeout), &catalog::Engines)?;
        for added in s.settle_before_reads() {
            crate::note!("added {added}");
        }
        Ok(s)
    }

    fn flags(&self, timeout: Option<u64>) -> Flags {
        Flags {
            scenario: self.scenario.as_deref().map(catalog::scenario_path),
            engines: self.engines.clone(),
            records: self.records,
            value_size: self.value_size,
            key: self.key,
            dataset: self.dataset.clone(),
            key_column: self.key_column,
            value_column: self.value_column,
            workload: self.workload.clone(),
            threads: self.threads,
            rate: self.rate,
            ops: self.ops.clone(),
            duration: self.duration.clone(),
            warmup: self.warmup.clone(),
            options: self.options.clone(),
            urls: self.urls.clone(),
            batch: self.batch,
            sync: self.sync,
            cache: self.cache,
            seed: self.seed,
            repetitions: self.repetitions,
            vary: self.vary.clone(),
            order: self.order,
            memory: self.memory.clone(),
            timeout,
            trace: self.trace.clone(),
            trace_format: self.trace_format.clone(),
            speed: self.speed,
        }
    }
}

/// Where the rows' engines were named: the scenario file, unless `--engines` chose them.
fn engines_file(scenario: &ScenarioArgs) -> Option<&std::path::Path> {
    scenario.scenario.as_deref().filter(|_| scenario.engines.is_none())
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Cmd::Worker { job } => worker::main(&job),
        Cmd::Serve(a) => kvbench_serve::main(a, out::note),
        Cmd::List { engine, json } => match catalog::print_list(engine.as_deref(), json) {
            Ok(text) => out::print_then(&text, 0),
            Err(e) => out::exit_for(&e),
        },
        Cmd::Report { file, format, output, percentiles } => match file.or_else(export::latest) {
            Some(file) => {
                let o = ReportOptions::with_percentiles(percentiles);
                export::report(&file, &format, output.as_deref(), &o)
            }
            None => out::exit_for(
                "no result file given, and no results/latest.json here (each run points it at its result)",
            ),
        },
        Cmd::Compare { a, b, format, fail_if_slower, min_effect, strict } => {
            let m = kvbench_report::Method { min_effect: min_effect / 100.0, ..Default::default() };
            export::compare(&a, &b, &format, &m, fail_if_slower.map(|p| (p, strict)))
        }
        Cmd::Run(a) => run(*a),
        Cmd::Plan(a) => dry_run(&a),
        Cmd::History(a) => text_or_error(history::history_cmd(&a)),
        Cmd::Trace(t) => text_or_error(trace_cmd::main(&t)),
        Cmd::Dashboard(a) => text_or_error(history::dashboard_cmd(&a)),
    };
    std::process::exit(code);
}

/// Print `outcome`'s text (exit 0) or its error (exit as the error says).
fn text_or_error(outcome: Result<String, String>) -> i32 {
    match outcome {
        Ok(text) => out::stdout(&export::safe(text)).map_or_else(|e| out::failed_output(&e), |()| 0),
        Err(e) => out::exit_for(&e),
    }
}

fn dry_run(args: &PlanArgs) -> i32 {
    let r =
        args.scen.scenario(None).and_then(|s| catalog::check_names(&s, engines_file(&args.scen)).map(|_| s)).and_then(
            |s| {
                plan_cmd::main(&s, &args.scen.plan_dir, args.dump, args.phase.as_deref())?;
                // The whole run's estimate, however short, and each phase's, unless every op was
                // asked for.
                let e = estimate::estimate(&s, &args.scen.out);
                match (e.line(&args.scen.out, 0.0), e.by_phase()) {
                    (Some(line), Some(phases)) if !args.dump => out::stdout(&format!("{line}\n{phases}\n")),
                    _ => Ok(()),
                }
            },
        );
    r.map_or_else(|e| out::exit_for(&e), |()| 0)
}

/// `--hosts` and its SSH flags; the SSH flags alone are an error (they would do nothing).
fn hosts_of(args: &RunArgs) -> Result<Option<orchestrate::HostsRun>, String> {
    let Some(list) = &args.hosts else {
        if args.ssh_port.is_some()
            || args.ssh_identity.is_some()
            || !args.ssh_options.is_empty()
            || args.remote_kvbench.is_some()
        {
            return Err("--ssh-port, --ssh-identity, --ssh-option and --remote-kvbench need --hosts".into());
        }
        return Ok(None);
    };
    let hosts = hosts::parse_hosts(list)?;
    for o in &args.ssh_options {
        if !o.contains('=') || o.starts_with('=') {
            return Err(format!("--ssh-option `{o}`: expected NAME=VALUE"));
        }
    }
    if !args.remote_dir.starts_with('/') {
        return Err(format!("--remote-dir `{}`: must be an absolute path", args.remote_dir));
    }
    let ssh = hosts::Ssh {
        program: None,
        port: args.ssh_port,
        identity: args.ssh_identity.clone(),
        options: args.ssh_options.clone(),
    };
    Ok(Some(orchestrate::HostsRun::new(hosts, ssh, args.remote_dir.clone(), args.remote_kvbench.clone())))
}

/// The directories a run writes to exist and are writable; errors name the flag.
fn prepare_dirs(args: &RunArgs) -> Result<(), String> {
    for (flag, dir) in [("--output", &args.out), ("--data-dir", &args.data_dir), ("--plan-dir", &args.plan_dir)] {
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

/// Exit status of a run whose results could not all go where asked: to a fallback place
/// instead of `--out`, or not into the `--history` store.
const EXIT_FALLBACK: i32 = 3;

fn run(args: RunArgs) -> i32 {
    let (fmt, exports) = match export::formats(&args.format) {
        Ok(f) => f,
        Err(e) => {
            crate::note!("error: {e}");
            return 2;
        }
    };
    let ycsb_classpath = match args.classpath.as_deref().map(catalog::checked_classpath).transpose() {
        Ok(cp) => cp,
        Err(e) => {
            crate::note!("error: {e}");
            return 2;
        }
    };
    let s = match args
        .scen
        .scenario(args.timeout)
        .and_then(|s| catalog::check_names(&s, engines_file(&args)).map(|_| s))
        .and_then(|s| prepare_dirs(&args).map(|_| s))
    {
        Ok(s) => s,
        Err(e) => {
            crate::note!("error: {e}");
            return 2;
        }
    };
    let hosts = match hosts_of(&args) {
        Ok(h) => h,
        Err(e) => {
            crate::note!("error: {e}");
            return 2;
        }
    };
    progress::set_status_interval(args.status_interval);
    let report_opts = ReportOptions::with_percentiles(args.percentiles.clone());
    let guess = estimate::estimate(&s, &args.out);
    if let Some(line) = guess.line(&args.out, estimate::ANNOUNCE_S) {
        crate::note!("{line}");
    }
    if let Err(e) = estimate::confirm(&guess, args.yes) {
        crate::note!("error: {e}");
        return 2;
    }
    let opts = orchestrate::RunOptions {
        out_dir: args.out.clone(),
        data_dir: args.data_dir.clone(),
        plan_dir: args.plan_dir.clone(),
        keep_data: args.keep_data,
        progress: !args.no_progress,
        size_check: !args.no_size_check,
        command: std::env::args().collect(),
        hosts,
        scenario_file: args.scenario.as_deref().map(catalog::scenario_path),
        row_estimates: guess.rows.clone(),
        ycsb_classpath,
    };
    match orchestrate::run(&s, &opts) {
        Ok((r, written)) => {
            let path = &written.path;
            let mut printed = None;
            if fmt == Format::Hlog {
                if let Err(e) = export::write_hlogs(&r, path, None) {
                    crate::note!("error: {e}");
                }
            } else if let Err(e) = out::stdout(&export::rendered(&r, fmt, &report_opts)) {
                printed = Some(out::failed_output(&e));
            }
            exports.iter().for_each(|f| export::export_beside(&r, path, *f, &report_opts));
            crate::note!("result: {}", path.display());
            // A run whose history append failed exits non-zero: a CI job sees the gap in its
            // store (the results themselves are in the result file).
            let history_failed = args.history.as_ref().is_some_and(|h| {
                let store = history::store_of_run(h.as_deref(), &args.out);
                history::record(&store, &r, path)
                    .map_err(|e| crate::note!("error: --history: {e}; the results are in {}", path.display()))
                    .is_err()
            });
            if let Some(sig) = orchestrate::process::stop_signal() {
                crate::note!("{}: the rows run so far are in the result", orchestrate::process::interruption());
                orchestrate::process::exit_status(sig)
            } else if let Some(code) = printed {
                code
            } else if let Some(why) = &written.fallback_because {
                crate::note!("error: --output {}: {why}; the results are in {}", args.out.display(), path.display());
                EXIT_FALLBACK
            } else if history_failed {
                EXIT_FALLBACK
            } else if r.engines.iter().any(|e| e.status == Status::Failed) {
                crate::note!("some rows failed; see the status column");
                1
            } else {
                0
            }
        }
        Err(e) => {
            crate::note!("error: {e:#}");
            2
        }
    }
}

#[cfg(test)]
mod help_tests;

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
        let mut a = *a;
        (a.data_dir, a.scen.plan_dir) = (dirs.path().join("data"), dirs.path().join("plans"));
        prepare_dirs(&a).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }
}
