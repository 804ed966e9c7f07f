//! A synthetic operation stream described by distributions: what `trace fit` writes into a
//! scenario (a `replay` phase's `model`), and what db_bench's mixgraph becomes ([`crate::mixgraph`]).
//! The stream is a function of the model, the op count, the key space and a seed, so every run
//! of a scenario replays the same ops; it scales to any `--records` (the key space) and any
//! `count` (the ops).
//!
//! Keys are db_bench's: key index v is 8 bytes of v big-endian, then ASCII '0' up to
//! `key_size` ([`key_bytes`]). The rules db_bench's mixgraph uses (its Pareto inverse, its
//! power-law key seed, its mt19937_64 key scramble, its sine rate) live here once and
//! [`crate::mixgraph`] calls them.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::{Kind, TraceOp};

/// Largest value size and scan length a model draws (64 MiB).
pub const MAX_SIZE: u32 = 64 << 20;
/// Most points of a quantile list (a percentile grid with its ends, 0.1 % apart).
pub const MAX_QUANTILES: usize = 1001;
/// Largest Zipf exponent: beyond it the top key takes all but a 1e-3 share anyway.
pub const MAX_ZIPF_S: f64 = 10.0;
pub const MAX_CLIENTS: u32 = 1024;
/// Key sizes: db_bench's format needs 8 bytes for the key's number.
pub const KEY_SIZE_MIN: u32 = 8;
pub const KEY_SIZE_MAX: u32 = 65535;

/// A distribution of sizes (value bytes, scan lengths).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SizeDist {
    Fixed {
        size: u32,
    },
    /// Empirical: `q[i]` is the i/(len-1) quantile; draws interpolate linearly between them.
    Quantiles {
        q: Vec<u32>,
    },
    /// db_bench's generalized Pareto (`value_theta`, `value_k`, `value_sigma`).
    Pareto {
        theta: f64,
        k: f64,
        sigma: f64,
    },
}

/// How keys are drawn from the key space `0 .. records`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
pub enum KeyDist {
    Uniform,
    /// The key of popularity rank i (from 1) is drawn with probability proportional to
    /// `1 / i^s`; ranks are scattered over the key space by a fixed permutation.
    Zipf {
        s: f64,
    },
    /// db_bench mixgraph's key distribution without key ranges: `key_dist_a`, `key_dist_b`.
    Power {
        a: f64,
        b: f64,
    },
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
    /// Sizes of the keys, drawn once per key (at least 8 bytes: key numbers stay apart);
    /// absent: every key `key_size` bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_sizes: Option<SizeDist>,
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

impl Model {
    /// Checks every field; the message names the field and its allowed range.
    pub fn validate(&self) -> Result<(), String> {
        self.check_mix()?;
        if !(KEY_SIZE_MIN..=KEY_SIZE_MAX).contains(&self.key_size) {
            return Err(format!("key_size must be in {KEY_SIZE_MIN}..={KEY_SIZE_MAX}, not {}", self.key_size));
        }
        self.keys.validate()?;
        self.values.validate("values")?;
        if let Some(k) = &self.key_sizes {
            k.validate("key_sizes")?;
        }
        if let Some(s) = &self.scans {
            s.validate("scans")?;
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(format!("rate must be a finite number of requests a second > 0, not {r}"));
            }
        }
        if let Some(sine) = &self.sine {
            if self.rate.is_some() {
                return Err("rate and sine both set the request rate: give one".to_string());
            }
            sine.validate("sine")?;
        }
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return Err(format!("clients must be in 1..={MAX_CLIENTS}, not {}", self.clients));
        }
        Ok(())
    }

    fn check_mix(&self) -> Result<(), String> {
        let m = &self.mix;
        for (name, v) in [("get", m.get), ("put", m.put), ("delete", m.delete), ("scan", m.scan)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("mix.{name} must be a finite number >= 0, not {v}"));
            }
        }
        if !(m.get + m.put + m.delete + m.scan > 0.0 && (m.get + m.put + m.delete + m.scan).is_finite()) {
            return Err("mix: get, put, delete and scan must have a positive, finite sum".to_string());
        }
        Ok(())
    }

    /// The model's first `ops` operations over the key space `0 .. records` (`records` 0 is
    /// taken as 1). A function of the model, `ops`, `records` and `seed`; O(1) memory. Assumes
    /// [`Model::validate`] passed (an invalid model gives some stream, never a panic).
    pub fn stream(&self, ops: u64, records: u64, seed: u64) -> ModelStream {
        let records = records.max(1);
        let m = &self.mix;
        let mut cum = [m.get, m.put, m.delete, m.scan];
        for i in 1..4 {
            cum[i] += cum[i - 1];
        }
        let clock = match (self.rate, &self.sine) {
            (Some(r), _) => Clock::Rate(r),
            (None, Some(s)) => Clock::Sine(SineClock::new(*s, 1_000_000.0, 0.0, seed)),
            (None, None) => Clock::Count,
        };
        ModelStream {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            cum,
            keys: KeySampler::new(&self.keys, records),
            key_size: self.key_size,
            key_sizes: self.key_sizes.clone(),
            values: self.values.clone(),
            scans: self.scans.clone(),
            clock,
            clients: self.clients.max(1),
            k: 0,
            ops,
        }
    }
}

