//! `kvbench trace fit`: a [`Model`] whose distributions reproduce a trace's [`Profile`], how
//! close it comes (Kolmogorov-Smirnov distances), and the scenario file that replays it at any
//! scale.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::{KeyDist, Mix, Model, SizeDist};
use crate::profile::{KindCounts, Profile, Sizes, CURVE_POINTS};
use crate::Kind;

/// Below this Zipf exponent the keys are called uniform: the popularity curves of s = 0.05 and
/// of s = 0 are within about 0.02 of each other at any key count, less than sampling noise.
pub const UNIFORM_BELOW: f64 = 0.05;
/// Key bytes when the profile saw no key (an empty trace).
pub const DEFAULT_KEY_SIZE: u32 = 16;
/// Value bytes when the trace records no value size (db_bench's default `value_size`).
pub const DEFAULT_VALUE_SIZE: u32 = 100;

/// A fitted model and its quality: per distribution (`key popularity`, `value sizes`,
/// `key sizes`, `scan lengths`, `mix`), the KS distance between the model and the profile
/// (0 = identical, 1 = disjoint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    pub model: Model,
    pub quality: Vec<(String, f64)>,
}

/// The model of a profile: its op mix, median key size, Zipf (or uniform) keys, value sizes and
/// scan lengths as their quantiles (or fixed when all equal), mean rate and clients. The
/// quality compares the model's analytic distributions with the profile's (for the keys, the
/// Zipf curve over the trace's distinct keys with the empirical one).
pub fn fit(p: &Profile) -> Fitted {
    let model = Model {
        mix: mix_of(&p.kinds),
        key_size: p.key_sizes.as_ref().map_or(DEFAULT_KEY_SIZE, Sizes::median),
        keys: keys_of(p.popularity.zipf_s),
        values: value_sizes(p).map_or(SizeDist::Fixed { size: DEFAULT_VALUE_SIZE }, size_dist),
        scans: p.scan_lengths.as_ref().map(size_dist),
        rate: p.rate.mean_per_s.map(|r| round_to(r, 3)),
        sine: None,
        clients: p.clients.max(1),
    };
    let quality = quality(&model, p);
    Fitted { model, quality }
}

/// Kind fractions, rounded to 6 decimals to stay readable; all gets for an empty profile.
fn mix_of(k: &KindCounts) -> Mix {
    if k.total() == 0 {
        return Mix { get: 1.0, ..Mix::default() };
    }
    let f = |kind| round_to(k.fraction(kind), 6);
    Mix { get: f(Kind::Get), put: f(Kind::Put), delete: f(Kind::Delete), scan: f(Kind::Scan) }
}

fn keys_of(s: f64) -> KeyDist {
    if s < UNIFORM_BELOW {
        KeyDist::Uniform
    } else {
        KeyDist::Zipf { s: round_to(s, 3) }
    }
}

/// The value sizes a model draws from: the puts', or the gets' when no put says.
fn value_sizes(p: &Profile) -> Option<&Sizes> {
    p.put_values.as_ref().or(p.get_values.as_ref())
}

fn size_dist(s: &Sizes) -> SizeDist {
    match s.q.first() {
        Some(&first) if s.q.iter().all(|&v| v == first) => SizeDist::Fixed { size: first },
        _ => SizeDist::Quantiles { q: s.q.clone() },
    }
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let m = 10f64.powi(decimals);
    let r = (v * m).round() / m;
    if r.is_finite() {
        r
    } else {
        0.0
    }
}

fn quality(m: &Model, p: &Profile) -> Vec<(String, f64)> {
    let mut q = Vec::new();
    if let Some(curve) = key_curve(&m.keys, p.distinct_keys).filter(|_| !p.popularity.curve.is_empty()) {
        q.push(("key popularity".to_string(), ks_curves(&curve, &p.popularity.curve)));
    }
    let pairs = [
        ("value sizes", Some(&m.values), value_sizes(p)),
        ("key sizes", Some(&SizeDist::Fixed { size: m.key_size }), p.key_sizes.as_ref()),
        ("scan lengths", m.scans.as_ref(), p.scan_lengths.as_ref()),
    ];
    for (name, dist, sizes) in pairs {
        if let (Some(model_q), Some(s)) = (dist.and_then(dist_quantiles), sizes) {
            q.push((name.to_string(), ks_sizes(&model_q, &s.q)));
        }
    }
    q.push(("mix".to_string(), mix_distance(&m.mix, &p.kinds)));
    q
}

/// The popularity curve F(x) a key distribution gives over `keys` keys (`None` for one this
/// module does not model).
fn key_curve(k: &KeyDist, keys: u64) -> Option<Vec<f64>> {
    match k {
        KeyDist::Uniform => Some(grid().collect()),
        KeyDist::Zipf { s } => Some(zipf_curve(keys, *s)),
        KeyDist::Power { .. } => None,
    }
}

fn grid() -> impl Iterator<Item = f64> {
    (0..CURVE_POINTS).map(|i| i as f64 / (CURVE_POINTS - 1) as f64)
}

