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
pub fn fit(profile: &Profile) -> Fitted {
    let model = Model {
        mix: mix_of(&profile.kinds),
        // Shorter keys could not keep the key numbers apart: a model's keys are at least 8 bytes.
        key_size: profile.key_sizes.as_ref().map_or(DEFAULT_KEY_SIZE, Sizes::median).max(crate::model::KEY_SIZE_MIN),
        key_sizes: profile.key_sizes.as_ref().map(size_dist).filter(|d| !matches!(d, SizeDist::Fixed { .. })),
        keys: keys_of(profile),
        values: value_sizes(profile).map_or(SizeDist::Fixed { size: DEFAULT_VALUE_SIZE }, size_dist),
        scans: profile.scan_lengths.as_ref().map(size_dist),
        rate: profile.rate.mean_per_s.map(|r| round_to(r, 3)),
        sine: None,
        clients: profile.clients.max(1),
    };
    let quality = quality(&model, profile);
    Fitted { model, quality }
}

/// Kind fractions, rounded to 6 decimals to stay readable; all gets for an empty profile.
fn mix_of(counts: &KindCounts) -> Mix {
    if counts.total() == 0 {
        return Mix { get: 1.0, ..Mix::default() };
    }
    let f = |kind| round_to(counts.fraction(kind), 6);
    Mix { get: f(Kind::Get), put: f(Kind::Put), delete: f(Kind::Delete), scan: f(Kind::Scan) }
}

fn keys_of(profile: &Profile) -> KeyDist {
    let s = profile.popularity.zipf_s;
    if s < UNIFORM_BELOW {
        KeyDist::Uniform
    } else {
        KeyDist::Zipf { s: round_to(s, 3) }
    }
}

/// The key space a fitted model draws from: the Zipf fit's estimate of the keys the traced
/// system held (the trace touched only some of them), at least the distinct keys it touched.
pub fn records(profile: &Profile) -> u64 {
    profile.popularity.zipf_keys.max(profile.distinct_keys).max(1)
}

/// The fit checked the way it will be used: the model's own stream, `p.ops` ops over
/// [`records`] keys, profiled and compared with the trace's profile (KS distance per
/// distribution, as [`ks_between`]); replaces the analytic quality.
pub fn check_by_replay(fitted: &mut Fitted, profile: &Profile, seed: u64) {
    let stream = fitted.model.stream(profile.ops.max(1), records(profile), seed).map(Ok);
    if let Ok(own) = Profile::build(stream) {
        fitted.quality = ks_between(profile, &own);
    }
}

/// The value sizes a model draws from: the puts', or the gets' when no put says.
fn value_sizes(profile: &Profile) -> Option<&Sizes> {
    profile.put_values.as_ref().or(profile.get_values.as_ref())
}

fn size_dist(sizes: &Sizes) -> SizeDist {
    match sizes.q.first() {
        Some(&first) if sizes.q.iter().all(|&v| v == first) => SizeDist::Fixed { size: first },
        _ => SizeDist::Quantiles { q: sizes.q.clone() },
    }
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let m = 10f64.powi(decimals);
    let r = (value * m).round() / m;
    if r.is_finite() {
        r
    } else {
        0.0
    }
}

fn quality(model: &Model, profile: &Profile) -> Vec<(String, f64)> {
    let mut q = Vec::new();
    if let Some(curve) = key_curve(&model.keys, profile.distinct_keys).filter(|_| !profile.popularity.curve.is_empty())
    {
        q.push(("key popularity".to_string(), ks_curves(&curve, &profile.popularity.curve)));
    }
    let fixed_key = SizeDist::Fixed { size: model.key_size };
    let pairs = [
        ("value sizes", Some(&model.values), value_sizes(profile)),
        ("key sizes", Some(model.key_sizes.as_ref().unwrap_or(&fixed_key)), profile.key_sizes.as_ref()),
        ("scan lengths", model.scans.as_ref(), profile.scan_lengths.as_ref()),
    ];
    for (name, dist, sizes) in pairs {
        if let (Some(model_q), Some(s)) = (dist.and_then(dist_quantiles), sizes) {
            q.push((name.to_string(), ks_sizes(&model_q, &s.q)));
        }
    }
    q.push(("mix".to_string(), mix_distance(&model.mix, &profile.kinds)));
    q
}