impl KeyDist {
    fn validate(&self) -> Result<(), String> {
        match *self {
            KeyDist::Uniform => Ok(()),
            KeyDist::Zipf { s } if s.is_finite() && (0.0..=MAX_ZIPF_S).contains(&s) => Ok(()),
            KeyDist::Zipf { s } => Err(format!("keys.s (Zipf exponent) must be in 0..={MAX_ZIPF_S}, not {s}")),
            KeyDist::Power { a, b } => {
                for (name, v) in [("a", a), ("b", b)] {
                    if !(v.is_finite() && v > 0.0) {
                        return Err(format!("keys.{name} (power law) must be a finite number > 0, not {v}"));
                    }
                }
                Ok(())
            }
        }
    }
}

impl SizeDist {
    fn validate(&self, field: &str) -> Result<(), String> {
        match self {
            SizeDist::Fixed { size } if *size <= MAX_SIZE => Ok(()),
            SizeDist::Fixed { size } => Err(format!("{field}.size must be in 0..={MAX_SIZE}, not {size}")),
            SizeDist::Quantiles { q } => check_quantiles(field, q),
            SizeDist::Pareto { theta, k, sigma } => {
                let max = f64::from(MAX_SIZE);
                let ok = [
                    ("theta", *theta, theta.is_finite() && (0.0..=max).contains(theta), "0..=67108864"),
                    ("k", *k, k.is_finite() && (-10.0..=10.0).contains(k), "-10..=10"),
                    ("sigma", *sigma, sigma.is_finite() && *sigma > 0.0 && *sigma <= max, "(0, 67108864]"),
                ];
                match ok.iter().find(|(_, _, good, _)| !good) {
                    Some((name, v, _, range)) => Err(format!("{field}.{name} (Pareto) must be in {range}, not {v}")),
                    None => Ok(()),
                }
            }
        }
    }

    /// One size, from a uniform `uniform` in (0, 1].
    fn at(&self, uniform: f64) -> u32 {
        match self {
            SizeDist::Fixed { size } => *size,
            SizeDist::Quantiles { q } => quantile_at(q, uniform),
            SizeDist::Pareto { theta, k, sigma } => {
                pareto_inv(uniform, *theta, *k, *sigma).clamp(0, i64::from(MAX_SIZE)) as u32
            }
        }
    }
}

fn check_quantiles(field: &str, quantiles: &[u32]) -> Result<(), String> {
    if quantiles.is_empty() || quantiles.len() > MAX_QUANTILES {
        return Err(format!("{field}.q must have 1..={MAX_QUANTILES} points, not {}", quantiles.len()));
    }
    if let Some(i) = quantiles.iter().position(|&v| v > MAX_SIZE) {
        return Err(format!("{field}.q[{i}] must be in 0..={MAX_SIZE}, not {}", quantiles[i]));
    }
    match quantiles.windows(2).position(|w| w[1] < w[0]) {
        Some(i) => Err(format!(
            "{field}.q must be non-decreasing: q[{}] = {} < q[{i}] = {}",
            i + 1,
            quantiles[i + 1],
            quantiles[i]
        )),
        None => Ok(()),
    }
}

