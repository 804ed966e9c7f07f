//! kvbench-model: the words every other part of kvbench speaks. It imports no other kvbench
//! crate; everything above it (plan, worker, engines, policy, report, the kvbench binary) reads
//! and writes these types.
//!
//! - [`scenario`]: a scenario file (`[dataset]`, `[[phase]]`, `[[engine]]`, `[report]`) read
//!   into a [`scenario::Scenario`], every bad value named by file, line and field.
//! - [`spec`]: the shapes a scenario and a job share: keys, values, distributions, phase kinds.
//! - [`job`]: the job kvbench writes for a worker (docs/protocol.md), every step resolved.
//! - [`result`]: the result file's schema: a run, its rows, their phases and counters.
//! - [`engine`] and [`options`]: the interface every engine implements and its typed options.
//! - [`histogram`]: latency histograms and their text encoding (HdrHistogram V2, base64).
//! - [`secret`]: passwords remembered once and scrubbed from every line kvbench writes.
//! - [`input`]: reading a user's file with a size bound and a clear error (a FIFO, `/dev/zero`).
//!
//! A scenario read from a file, and the error a bad value gets:
//!
//! ```
//! use kvbench_model::scenario::Scenario;
//!
//! let dir = std::env::temp_dir().join(format!("kvbench-model-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let file = dir.join("small.toml");
//! std::fs::write(&file, "engines = [\"lmdb\"]\n[dataset]\nrecords = 1000\n[[phase]]\nkind = \"load\"\n")?;
//! let s = Scenario::from_file(&file)?;
//! assert_eq!((s.name.as_str(), s.dataset.records, s.phases.len()), ("small", 1000, 1));
//!
//! std::fs::write(&file, "[dataset]\nrecords = -5\n")?;
//! let e = Scenario::from_file(&file).unwrap_err();
//! assert!(e.contains("small.toml") && e.contains("records"), "{e}");
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Latencies travel as encoded histograms; a URL's password never reaches a report:
//!
//! ```
//! use kvbench_model::{histogram, secret};
//!
//! let mut h = histogram::new_histogram();
//! for ns in [900, 1_000, 1_100, 50_000] {
//!     h.record(ns)?;
//! }
//! let back = histogram::decode_histogram(&histogram::encode_histogram(&h))?;
//! assert_eq!(back.len(), 4);
//! assert!(histogram::summarize(&back).is_some_and(|l| l.p50_ns >= 900 && l.p50_ns <= 1_100));
//! assert_eq!(secret::redact_urls("redis://:pw@h:1"), "redis://***@h:1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod engine;
pub mod flags;
pub mod hdrcheck;
pub mod histogram;
pub mod input;
pub mod job;
pub mod options;
pub mod replay;
pub mod report_table;
pub mod result;
pub mod scenario;
pub mod secret;
pub mod spec;
