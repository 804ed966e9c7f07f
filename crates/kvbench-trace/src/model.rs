//! A synthetic operation stream described by distributions: what `trace fit` writes into a
//! scenario (`kind = "model"`), and what db_bench's mixgraph becomes ([`crate::mixgraph`]).
//! The stream is a function of the model, the op count, the key space and a seed, so every run
//! of a scenario replays the same ops; it scales to any `--records` (the key space) and any
//! `count` (the ops).
//!
//! (The generator is being written; the shapes below are the scenario's contract.)

use serde::{Deserialize, Serialize};

/// A distribution of sizes (value bytes, scan lengths).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SizeDist {
    Fixed { size: u32 },
    /// Empirical: `q[i]` is the i/(len-1) quantile; draws interpolate linearly between them.
    Quantiles { q: Vec<u32> },
    /// db_bench's generalized Pareto (`value_theta`, `value_k`, `value_sigma`).
    Pareto { theta: f64, k: f64, sigma: f64 },
}

/// How keys are drawn from the key space `0 .. records`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
pub enum KeyDist {
    Uniform,
    /// The key of popularity rank i (from 1) is drawn with probability proportional to
    /// `1 / i^s`; ranks are scattered over the key space by a fixed permutation.
    Zipf { s: f64 },
    /// db_bench mixgraph's key distribution without key ranges: `key_dist_a`, `key_dist_b`.
    Power { a: f64, b: f64 },
}

/// db_bench's sine-shaped request rate: `a * sin(b * t + c) + d` requests a second at `t`
/// seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sine {
    pub a: f64,
    pub b: f64,
    pub c: f64,
    pub d: f64,
}

/// Parts of each kind (normalised).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mix {
    #[serde(default)]
    pub get: f64,
    #[serde(default)]
    pub put: f64,
    #[serde(default)]
    pub delete: f64,
    #[serde(default)]
    pub scan: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub mix: Mix,
    /// Bytes of each key.
    pub key_size: u32,
    pub keys: KeyDist,
    pub values: SizeDist,
    /// Records a scan visits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scans: Option<SizeDist>,
    /// Requests a second (timestamps of the ops; a closed-loop replay ignores them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sine: Option<Sine>,
    /// Clients the ops are dealt to, round-robin.
    #[serde(default = "one")]
    pub clients: u32,
}

fn one() -> u32 {
    1
}