/// Linear interpolation between the quantiles around `uniform`.
fn quantile_at(quantiles: &[u32], uniform: f64) -> u32 {
    let Some(&last) = quantiles.last() else { return 0 };
    if quantiles.len() == 1 {
        return last;
    }
    let x = uniform.clamp(0.0, 1.0) * (quantiles.len() - 1) as f64;
    let i = (x.floor() as usize).min(quantiles.len() - 2);
    let (lo, hi) = (f64::from(quantiles[i]), f64::from(quantiles[i + 1]));
    (lo + (hi - lo) * (x - i as f64)).round() as u32
}

impl Sine {
    /// Requests a second at `seconds` seconds.
    pub fn at(&self, seconds: f64) -> f64 {
        self.a * (self.b * seconds + self.c).sin() + self.d
    }

    pub(crate) fn validate(&self, field: &str) -> Result<(), String> {
        for (name, v) in [("a", self.a), ("b", self.b), ("c", self.c)] {
            if !v.is_finite() {
                return Err(format!("{field}.{name} must be a finite number, not {v}"));
            }
        }
        if !(self.d.is_finite() && self.d > 0.0) {
            return Err(format!("{field}.d (the mean rate) must be a finite number > 0, not {}", self.d));
        }
        Ok(())
    }
}

/// Key bytes of key index `number`, as db_bench's `GenerateKeyFromInt` writes them (no prefix):
/// the low `min(key_size, 8)` bytes of `number` big-endian, then ASCII '0' up to `key_size`.
pub fn key_bytes(number: u64, key_size: u32) -> Vec<u8> {
    let n = key_size as usize;
    let head = n.min(8);
    let mut key = Vec::with_capacity(n);
    key.extend_from_slice(&number.to_be_bytes()[8 - head..]);
    key.resize(n, b'0');
    key
}

/// A double to int64 as db_bench's `static_cast` gives it on x86-64: out of range and NaN
/// become i64::MIN (the draws at u = 0 land there, and db_bench's clamps then apply).
pub(crate) fn cast_i64(value: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if value.is_nan() || !(-LIMIT..LIMIT).contains(&value) {
        i64::MIN
    } else {
        value as i64
    }
}

/// db_bench's `ParetoCdfInversion`: the generalized Pareto quantile at `uniform`, rounded up.
pub(crate) fn pareto_inv(uniform: f64, theta: f64, shape: f64, sigma: f64) -> i64 {
    let x =
        if shape == 0.0 { theta - sigma * uniform.ln() } else { theta + sigma * (uniform.powf(-shape) - 1.0) / shape };
    cast_i64(x.ceil())
}

/// db_bench's `PowerCdfInversion`: the seed of the key drawn at `uniform` under `y = a x^b`.
pub(crate) fn power_seed(uniform: f64, scale: f64, power: f64) -> i64 {
    cast_i64((uniform / scale).powf(1.0 / power).ceil())
}

const MT_N: usize = 312;
const MT_M: usize = 156;
const MT_MATRIX: u64 = 0xB502_6F5A_A966_19E9;
const MT_UPPER: u64 = 0xFFFF_FFFF_8000_0000;
const MT_LOWER: u64 = 0x7FFF_FFFF;

/// std::mt19937_64, db_bench's `Random64`: its key scramble and its per-thread draws.
#[derive(Clone)]
pub(crate) struct Mt64 {
    mt: Box<[u64; MT_N]>,
    i: usize,
}

fn mt_init(seed: u64, upto: usize, mt: &mut [u64]) {
    mt[0] = seed;
    for i in 1..upto {
        mt[i] = 6_364_136_223_846_793_005u64.wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 62)).wrapping_add(i as u64);
    }
}

fn mt_twist(upper: u64, lower: u64, far: u64) -> u64 {
    let x = (upper & MT_UPPER) | (lower & MT_LOWER);
    far ^ (x >> 1) ^ if x & 1 == 1 { MT_MATRIX } else { 0 }
}

fn mt_temper(mut word: u64) -> u64 {
    word ^= (word >> 29) & 0x5555_5555_5555_5555;
    word ^= (word << 17) & 0x71D6_7FFF_EDA6_0000;
    word ^= (word << 37) & 0xFFF7_EEE0_0000_0000;
    word ^ (word >> 43)
}

