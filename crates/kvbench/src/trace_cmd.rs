//! `kvbench trace`: what a recorded operation stream holds (`describe`), and a scenario that
//! reproduces it at any size (`fit`). The readers, the profile and the fit are
//! kvbench_trace's; this is the command line over them.

use std::path::{Path, PathBuf};

use kvbench_trace::{fit, profile::Profile, Format};

#[derive(clap::Subcommand)]
pub enum TraceCmd {
    /// Print a trace's profile: ops by kind, clients, key popularity (top shares and the
    /// best-fitting Zipf exponent), value and key sizes, scan lengths, request rate over time,
    /// working-set growth; `--json` for every figure.
    Describe {
        /// The trace file (a FIFO or a pipe works: it is read once).
        file: PathBuf,
        /// rocksdb, redis-monitor, memcached-watch or cache-csv (default: recognised from the
        /// first bytes).
        #[arg(long, value_name = "FORMAT")]
        trace_format: Option<String>,
        /// The profile as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a scenario whose model reproduces the trace (op mix, Zipf key popularity, value,
    /// key and scan-length distributions, rate) at any --records, the fit's quality stated
    /// as a Kolmogorov–Smirnov distance per distribution between the trace and the model's own
    /// stream at the trace's size.
    Fit {
        /// The trace file (a FIFO or a pipe works: it is read once).
        file: PathBuf,
        /// rocksdb, redis-monitor, memcached-watch or cache-csv (default: recognised from the
        /// first bytes).
        #[arg(long, value_name = "FORMAT")]
        trace_format: Option<String>,
        /// Where the scenario goes (default: stdout).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub fn main(cmd: &TraceCmd) -> Result<String, String> {
    match cmd {
        TraceCmd::Describe { file, trace_format, json } => {
            let p = profile(file, trace_format.as_deref())?;
            if *json {
                return serde_json::to_string_pretty(&p).map(|t| t + "\n").map_err(|e| e.to_string());
            }
            Ok(p.text())
        }
        TraceCmd::Fit { file, trace_format, output } => {
            let p = profile(file, trace_format.as_deref())?;
            let mut fitted = fit::fit(&p);
            fit::check_by_replay(&mut fitted, &p, 1);
            let text = fit::scenario_toml(&fitted, &file.display().to_string(), p.ops, fit::records(&p));
            match output {
                None => Ok(text),
                Some(out) => {
                    write_scenario(out, &text)?;
                    let ks: Vec<String> = fitted.quality.iter().map(|(d, v)| format!("{d} {v:.4}")).collect();
                    Ok(format!(
                        "wrote {}; KS distance, trace against the model's stream: {}\n",
                        out.display(),
                        ks.join(", ")
                    ))
                }
            }
        }
    }
}

fn profile(file: &Path, format: Option<&str>) -> Result<Profile, String> {
    let format = format.map(Format::parse).transpose()?;
    let reader = kvbench_trace::open(file, format).map_err(|e| e.to_string())?;
    Profile::build(reader).map_err(|e| e.to_string())
}

fn write_scenario(out: &Path, text: &str) -> Result<(), String> {
    std::fs::write(out, text).map_err(|e| format!("--output {}: cannot write: {e}", out.display()))
}