/// The quantiles of a size distribution (`None` for Pareto, which a fit never writes).
fn dist_quantiles(d: &SizeDist) -> Option<Vec<u32>> {
    match d {
        SizeDist::Fixed { size } => Some(vec![*size; CURVE_POINTS]),
        SizeDist::Quantiles { q } => Some(q.clone()),
        SizeDist::Pareto { .. } => None,
    }
}

/// The analytic popularity curve of Zipf(s) over `keys` keys: F(x) = H(x·keys, s) / H(keys, s),
/// linear within a key as the empirical curve is.
pub fn zipf_curve(keys: u64, s: f64) -> Vec<f64> {
    if keys == 0 {
        return grid().collect();
    }
    let h = Harmonic::new(keys, s);
    let total = h.at(keys);
    grid()
        .map(|x| {
            let pos = x * keys as f64;
            let whole = pos.floor() as u64;
            let part = if whole < keys { (pos - whole as f64) * ((whole + 1) as f64).powf(-s) } else { 0.0 };
            if total > 0.0 {
                ((h.at(whole) + part) / total).clamp(0.0, 1.0)
            } else {
                x
            }
        })
        .collect()
}

/// Generalised harmonic numbers H(k, s) = Σ_{r=1..k} r^-s: summed exactly up to 10 000, with
/// the Euler-Maclaurin formula beyond (its error there is below 1e-12 of the sum).
struct Harmonic {
    s: f64,
    prefix: Vec<f64>,
}

const EXACT_TERMS: u64 = 10_000;

impl Harmonic {
    fn new(keys: u64, s: f64) -> Harmonic {
        let mut prefix = vec![0.0];
        let mut sum = 0.0;
        for r in 1..=keys.min(EXACT_TERMS) {
            sum += (r as f64).powf(-s);
            prefix.push(sum);
        }
        Harmonic { s, prefix }
    }

    fn at(&self, k: u64) -> f64 {
        let exact = (self.prefix.len() - 1) as u64;
        if k <= exact {
            return self.prefix[k as usize];
        }
        let (a, b, s) = (exact as f64, k as f64, self.s);
        let f = |x: f64| x.powf(-s);
        let df = |x: f64| -s * x.powf(-s - 1.0);
        let integral =
            if (s - 1.0).abs() < 1e-9 { (b / a).ln() } else { (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s) };
        self.prefix[exact as usize] + integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0
    }
}

/// The KS distance between two size distributions given as quantiles (`q[i]` the i/(len-1)
/// quantile, linear between, as the model draws): the largest difference of their CDFs.
/// 0 when both are empty, 1 when only one is.
pub fn ks_sizes(a: &[u32], b: &[u32]) -> f64 {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return 0.0,
        (true, false) | (false, true) => return 1.0,
        _ => {}
    }
    // Both CDFs are linear between the quantiles, so the largest gap is at one of them, just
    // before it or at it (a run of equal quantiles is a jump).
    a.iter()
        .chain(b)
        .map(|&v| {
            let v = f64::from(v);
            let below = (cdf_below(a, v) - cdf_below(b, v)).abs();
            below.max((cdf_at(a, v) - cdf_at(b, v)).abs())
        })
        .fold(0.0, f64::max)
}

/// P(X ≤ x) of the distribution of quantiles `q` (ascending, non-empty).
fn cdf_at(q: &[u32], x: f64) -> f64 {
    cdf_from(q, x, q.partition_point(|&v| f64::from(v) <= x))
}

/// P(X < x).
fn cdf_below(q: &[u32], x: f64) -> f64 {
    cdf_from(q, x, q.partition_point(|&v| f64::from(v) < x))
}

/// The CDF at x given `n` = how many quantiles lie at or below x (strictly below for the left
/// limit): linear from the last of them to the next.
fn cdf_from(q: &[u32], x: f64, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    if n >= q.len() {
        return 1.0;
    }
    let (j, lo, hi) = (n - 1, f64::from(q[n - 1]), f64::from(q[n]));
    let within = if hi > lo { ((x - lo) / (hi - lo)).clamp(0.0, 1.0) } else { 0.0 };
    (j as f64 + within) / (q.len() - 1) as f64
}

/// The largest vertical distance between two popularity curves F(x), x in [0, 1].
pub fn ks_popularity(a: &Profile, b: &Profile) -> f64 {
    ks_curves(&a.popularity.curve, &b.popularity.curve)
}

/// Two curves on the same grid, linear between points: the largest gap is at a point. 0 when
/// both are empty (no keys), 1 when only one is.
fn ks_curves(a: &[f64], b: &[f64]) -> f64 {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => 0.0,
        (true, false) | (false, true) => 1.0,
        _ => a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max),
    }
}

/// The largest difference of the kinds' fractions.
fn mix_distance(m: &Mix, k: &KindCounts) -> f64 {
    let model = mix_fractions(m);
    Kind::ALL.iter().zip(model).map(|(&kind, f)| (f - k.fraction(kind)).abs()).fold(0.0, f64::max)
}