impl Mt64 {
    pub(crate) fn new(seed: u64) -> Mt64 {
        let mut mt = Box::new([0u64; MT_N]);
        mt_init(seed, MT_N, &mut mt[..]);
        Mt64 { mt, i: MT_N }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        if self.i >= MT_N {
            for j in 0..MT_N {
                self.mt[j] = mt_twist(self.mt[j], self.mt[(j + 1) % MT_N], self.mt[(j + MT_M) % MT_N]);
            }
            self.i = 0;
        }
        self.i += 1;
        mt_temper(self.mt[self.i - 1])
    }
}

/// The first output of mt19937_64 seeded with `seed` (db_bench's `Random64(seed).Next()`, its
/// key scramble), from the 157 state words it depends on.
pub(crate) fn mt64_first(seed: u64) -> u64 {
    let mut mt = [0u64; MT_M + 1];
    mt_init(seed, MT_M + 1, &mut mt);
    mt_temper(mt_twist(mt[0], mt[1], mt[MT_M]))
}

/// A fixed bijection of `0 .. n` (a 4-round Feistel network on the next even power of two,
/// cycle-walked back into range): spreads Zipf ranks over the key space.
#[derive(Debug, Clone)]
struct Scramble {
    n: u64,
    half: u32,
    mask: u64,
}

impl Scramble {
    fn new(range: u64) -> Scramble {
        let bits = (64 - range.saturating_sub(1).leading_zeros()).max(2);
        let half = bits.div_ceil(2);
        Scramble { n: range, half, mask: (1u64 << half) - 1 }
    }

    fn apply(&self, mut value: u64) -> u64 {
        loop {
            value = self.round_trip(value);
            if value < self.n {
                return value;
            }
        }
    }

    fn round_trip(&self, value: u64) -> u64 {
        let (mut l, mut r) = (value >> self.half, value & self.mask);
        for key in [0x9E37_79B9_7F4A_7C15u64, 0xBF58_476D_1CE4_E5B9, 0x94D0_49BB_1331_11EB, 0xD6E8_FEB8_6659_FD93] {
            (l, r) = (r, l ^ (mix64(r ^ key) & self.mask));
        }
        (l << self.half) | r
    }
}