/// The popularity curve F(x) a key distribution gives over `keys` keys (`None` for one this
/// module does not model).
fn key_curve(dist: &KeyDist, keys: u64) -> Option<Vec<f64>> {
    match dist {
        KeyDist::Uniform => Some(grid().collect()),
        KeyDist::Zipf { s } => Some(zipf_curve(keys, *s)),
        KeyDist::Power { .. } => None,
    }
}

fn grid() -> impl Iterator<Item = f64> {
    (0..CURVE_POINTS).map(|i| i as f64 / (CURVE_POINTS - 1) as f64)
}

/// The quantiles of a size distribution (`None` for Pareto, which a fit never writes).
fn dist_quantiles(dist: &SizeDist) -> Option<Vec<u32>> {
    match dist {
        SizeDist::Fixed { size } => Some(vec![*size; CURVE_POINTS]),
        SizeDist::Quantiles { q } => Some(q.clone()),
        SizeDist::Pareto { .. } => None,
    }
}

/// The analytic popularity curve of Zipf(s) over `keys` keys: F(x) = H(x·keys, s) / H(keys, s),
/// linear within a key as the empirical curve is.
pub fn zipf_curve(keys: u64, exponent: f64) -> Vec<f64> {
    if keys == 0 {
        return grid().collect();
    }
    let h = Harmonic::new(keys, exponent);
    let total = h.at(keys);
    grid()
        .map(|x| {
            let pos = x * keys as f64;
            let whole = pos.floor() as u64;
            let part = if whole < keys { (pos - whole as f64) * ((whole + 1) as f64).powf(-exponent) } else { 0.0 };
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
    fn new(keys: u64, exponent: f64) -> Harmonic {
        let mut prefix = vec![0.0];
        let mut sum = 0.0;
        for r in 1..=keys.min(EXACT_TERMS) {
            sum += (r as f64).powf(-exponent);
            prefix.push(sum);
        }
        Harmonic { s: exponent, prefix }
    }

    fn at(&self, rank: u64) -> f64 {
        let exact = (self.prefix.len() - 1) as u64;
        if rank <= exact {
            return self.prefix[rank as usize];
        }
        let (a, b, s) = (exact as f64, rank as f64, self.s);
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
pub fn ks_sizes(left: &[u32], right: &[u32]) -> f64 {
    match (left.is_empty(), right.is_empty()) {
        (true, true) => return 0.0,
        (true, false) | (false, true) => return 1.0,
        _ => {}
    }
    // Both CDFs are linear between the quantiles, so the largest gap is at one of them, just
    // before it or at it (a run of equal quantiles is a jump).
    left.iter()
        .chain(right)
        .map(|&v| {
            let v = f64::from(v);
            let below = (cdf_below(left, v) - cdf_below(right, v)).abs();
            below.max((cdf_at(left, v) - cdf_at(right, v)).abs())
        })
        .fold(0.0, f64::max)
}

/// P(X ≤ x) of the distribution of quantiles `quantiles` (ascending, non-empty).
fn cdf_at(quantiles: &[u32], size: f64) -> f64 {
    cdf_from(quantiles, size, quantiles.partition_point(|&v| f64::from(v) <= size))
}

/// P(X < x).
fn cdf_below(quantiles: &[u32], size: f64) -> f64 {
    cdf_from(quantiles, size, quantiles.partition_point(|&v| f64::from(v) < size))
}

/// The CDF at x given `below` = how many quantiles lie at or below x (strictly below for the left
/// limit): linear from the last of them to the next.
fn cdf_from(quantiles: &[u32], size: f64, below: usize) -> f64 {
    if below == 0 {
        return 0.0;
    }
    if below >= quantiles.len() {
        return 1.0;
    }
    let (j, lo, hi) = (below - 1, f64::from(quantiles[below - 1]), f64::from(quantiles[below]));
    let within = if hi > lo { ((size - lo) / (hi - lo)).clamp(0.0, 1.0) } else { 0.0 };
    (j as f64 + within) / (quantiles.len() - 1) as f64
}

/// The largest vertical distance between two popularity curves F(x), x in [0, 1].
pub fn ks_popularity(left: &Profile, right: &Profile) -> f64 {
    ks_curves(&left.popularity.curve, &right.popularity.curve)
}

/// Two curves on the same grid, linear between points: the largest gap is at a point. 0 when
/// both are empty (no keys), 1 when only one is.
fn ks_curves(left: &[f64], right: &[f64]) -> f64 {
    match (left.is_empty(), right.is_empty()) {
        (true, true) => 0.0,
        (true, false) | (false, true) => 1.0,
        _ => left.iter().zip(right).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max),
    }
}

/// The largest difference of the kinds' fractions.
fn mix_distance(mix: &Mix, counts: &KindCounts) -> f64 {
    let model = mix_fractions(mix);
    Kind::ALL.iter().zip(model).map(|(&kind, f)| (f - counts.fraction(kind)).abs()).fold(0.0, f64::max)
}

/// A mix's parts, normalised (all zero when they sum to zero).
fn mix_fractions(mix: &Mix) -> [f64; 4] {
    let parts = [mix.get, mix.put, mix.delete, mix.scan];
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
pub fn ks_between(left: &Profile, right: &Profile) -> Vec<(String, f64)> {
    let mut out = vec![("key popularity".to_string(), ks_popularity(left, right))];
    let pairs = [
        ("value sizes", value_sizes(left), value_sizes(right)),
        ("key sizes", left.key_sizes.as_ref(), right.key_sizes.as_ref()),
        ("scan lengths", left.scan_lengths.as_ref(), right.scan_lengths.as_ref()),
    ];
    for (name, x, y) in pairs {
        if x.is_some() || y.is_some() {
            let q = |s: Option<&Sizes>| s.map(|s| s.q.clone()).unwrap_or_default();
            out.push((name.to_string(), ks_sizes(&q(x), &q(y))));
        }
    }
    let (fa, fb) = (Kind::ALL.map(|k| left.kinds.fraction(k)), Kind::ALL.map(|k| right.kinds.fraction(k)));
    out.push(("mix".to_string(), fa.iter().zip(fb).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)));
    out
}

/// A complete scenario (docs/scenarios.md, "Replay phases") that replays the fitted model:
/// `records` keys, a load, then one replay phase of the model's `ops` ops, headed by a comment
/// naming the trace it was fitted to and the fit's KS distances.
///
/// `records` is the caller's: the trace's distinct keys replays its key space as seen; the
/// profile's `popularity.zipf_keys` (the fitted law's key space, unseen keys included) gives a
/// replay that sees about as many distinct keys as the trace did.
pub fn scenario_toml(fitted: &Fitted, source: &str, ops: u64, records: u64) -> String {
    let mut out = header(fitted, source);
    let name = toml::Value::String(format!("fit-{}", stem(source)));
    let _ = writeln!(out, "name = {name}\n# The stores compared (`--engines` chooses among them or names others).");
    let _ = writeln!(out, "engines = [\"lmdb\", \"rocksdb\"]\n\n[dataset]\nrecords = {records}\n");
    out.push_str(
        "# The keys the model reads before it writes them exist before it runs.\n[[phase]]\nkind = \"load\"\n\n",
    );
    let _ = writeln!(out, "[[phase]]\nname = \"model\"\nkind = \"replay\"\ncount = {ops}");
    let _ = writeln!(out, "[phase.model]");
    out.push_str(&model_lines(&fitted.model));
    out
}

fn header(fitted: &Fitted, source: &str) -> String {
    let mut out = String::new();
    let source: String = source.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let _ = writeln!(out, "# Fitted by `kvbench trace fit` to {source}.");
    out.push_str("# Intent: replay a synthetic stream with the trace's op mix, key popularity, key and value\n");
    out.push_str("# sizes, scan lengths, clients and mean rate, at any scale (--records, count), without\n");
    out.push_str("# the trace itself.\n");
    out.push_str("# Fit quality, the Kolmogorov-Smirnov distance between the model's distributions and the\n");
    out.push_str("# trace's (0 = identical, 1 = disjoint):\n");
    for (name, d) in &fitted.quality {
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
fn model_lines(model: &Model) -> String {
    let Ok(toml::Value::Table(table)) = toml::Value::try_from(model) else {
        return String::new();
    };
    let order = ["key_size", "key_sizes", "clients", "rate", "sine", "mix", "keys", "values", "scans"];
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
fn inline(value: &toml::Value) -> String {
    let toml::Value::Table(t) = value else {
        return value.to_string();
    };
    let order = ["dist", "get", "put", "delete", "scan"];
    let mut keys: Vec<&String> = t.keys().collect();
    keys.sort_by_key(|k| (order.iter().position(|o| o == k).unwrap_or(order.len()), k.to_string()));
    let fields: Vec<String> = keys.iter().map(|k| format!("{} = {}", toml_key(k), inline(&t[k.as_str()]))).collect();
    format!("{{ {} }}", fields.join(", "))
}

/// A bare key when TOML allows one, a quoted one otherwise.
fn toml_key(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        key.to_string()
    } else {
        toml::Value::String(key.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;
    use crate::TraceOp;

    fn op(ts_us: u64, kind: Kind, key: &str, value_size: Option<u32>, scan_len: Option<u32>) -> TraceOp {
        TraceOp { ts_us, client: 0, kind, key: key.as_bytes().to_vec(), value_size, scan_len, joined: false }
    }

    fn profile(ops: impl IntoIterator<Item = TraceOp>) -> Profile {
        Profile::build(ops.into_iter().map(Ok)).unwrap()
    }

    /// Gets of keys "k0".."k{n}" drawn by `draw` (a rank from a uniform number).
    fn stream(draws: usize, seed: u64, draw: impl Fn(f64) -> usize) -> Vec<TraceOp> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..draws).map(|i| op(i as u64 * 100, Kind::Get, &format!("k{}", draw(rng.gen())), None, None)).collect()
    }

    fn zipf_draw(keys: usize, exponent: f64) -> impl Fn(f64) -> usize {
        let weights: Vec<f64> = (1..=keys).map(|r| (r as f64).powf(-exponent)).collect();
        let total: f64 = weights.iter().sum();
        let cdf: Vec<f64> = weights.iter().scan(0.0, |acc, w| Some(*acc + w / total).inspect(|&v| *acc = v)).collect();
        move |u| cdf.partition_point(|&c| c < u).min(keys - 1)
    }

    /// A mixed stream: Zipf(0.9) keys over 2000, values 100..=1099 bytes, scans of 1..=50.
    fn mixed(seed: u64) -> Profile {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let draw = zipf_draw(2000, 0.9);
        let ops = (0..20_000u64).map(|i| {
            let key = format!("key{:06}", draw(rng.gen()));
            match rng.gen_range(0..100) {
                0..=69 => op(i * 1000, Kind::Get, &key, None, None),
                70..=94 => op(i * 1000, Kind::Put, &key, Some(rng.gen_range(100..1100)), None),
                95..=96 => op(i * 1000, Kind::Delete, &key, None, None),
                _ => op(i * 1000, Kind::Scan, &key, None, Some(rng.gen_range(1..=50))),
            }
        });
        profile(ops.collect::<Vec<_>>())
    }

    fn quality(fitted: &Fitted, name: &str) -> f64 {
        fitted
            .quality
            .iter()
            .find(|(n, _)| n == name)
            .map(|q| q.1)
            .unwrap_or_else(|| panic!("no {name}: {:?}", fitted.quality))
    }

    #[test]
    fn identical_profiles_are_at_distance_zero() {
        let p = mixed(1);
        let d = ks_between(&p, &p.clone());
        let names: Vec<&str> = d.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["key popularity", "value sizes", "key sizes", "scan lengths", "mix"]);
        assert!(d.iter().all(|(_, v)| *v == 0.0), "{d:?}");
    }

    #[test]
    fn shifted_sizes_are_at_the_shift() {
        let a: Vec<u32> = (0..=100).collect();
        let b: Vec<u32> = (10..=110).collect();
        assert!((ks_sizes(&a, &b) - 0.1).abs() < 1e-12, "{}", ks_sizes(&a, &b));
        assert!((ks_sizes(&b, &a) - 0.1).abs() < 1e-12);
        // A point mass at the median of a uniform is half of it away; disjoint ones are 1 apart.
        assert!((ks_sizes(&[50; 101], &a) - 0.5).abs() < 1e-12);
        assert_eq!(ks_sizes(&[100; 101], &[200; 101]), 1.0);
        assert_eq!(ks_sizes(&[7; 101], &[7; 101]), 0.0);
        assert_eq!((ks_sizes(&[], &[]), ks_sizes(&[], &a), ks_sizes(&[3], &[3])), (0.0, 1.0, 0.0));
    }

    #[test]
    fn popularity_and_mix_distances_are_known() {
        // Four keys once each: F(x) = x. Counts 5, 1, 1, 1: F(1/4) = 5/8, 3/8 above the diagonal.
        let even = profile(["a", "b", "c", "d"].map(|k| op(0, Kind::Get, k, None, None)));
        let skewed = profile(["a", "a", "a", "a", "a", "b", "c", "d"].map(|k| op(0, Kind::Put, k, Some(1), None)));
        assert!((ks_popularity(&even, &skewed) - 0.375).abs() < 1e-12);
        let d = ks_between(&even, &skewed);
        assert_eq!(d.iter().find(|(n, _)| n == "mix").unwrap().1, 1.0, "all gets against all puts");
        assert_eq!(d.iter().find(|(n, _)| n == "value sizes").unwrap().1, 1.0, "sizes on one side only");
        assert!(!d.iter().any(|(n, _)| n == "scan lengths"), "neither scans: {d:?}");
    }

    #[test]
    fn a_fitted_model_reproduces_the_profile() {
        let p = mixed(2);
        let f = fit(&p);
        let m = &f.model;
        assert!((m.mix.get - p.kinds.fraction(Kind::Get)).abs() < 1e-6 && m.mix.get > 0.6);
        assert_eq!((m.key_size, m.clients, m.sine), (9, 1, None));
        let KeyDist::Zipf { s } = m.keys else { panic!("{:?}", m.keys) };
        assert!((s - 0.9).abs() < 0.1, "s = {s}");
        assert_eq!(m.values, SizeDist::Quantiles { q: p.put_values.clone().unwrap().q });
        assert_eq!(m.scans, Some(SizeDist::Quantiles { q: p.scan_lengths.clone().unwrap().q }));
        assert_eq!(m.rate, Some(1000.05));
        assert_eq!(
            (quality(&f, "value sizes"), quality(&f, "key sizes"), quality(&f, "scan lengths")),
            (0.0, 0.0, 0.0)
        );
        assert!(quality(&f, "mix") < 1e-6);
        assert!(quality(&f, "key popularity") < 0.05, "{:?}", f.quality);
    }

    #[test]
    fn zipf_and_uniform_keys_are_fitted_closely() {
        let zipf = fit(&profile(stream(200_000, 5, zipf_draw(10_000, 1.2))));
        let KeyDist::Zipf { s } = zipf.model.keys else { panic!("{:?}", zipf.model.keys) };
        assert!((s - 1.2).abs() < 0.05, "s = {s}");
        eprintln!("zipf 1.2: {:?}", zipf.quality);
        assert!(quality(&zipf, "key popularity") < 0.02, "{:?}", zipf.quality);
        let uniform = fit(&profile(stream(200_000, 6, |u| (u * 10_000.0) as usize)));
        assert_eq!(uniform.model.keys, KeyDist::Uniform);
        assert!(quality(&uniform, "key popularity") < 0.1, "{:?}", uniform.quality);
        assert_eq!(uniform.model.values, SizeDist::Fixed { size: DEFAULT_VALUE_SIZE }, "no size recorded");
    }

    #[test]
    fn keys_shorter_than_8_bytes_fit_as_8() {
        let p = profile((0..10).map(|i| op(i, Kind::Put, &format!("{i:04}"), Some(64), None)));
        assert_eq!(fit(&p).model.key_size, crate::model::KEY_SIZE_MIN);
    }

    #[test]
    fn equal_sizes_fit_as_fixed() {
        let p = profile((0..10).map(|i| op(i, Kind::Put, &format!("{i:010}"), Some(64), None)));
        let f = fit(&p);
        assert_eq!((f.model.values.clone(), f.model.key_size), (SizeDist::Fixed { size: 64 }, 10));
        assert_eq!(f.model.key_sizes, None, "keys of one size need no key-size distribution");
        assert_eq!(f.model.mix, Mix { put: 1.0, ..Mix::default() });
    }

    /// The `[phase.model]` table of a scenario, read back as a model.
    fn model_of(scenario: &str) -> Model {
        let doc: toml::Table = toml::from_str(scenario).unwrap_or_else(|e| panic!("{e}\n{scenario}"));
        let phases = doc["phase"].as_array().unwrap();
        let kinds: Vec<_> = phases.iter().map(|p| p["kind"].as_str()).collect();
        assert_eq!(kinds, [Some("load"), Some("replay")], "a load, then the replay");
        assert_eq!(phases[1]["name"].as_str(), Some("model"));
        phases[1]["model"].clone().try_into().unwrap()
    }

    #[test]
    fn the_scenario_reads_back_as_the_same_model() {
        let p = mixed(3);
        let f = fit(&p);
        let toml = scenario_toml(&f, "/data/traces/app.monitor", p.ops, p.distinct_keys);
        assert_eq!(model_of(&toml), f.model);
        let doc: toml::Table = toml::from_str(&toml).unwrap();
        assert_eq!(doc["name"].as_str(), Some("fit-app"));
        assert_eq!(doc["dataset"]["records"].as_integer(), Some(p.distinct_keys as i64));
        assert_eq!(doc["phase"][1]["count"].as_integer(), Some(20_000));
        assert!(toml.starts_with("# Fitted by `kvbench trace fit` to /data/traces/app.monitor.\n# Intent: "));
        for (name, d) in &f.quality {
            assert!(toml.contains(&format!("#   {name:<16}{d:.4}\n")), "{name} in\n{toml}");
        }
        let line = |k: &str| toml.lines().find(|l| l.starts_with(&format!("{k} = "))).unwrap_or_default().to_string();
        assert!(line("mix").starts_with("mix = { get = 0."), "{toml}");
        assert!(line("keys").starts_with("keys = { dist = \"zipf\", s = 0."), "{toml}");
        assert!(line("values").starts_with("values = { dist = \"quantiles\", q = ["), "{toml}");
        assert!(line("scans").starts_with("scans = { dist = \"quantiles\", q = [1, "), "{toml}");
    }

    #[test]
    fn empty_and_odd_sources_still_make_a_scenario() {
        let empty = profile(Vec::new());
        let f = fit(&empty);
        assert_eq!((f.model.keys.clone(), f.model.rate, f.model.key_size), (KeyDist::Uniform, None, DEFAULT_KEY_SIZE));
        assert_eq!(f.quality, vec![("mix".to_string(), 1.0)]);
        let toml = scenario_toml(&f, "-", 0, 0);
        assert_eq!(model_of(&toml), f.model);
        assert!(toml.contains("name = \"fit-trace\""));
        let odd = scenario_toml(&f, "dir/we\"ird\nname.csv", 0, 0);
        assert_eq!(model_of(&odd), f.model);
        let doc: toml::Table = toml::from_str(&odd).unwrap();
        assert_eq!(doc["name"].as_str(), Some("fit-we\"ird\nname"));
    }

    #[test]
    fn the_zipf_curve_matches_a_direct_sum() {
        for (keys, s) in [(50_000u64, 0.9), (30_000, 1.0), (20_000, 0.0), (1, 1.5)] {
            let weights: Vec<f64> = (1..=keys).map(|r| (r as f64).powf(-s)).collect();
            let total: f64 = weights.iter().sum();
            let curve = zipf_curve(keys, s);
            for (i, got) in curve.iter().enumerate() {
                let pos = i as f64 / 100.0 * keys as f64;
                let whole = pos.floor() as usize;
                let part = weights.get(whole).map_or(0.0, |w| (pos - whole as f64) * w);
                let want = (weights[..whole].iter().sum::<f64>() + part) / total;
                assert!((got - want).abs() < 1e-9, "keys {keys}, s {s}, x {i}%: {got} vs {want}");
            }
        }
    }
}