/// A mix's parts, normalised (all zero when they sum to zero).
fn mix_fractions(m: &Mix) -> [f64; 4] {
    let parts = [m.get, m.put, m.delete, m.scan];
    let sum: f64 = parts.iter().sum();
    if sum > 0.0 && sum.is_finite() {
        parts.map(|p| p / sum)
    } else {
        [0.0; 4]
    }
}

/// KS distances between two profiles: `key popularity`, `value sizes` (the puts', or the gets'),
/// `key sizes`, `scan lengths` (each only when either profile has it; 1 when only one does) and
/// `mix` (the largest difference of the kinds' fractions).
pub fn ks_between(a: &Profile, b: &Profile) -> Vec<(String, f64)> {
    let mut out = vec![("key popularity".to_string(), ks_popularity(a, b))];
    let pairs = [
        ("value sizes", value_sizes(a), value_sizes(b)),
        ("key sizes", a.key_sizes.as_ref(), b.key_sizes.as_ref()),
        ("scan lengths", a.scan_lengths.as_ref(), b.scan_lengths.as_ref()),
    ];
    for (name, x, y) in pairs {
        if x.is_some() || y.is_some() {
            let q = |s: Option<&Sizes>| s.map(|s| s.q.clone()).unwrap_or_default();
            out.push((name.to_string(), ks_sizes(&q(x), &q(y))));
        }
    }
    let (fa, fb) = (Kind::ALL.map(|k| a.kinds.fraction(k)), Kind::ALL.map(|k| b.kinds.fraction(k)));
    out.push(("mix".to_string(), fa.iter().zip(fb).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)));
    out
}

/// A complete scenario (docs/scenarios.md, "Replay phases") that replays the fitted model:
/// `records` keys, one `model` phase of `ops` ops, headed by a comment naming the trace it was
/// fitted to and the fit's KS distances.
pub fn scenario_toml(f: &Fitted, source: &str, ops: u64, records: u64) -> String {
    let mut out = header(f, source);
    let name = toml::Value::String(format!("fit-{}", stem(source)));
    let _ = writeln!(out, "name = {name}\n\n[dataset]\nrecords = {records}\n");
    let _ = writeln!(out, "[[phase]]\nname = \"model\"\nkind = \"model\"\ncount = {ops}");
    let _ = writeln!(out, "# the model, as model.rs serialises it (toml):\n[phase.model]");
    out.push_str(&model_lines(&f.model));
    out
}

fn header(f: &Fitted, source: &str) -> String {
    let mut out = String::new();
    let source: String = source.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let _ = writeln!(out, "# Fitted by `kvbench trace fit` to {source}.");
    out.push_str("# Intent: replay a synthetic stream with the trace's op mix, key popularity, key and value\n");
    out.push_str("# sizes, scan lengths, clients and mean rate, at any scale (--records, count), without\n");
    out.push_str("# the trace itself.\n");
    out.push_str("# Fit quality, the Kolmogorov-Smirnov distance between the model's distributions and the\n");
    out.push_str("# trace's (0 = identical, 1 = disjoint):\n");
    for (name, d) in &f.quality {
        let _ = writeln!(out, "#   {name:<16}{d:.4}");
    }
    out.push('\n');
    out
}

/// The file name without its directory and last extension ("trace" when there is none).
fn stem(source: &str) -> String {
    match Path::new(source).file_stem().map(|s| s.to_string_lossy().into_owned()) {
        Some(s) if !s.is_empty() && s != "-" => s,
        _ => "trace".to_string(),
    }
}

/// The model's fields as `key = value` lines, tables inline, in the order a reader expects.
fn model_lines(m: &Model) -> String {
    let Ok(toml::Value::Table(table)) = toml::Value::try_from(m) else {
        return String::new();
    };
    let order = ["key_size", "clients", "rate", "sine", "mix", "keys", "values", "scans"];
    let rest = table.keys().filter(|k| !order.contains(&k.as_str())).map(String::as_str);
    let mut out = String::new();
    for key in order.into_iter().chain(rest.collect::<Vec<_>>()) {
        if let Some(v) = table.get(key) {
            let _ = writeln!(out, "{key} = {}", inline(v));
        }
    }
    out
}

/// A TOML value on one line; a table's keys in the order the scenario docs name them.
fn inline(v: &toml::Value) -> String {
    let toml::Value::Table(t) = v else {
        return v.to_string();
    };
    let order = ["dist", "get", "put", "delete", "scan"];
    let mut keys: Vec<&String> = t.keys().collect();
    keys.sort_by_key(|k| (order.iter().position(|o| o == k).unwrap_or(order.len()), k.to_string()));
    let fields: Vec<String> = keys.iter().map(|k| format!("{} = {}", toml_key(k), inline(&t[k.as_str()]))).collect();
    format!("{{ {} }}", fields.join(", "))
}

/// A bare key when TOML allows one, a quoted one otherwise.
fn toml_key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        toml::Value::String(k.to_string()).to_string()
    }
}