/// splitmix64's finaliser.
fn mix64(mut state: u64) -> u64 {
    state = (state ^ (state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    state = (state ^ (state >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    state ^ (state >> 31)
}

#[derive(Debug, Clone)]
enum KeySampler {
    Uniform(u64),
    Zipf(Zipf<f64>, Scramble),
    /// Model's power law keeps db_bench's seed and scramble but an unsigned remainder, so
    /// every key is in range (mixgraph's signed one is in [`crate::mixgraph`]).
    Power {
        a: f64,
        b: f64,
        n: u64,
    },
}

impl KeySampler {
    fn new(dist: &KeyDist, records: u64) -> KeySampler {
        match *dist {
            KeyDist::Uniform => KeySampler::Uniform(records),
            KeyDist::Zipf { s } => match Zipf::new(records, s.clamp(0.0, MAX_ZIPF_S)) {
                Ok(z) => KeySampler::Zipf(z, Scramble::new(records)),
                Err(_) => KeySampler::Uniform(records),
            },
            KeyDist::Power { a, b } => KeySampler::Power { a, b, n: records },
        }
    }

    fn sample(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        match self {
            KeySampler::Uniform(n) => rng.gen_range(0..*n),
            KeySampler::Zipf(z, scramble) => {
                // Ranks are 1..=n; float rounding can give n + 1 at the very top.
                let rank = (z.sample(rng) as u64).clamp(1, scramble.n);
                scramble.apply(rank - 1)
            }
            KeySampler::Power { a, b, n } => mt64_first(power_seed(rng.gen::<f64>(), *a, *b) as u64) % n,
        }
    }
}

/// The size of key `key`: one draw of `sizes` per key, from the key's own number.
fn key_size_of(key: u64, sizes: &SizeDist) -> u32 {
    let u = 1.0 - ((splitmix(key) >> 11) as f64) * (1.0 / (1u64 << 53) as f64);
    sizes.at(u).clamp(KEY_SIZE_MIN, KEY_SIZE_MAX)
}

/// SplitMix64's output function: a key number spread over 64 bits.
fn splitmix(mut key: u64) -> u64 {
    key = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    key = (key ^ (key >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    key = (key ^ (key >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    key ^ (key >> 31)
}

/// Operation times: evenly at a rate that steps at each `interval` to the sine's value at the
/// step's start, as db_bench's mixgraph resets its rate limiter (a step whose rate is not
/// positive keeps the previous one, as db_bench does). `noise` is db_bench's
/// `sine_mix_rate_noise`; it draws from its own generator, apart from the ops'.
#[derive(Debug, Clone)]
pub(crate) struct SineClock {
    sine: Sine,
    interval_us: f64,
    noise: f64,
    rng: Xoshiro256PlusPlus,
    t_us: f64,
    rate: f64,
    step_end_us: f64,
}

impl SineClock {
    pub(crate) fn new(sine: Sine, interval_us: f64, noise: f64, seed: u64) -> SineClock {
        let interval_us = if interval_us.is_finite() && interval_us >= 1.0 { interval_us } else { 1.0 };
        let rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5EED_0F51_4E00);
        let mut c = SineClock { sine, interval_us, noise, rng, t_us: 0.0, rate: sine.d.max(1e-9), step_end_us: 0.0 };
        c.step();
        c
    }

    fn step(&mut self) {
        let start = (self.t_us / self.interval_us).floor() * self.interval_us;
        let r = self.noisy(self.sine.at(start / 1e6));
        if r.is_finite() && r > 0.0 {
            self.rate = r;
        }
        self.step_end_us = start + self.interval_us;
    }

    /// db_bench's `AddNoise`: a uniform integer in `-band/2 .. band/2` (band = sine_a), times
    /// the noise ratio; a draw that makes the rate negative is dropped.
    fn noisy(&mut self, rate: f64) -> f64 {
        let band = self.sine.a.abs().min(1e15) as u64;
        if self.noise <= 0.0 || self.noise > 1.0 || band == 0 {
            return rate;
        }
        let delta = (self.rng.gen_range(0..band) as f64 - (band / 2) as f64) * self.noise;
        if rate + delta < 0.0 {
            rate
        } else {
            rate + delta
        }
    }

    pub(crate) fn next_us(&mut self) -> u64 {
        if self.t_us >= self.step_end_us {
            self.step();
        }
        let ts = self.t_us as u64;
        self.t_us += 1e6 / self.rate;
        ts
    }
}

#[derive(Debug, Clone)]
enum Clock {
    /// No rate: op k at k µs.
    Count,
    Rate(f64),
    Sine(SineClock),
}

impl Clock {
    fn at(&mut self, op: u64) -> u64 {
        match self {
            Clock::Count => op,
            Clock::Rate(r) => (op as f64 * 1e6 / *r) as u64,
            Clock::Sine(s) => s.next_us(),
        }
    }
}

/// A [`Model`]'s operations (see [`Model::stream`]).
#[derive(Debug, Clone)]
pub struct ModelStream {
    rng: Xoshiro256PlusPlus,
    /// Cumulative mix parts: get, put, delete, scan.
    cum: [f64; 4],
    keys: KeySampler,
    key_size: u32,
    key_sizes: Option<SizeDist>,
    values: SizeDist,
    scans: Option<SizeDist>,
    clock: Clock,
    clients: u32,
    k: u64,
    ops: u64,
}

impl ModelStream {
    fn kind(&mut self) -> Kind {
        let x = self.rng.gen::<f64>() * self.cum[3];
        let i = self.cum.iter().position(|&c| x < c).unwrap_or(0);
        Kind::ALL[i]
    }

    /// A uniform draw in (0, 1]: the Pareto inverse is infinite at 0.
    fn unit(&mut self) -> f64 {
        1.0 - self.rng.gen::<f64>()
    }
}

impl Iterator for ModelStream {
    type Item = TraceOp;

    fn next(&mut self) -> Option<TraceOp> {
        if self.k >= self.ops {
            return None;
        }
        let kind = self.kind();
        let v = self.keys.sample(&mut self.rng);
        let size = self.key_sizes.as_ref().map_or(self.key_size, |d| key_size_of(v, d));
        let key = key_bytes(v, size);
        let value_size = match kind {
            Kind::Put => Some(self.unit()).map(|u| self.values.at(u)),
            _ => None,
        };
        // Without `scans`, a scan's length is unknown, as in a RocksDB trace (a replay visits 1).
        let scan_len = match kind {
            Kind::Scan => Some(self.unit()).and_then(|u| self.scans.as_ref().map(|s| s.at(u))),
            _ => None,
        };
        let op = TraceOp {
            ts_us: self.clock.at(self.k),
            client: (self.k % u64::from(self.clients)) as u32,
            kind,
            key,
            value_size,
            scan_len,
            joined: false,
        };
        self.k += 1;
        Some(op)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.ops - self.k).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn key_sizes_are_drawn_once_per_key_and_never_below_8_bytes() {
        let m = Model { key_sizes: Some(SizeDist::Quantiles { q: vec![4, 20, 40] }), ..model(KeyDist::Uniform) };
        assert_eq!(m.validate(), Ok(()));
        let mut size_of = HashMap::new();
        for op in m.stream(20_000, 100, 5) {
            let v = u64::from_be_bytes(op.key[..8].try_into().unwrap());
            let len = *size_of.entry(v).or_insert(op.key.len());
            assert_eq!(len, op.key.len(), "key {v} keeps its size");
        }
        let sizes: Vec<usize> = size_of.values().copied().collect();
        assert!(sizes.iter().all(|&n| (8..=40).contains(&n)), "{sizes:?}");
        assert!(sizes.iter().any(|&n| n > 20) && sizes.iter().any(|&n| n < 20), "sizes vary: {sizes:?}");
    }

    fn model(keys: KeyDist) -> Model {
        Model {
            mix: Mix { get: 0.5, put: 0.3, delete: 0.05, scan: 0.15 },
            key_size: 16,
            key_sizes: None,
            keys,
            values: SizeDist::Fixed { size: 100 },
            scans: None,
            rate: None,
            sine: None,
            clients: 1,
        }
    }

    fn pareto() -> SizeDist {
        SizeDist::Pareto { theta: 0.0, k: 0.2615, sigma: 25.45 }
    }

    fn index(key: &[u8]) -> u64 {
        u64::from_be_bytes(key[..8].try_into().unwrap())
    }

    #[test]
    fn the_same_seed_gives_the_same_ops() {
        let m =
            Model { values: pareto(), scans: Some(pareto()), rate: Some(1000.0), ..model(KeyDist::Zipf { s: 0.99 }) };
        let a: Vec<TraceOp> = m.stream(5000, 1000, 9).collect();
        assert_eq!(a, m.stream(5000, 1000, 9).collect::<Vec<_>>());
        assert_ne!(a, m.stream(5000, 1000, 10).collect::<Vec<_>>());
        assert_eq!(a.len(), 5000);
    }

    #[test]
    fn the_mix_is_kept_within_half_a_point() {
        let m = model(KeyDist::Uniform);
        let mut n: HashMap<Kind, u64> = HashMap::new();
        for op in m.stream(200_000, 1000, 1) {
            *n.entry(op.kind).or_default() += 1;
        }
        for (kind, want) in [(Kind::Get, 0.5), (Kind::Put, 0.3), (Kind::Delete, 0.05), (Kind::Scan, 0.15)] {
            let got = n.get(&kind).copied().unwrap_or(0) as f64 / 200_000.0;
            assert!((got - want).abs() < 0.005, "{kind:?}: {got} for {want}");
        }
    }

    #[test]
    fn keys_are_db_benchs_format() {
        assert_eq!(key_bytes(0, 16), [&[0u8; 8][..], b"00000000"].concat());
        assert_eq!(key_bytes(1, 16), [&[0u8, 0, 0, 0, 0, 0, 0, 1][..], b"00000000"].concat());
        assert_eq!(key_bytes(1 << 40, 12), [&[0u8, 0, 1, 0, 0, 0, 0, 0][..], b"0000"].concat());
        assert_eq!(key_bytes(0x0102_0304_0506_0708, 8), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        let ops: Vec<TraceOp> = model(KeyDist::Uniform).stream(100, 50, 3).collect();
        assert!(ops.iter().all(|o| o.key.len() == 16 && o.key[8..] == *b"00000000"));
    }

    /// The share of the most popular 1% of the keys, Zipf's sum against the stream's counts.
    fn top_share(exponent: f64) -> (f64, f64) {
        let (n, ops) = (10_000u64, 400_000u64);
        let mut counts = vec![0u32; n as usize];
        for op in model(KeyDist::Zipf { s: exponent }).stream(ops, n, 5) {
            let v = index(&op.key);
            assert!(v < n, "key {v} out of 0..{n}");
            counts[v as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let got = counts[..100].iter().map(|&c| f64::from(c)).sum::<f64>() / ops as f64;
        let h = |m: u64| (1..=m).map(|i| (i as f64).powf(-exponent)).sum::<f64>();
        (got, h(100) / h(n))
    }

    #[test]
    fn zipf_top_keys_take_their_analytic_share() {
        for s in [0.9, 1.3] {
            let (got, want) = top_share(s);
            assert!((got - want).abs() < 0.01, "s = {s}: top 1% take {got}, Zipf says {want}");
        }
    }

    #[test]
    fn zipf_ranks_are_scattered_over_every_key() {
        let scramble = Scramble::new(1000);
        let mut seen: Vec<u64> = (0..1000).map(|x| scramble.apply(x)).collect();
        assert_ne!(seen[..10], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        for n in [1, 2, 3, u64::MAX] {
            assert!(Scramble::new(n).apply(n - 1) < n);
        }
        for s in [0.0, 5.0, 10.0] {
            assert!(model(KeyDist::Zipf { s }).stream(1000, 7, 1).all(|o| index(&o.key) < 7));
        }
    }

    #[test]
    fn power_keys_stay_in_range() {
        let m = model(KeyDist::Power { a: 0.002312, b: 0.3467 });
        assert!(m.stream(10_000, 1000, 1).all(|o| index(&o.key) < 1000));
    }

    #[test]
    fn pareto_sizes_have_the_analytic_mean_and_median() {
        let (k, sigma) = (0.2615f64, 25.45f64);
        let m = Model { mix: Mix { put: 1.0, ..Mix::default() }, values: pareto(), ..model(KeyDist::Uniform) };
        let mut sizes: Vec<u32> = m.stream(200_000, 1000, 4).filter_map(|o| o.value_size).collect();
        sizes.sort_unstable();
        let mean = sizes.iter().map(|&v| f64::from(v)).sum::<f64>() / sizes.len() as f64;
        // Draws are rounded up: E[ceil X] = sum over j >= 0 of P(X > j).
        let want_mean: f64 = (0..10_000_000).map(|j| (1.0 + k * j as f64 / sigma).powf(-1.0 / k)).sum();
        let want_median = (sigma * (2f64.powf(k) - 1.0) / k).ceil();
        assert!((mean / want_mean - 1.0).abs() < 0.03, "mean {mean}, analytic {want_mean}");
        let median = f64::from(sizes[sizes.len() / 2]);
        assert!((median / want_median - 1.0).abs() < 0.03, "median {median}, analytic {want_median}");
    }

    #[test]
    fn quantile_sizes_interpolate() {
        assert_eq!(quantile_at(&[10, 20], 0.5), 15);
        assert_eq!(quantile_at(&[10, 20, 40], 1.0), 40);
        assert_eq!(quantile_at(&[7], 0.3), 7);
        assert_eq!(quantile_at(&[], 0.3), 0);
    }

    #[test]
    fn sine_timestamps_follow_the_rate_each_second() {
        let sine = Sine { a: 300.0, b: 0.5, c: 0.2, d: 1000.0 };
        let m = Model { sine: Some(sine), ..model(KeyDist::Uniform) };
        let mut per_s = [0u64; 20];
        for op in m.stream(30_000, 100, 1) {
            if let Some(n) = per_s.get_mut((op.ts_us / 1_000_000) as usize) {
                *n += 1;
            }
        }
        for (t, &n) in per_s.iter().enumerate() {
            let want = sine.at(t as f64);
            assert!((n as f64 / want - 1.0).abs() < 0.05, "second {t}: {n} ops, the sine says {want}");
        }
    }

    #[test]
    fn constant_rate_and_clients() {
        let m = Model { rate: Some(250.0), clients: 3, ..model(KeyDist::Uniform) };
        let ops: Vec<TraceOp> = m.stream(10, 10, 1).collect();
        assert_eq!(ops.iter().map(|o| o.ts_us).collect::<Vec<_>>(), (0..10).map(|k| k * 4000).collect::<Vec<_>>());
        assert_eq!(ops.iter().map(|o| o.client).collect::<Vec<_>>(), [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]);
        assert!(ops.iter().all(|o| !o.joined));
        let plain: Vec<u64> = model(KeyDist::Uniform).stream(5, 10, 1).map(|o| o.ts_us).collect();
        assert_eq!(plain, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn mt19937_64_is_the_standard_one() {
        // The C++ standard: the 10000th output of a default-seeded mt19937_64.
        let mut mt = Mt64::new(5489);
        let v = (0..10_000).map(|_| mt.next_u64()).last();
        assert_eq!(v, Some(9_981_545_732_273_789_042));
        for seed in [0, 1, 5489, u64::MAX] {
            assert_eq!(mt64_first(seed), Mt64::new(seed).next_u64());
        }
    }

    #[test]
    fn db_benchs_casts_and_inverses() {
        assert_eq!(cast_i64(f64::INFINITY), i64::MIN);
        assert_eq!(cast_i64(f64::NAN), i64::MIN);
        assert_eq!(cast_i64(-3.0), -3);
        assert_eq!(pareto_inv(0.0, 0.0, 0.2615, 25.45), i64::MIN);
        assert_eq!(pareto_inv(1.0, 5.0, 0.2615, 25.45), 5);
        assert_eq!(pareto_inv(0.5, 0.0, 0.0, 10.0), 7);
        assert_eq!(power_seed(0.0, 0.002312, 0.3467), 0);
    }

    fn err(model: &Model) -> String {
        model.validate().expect_err("invalid")
    }

    #[test]
    fn validate_names_the_field() {
        let ok = model(KeyDist::Zipf { s: 1.0 });
        assert_eq!(ok.validate(), Ok(()));
        let cases: Vec<(Model, &str)> = vec![
            (Model { mix: Mix::default(), ..ok.clone() }, "mix"),
            (Model { mix: Mix { get: f64::NAN, ..ok.mix }, ..ok.clone() }, "mix.get"),
            (Model { mix: Mix { scan: -1.0, ..ok.mix }, ..ok.clone() }, "mix.scan"),
            (Model { key_size: 7, ..ok.clone() }, "key_size"),
            (Model { key_size: 65536, ..ok.clone() }, "key_size"),
            (Model { keys: KeyDist::Zipf { s: 10.5 }, ..ok.clone() }, "keys.s"),
            (Model { keys: KeyDist::Zipf { s: f64::INFINITY }, ..ok.clone() }, "keys.s"),
            (Model { keys: KeyDist::Power { a: 0.0, b: 1.0 }, ..ok.clone() }, "keys.a"),
            (Model { values: SizeDist::Fixed { size: MAX_SIZE + 1 }, ..ok.clone() }, "values.size"),
            (Model { values: SizeDist::Quantiles { q: vec![] }, ..ok.clone() }, "values.q"),
            (Model { values: SizeDist::Quantiles { q: vec![1; 1002] }, ..ok.clone() }, "values.q"),
            (Model { values: SizeDist::Quantiles { q: vec![3, 2] }, ..ok.clone() }, "values.q"),
            (Model { values: SizeDist::Pareto { theta: 0.0, k: 0.2, sigma: 0.0 }, ..ok.clone() }, "values.sigma"),
            (Model { scans: Some(SizeDist::Pareto { theta: -1.0, k: 0.2, sigma: 1.0 }), ..ok.clone() }, "scans.theta"),
            (Model { rate: Some(0.0), ..ok.clone() }, "rate"),
            (Model { sine: Some(Sine { a: 1.0, b: 1.0, c: 0.0, d: -1.0 }), ..ok.clone() }, "sine.d"),
            (Model { sine: Some(Sine { a: f64::NAN, b: 1.0, c: 0.0, d: 1.0 }), ..ok.clone() }, "sine.a"),
            (Model { clients: 0, ..ok.clone() }, "clients"),
            (Model { clients: 1025, ..ok.clone() }, "clients"),
        ];
        for (m, field) in cases {
            let e = err(&m);
            assert!(e.starts_with(field), "`{e}` should name {field}");
            // An invalid model still streams without a panic.
            assert_eq!(m.stream(50, 0, 1).count(), 50);
        }
    }

    #[test]
    fn the_shape_round_trips_through_toml() {
        let m = Model { values: pareto(), scans: Some(SizeDist::Quantiles { q: vec![1, 5, 9] }), ..ok_model() };
        let text = toml::to_string(&m).unwrap();
        assert_eq!(toml::from_str::<Model>(&text).unwrap(), m);
    }

    fn ok_model() -> Model {
        model(KeyDist::Power { a: 0.002312, b: 0.3467 })
    }
}
