//! db_bench's `mixgraph` benchmark (RocksDB 7.8.3, `tools/db_bench_tool.cc`, `MixGraph`) as an
//! operation stream: its parameters, named as db_bench's flags, and the ops it issues.
//!
//! Each op, as db_bench draws it, starts from one uniform `r` in `0 .. num` (`num` = the
//! stream's `records`), and `u = r / num` drives everything: the kind (`r` modulo the mix's
//! integer ranges out of ~1000), the key (uniform `r`; or the power law's seed `ceil((u/a)^(1/b))`
//! scrambled by mt19937_64, with db_bench's signed remainder, so about half the keys are
//! `2^64 - x`, outside the loaded `0 .. num`, and read as not found, as db_bench's are; or a
//! key range by the two-term exponential hotness, then the power law inside it), the value size
//! (the generalized Pareto at `u`: below 10 becomes 10, above `mix_max_value_size` wraps modulo
//! it) and the scan length (the Pareto at `u` modulo `mix_max_scan_len`). `r` comes from
//! mt19937_64 as db_bench's thread draws it, seeded with `seed`: db_bench `-seed=S` with one
//! thread issues the ops of seed `S + 1`, key for key (only its `Next` count after a seek stops
//! early at the end of the keys).
//!
//! Times: with `sine_mix_rate`, ops are spaced evenly at `sine_a * sin(sine_b * t + sine_c) +
//! sine_d` per second, the rate reset every `sine_mix_rate_interval_milliseconds` to its value at
//! that time, as db_bench resets its rate limiters (db_bench's first interval runs unlimited;
//! here it runs at the rate at t = 0). Without it, op k is at k µs (db_bench runs flat out).

use serde::{Deserialize, Serialize};

use crate::model::{cast_i64, key_bytes, mt64_first, pareto_inv, power_seed, Mt64, Sine, SineClock};
use crate::{Kind, TraceOp};

/// db_bench's cap on a mixgraph value, whatever `mix_max_value_size` says (1 MiB).
pub const VALUE_MAX: i64 = 1 << 20;
/// Most key ranges (db_bench keeps one entry per range).
pub const KEYRANGE_NUM_MAX: i64 = 1_000_000;
/// Smallest key-range hotness db_bench counts (below it a range gets no share).
const HOTNESS_MIN: f64 = 1e-16;
/// Most integers the key-range shares may span (db_bench's int64, with room).
const RANGE_SPAN_MAX: f64 = 4e18;

/// db_bench's mixgraph flags (without the dash), defaults as in db_bench 7.8.3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Mixgraph {
    pub key_dist_a: f64,
    pub key_dist_b: f64,
    pub keyrange_num: i64,
    pub keyrange_dist_a: f64,
    pub keyrange_dist_b: f64,
    pub keyrange_dist_c: f64,
    pub keyrange_dist_d: f64,
    pub value_theta: f64,
    pub value_k: f64,
    pub value_sigma: f64,
    pub iter_theta: f64,
    pub iter_k: f64,
    pub iter_sigma: f64,
    pub mix_get_ratio: f64,
    pub mix_put_ratio: f64,
    pub mix_seek_ratio: f64,
    pub mix_max_scan_len: i64,
    pub mix_max_value_size: i64,
    pub sine_mix_rate: bool,
    pub sine_a: f64,
    pub sine_b: f64,
    pub sine_c: f64,
    pub sine_d: f64,
    pub sine_mix_rate_interval_milliseconds: u64,
    pub sine_mix_rate_noise: f64,
    pub key_size: u32,
    /// db_bench's `value_size`: the records loaded before (fillrandom); mixgraph's puts do not
    /// use it.
    pub value_size: u32,
}

impl Default for Mixgraph {
    fn default() -> Mixgraph {
        Mixgraph {
            key_dist_a: 0.0,
            key_dist_b: 0.0,
            keyrange_num: 1,
            keyrange_dist_a: 0.0,
            keyrange_dist_b: 0.0,
            keyrange_dist_c: 0.0,
            keyrange_dist_d: 0.0,
            value_theta: 0.0,
            value_k: 0.2615,
            value_sigma: 25.45,
            iter_theta: 0.0,
            iter_k: 2.517,
            iter_sigma: 14.236,
            mix_get_ratio: 1.0,
            mix_put_ratio: 0.0,
            mix_seek_ratio: 0.0,
            mix_max_scan_len: 10000,
            mix_max_value_size: 1024,
            sine_mix_rate: false,
            sine_a: 1.0,
            sine_b: 1.0,
            sine_c: 0.0,
            sine_d: 1.0,
            sine_mix_rate_interval_milliseconds: 10000,
            sine_mix_rate_noise: 0.0,
            key_size: 16,
            value_size: 100,
        }
    }
}

fn finite(name: &str, value: f64, what: &str) -> Result<(), String> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number{what}, not {value}"))
    }
}

fn non_negative(name: &str, value: f64, what: &str) -> Result<(), String> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number >= 0{what}, not {value}"))
    }
}

impl Mixgraph {
    /// Checks every flag; the message names it and its allowed range.
    pub fn validate(&self) -> Result<(), String> {
        non_negative("key_dist_a", self.key_dist_a, " (0: uniform keys)")?;
        non_negative("key_dist_b", self.key_dist_b, " (0: uniform keys)")?;
        for (name, v) in [("value_theta", self.value_theta), ("value_k", self.value_k), ("iter_theta", self.iter_theta)]
        {
            finite(name, v, "")?;
        }
        finite("iter_k", self.iter_k, "")?;
        non_negative("value_sigma", self.value_sigma, "")?;
        non_negative("iter_sigma", self.iter_sigma, "")?;
        self.check_mix()?;
        if !(1..=i64::from(i32::MAX)).contains(&self.mix_max_scan_len) {
            return Err(format!("mix_max_scan_len must be in 1..={}, not {}", i32::MAX, self.mix_max_scan_len));
        }
        if self.mix_max_value_size < 1 {
            return Err(format!(
                "mix_max_value_size must be >= 1 (db_bench caps it at {VALUE_MAX}), not {}",
                self.mix_max_value_size
            ));
        }
        self.check_sine()?;
        self.check_keyranges()?;
        let (lo, hi) = (crate::model::KEY_SIZE_MIN, crate::model::KEY_SIZE_MAX);
        if !(lo..=hi).contains(&self.key_size) {
            return Err(format!("key_size must be in {lo}..={hi}, not {}", self.key_size));
        }
        if self.value_size > crate::model::MAX_SIZE {
            return Err(format!("value_size must be in 0..={}, not {}", crate::model::MAX_SIZE, self.value_size));
        }
        Ok(())
    }

    fn check_mix(&self) -> Result<(), String> {
        let parts = [("mix_get_ratio", self.mix_get_ratio), ("mix_put_ratio", self.mix_put_ratio)];
        for (name, v) in parts.into_iter().chain([("mix_seek_ratio", self.mix_seek_ratio)]) {
            non_negative(name, v, "")?;
        }
        let sum = self.mix_get_ratio + self.mix_put_ratio + self.mix_seek_ratio;
        if !(sum > 0.0 && sum.is_finite()) {
            return Err("mix_get_ratio, mix_put_ratio and mix_seek_ratio must have a positive, finite sum".to_string());
        }
        Ok(())
    }

    fn check_sine(&self) -> Result<(), String> {
        if !self.sine_mix_rate {
            return Ok(());
        }
        let s = self.sine();
        s.validate("sine").map_err(|e| e.replace("sine.", "sine_"))?;
        if !(1..=1_000_000_000).contains(&self.sine_mix_rate_interval_milliseconds) {
            return Err(format!(
                "sine_mix_rate_interval_milliseconds must be in 1..=1000000000, not {}",
                self.sine_mix_rate_interval_milliseconds
            ));
        }
        if !(self.sine_mix_rate_noise.is_finite() && (0.0..=1.0).contains(&self.sine_mix_rate_noise)) {
            return Err(format!("sine_mix_rate_noise must be in 0..=1, not {}", self.sine_mix_rate_noise));
        }
        Ok(())
    }

    fn check_keyranges(&self) -> Result<(), String> {
        if !(1..=KEYRANGE_NUM_MAX).contains(&self.keyrange_num) {
            return Err(format!("keyrange_num must be in 1..={KEYRANGE_NUM_MAX}, not {}", self.keyrange_num));
        }
        let abcd = [
            ("keyrange_dist_a", self.keyrange_dist_a),
            ("keyrange_dist_b", self.keyrange_dist_b),
            ("keyrange_dist_c", self.keyrange_dist_c),
            ("keyrange_dist_d", self.keyrange_dist_d),
        ];
        for (name, v) in abcd {
            finite(name, v, "")?;
        }
        if !self.prefix_modeling() {
            return Ok(());
        }
        if self.raw_hotness().any(|p| p.is_nan() || p == f64::INFINITY) {
            return Err("keyrange_dist_a..d give a key range an infinite hotness a*exp(b*x)+c*exp(d*x)".to_string());
        }
        let Some(first) = self.hotness().flatten().next() else {
            return Err(format!(
                "keyrange_dist_a..d give every key range a hotness a*exp(b*x)+c*exp(d*x) below {HOTNESS_MIN} \
                 for x in 1..={}: no range could be drawn",
                self.keyrange_num
            ));
        };
        // db_bench scales the shares so the first range drawn gets at least one integer.
        let span: f64 = self.hotness().flatten().map(|p| p * (1.0 / first + 1.0)).sum();
        if !(span.is_finite() && span <= RANGE_SPAN_MAX) {
            return Err(format!(
                "keyrange_dist_a..d spread the key ranges' hotness too far (over {RANGE_SPAN_MAX:e} integers)"
            ));
        }
        Ok(())
    }

    /// The hotness `a*exp(b*x)+c*exp(d*x)` of ranges x = `keyrange_num` down to 1, db_bench's order.
    fn raw_hotness(&self) -> impl Iterator<Item = f64> + '_ {
        (1..=self.keyrange_num.clamp(1, KEYRANGE_NUM_MAX)).rev().map(|x| {
            let x = x as f64;
            self.keyrange_dist_a * (self.keyrange_dist_b * x).exp()
                + self.keyrange_dist_c * (self.keyrange_dist_d * x).exp()
        })
    }

    /// The hotness of each range that gets a share (`None`: below 1e-16, or not finite, which
    /// validate refuses).
    fn hotness(&self) -> impl Iterator<Item = Option<f64>> + '_ {
        self.raw_hotness().map(|p| (p.is_finite() && p >= HOTNESS_MIN).then_some(p))
    }

    fn random_modeling(&self) -> bool {
        self.key_dist_a == 0.0 || self.key_dist_b == 0.0
    }

    fn prefix_modeling(&self) -> bool {
        [self.keyrange_dist_a, self.keyrange_dist_b, self.keyrange_dist_c, self.keyrange_dist_d]
            .iter()
            .any(|v| *v != 0.0)
    }

    fn sine(&self) -> Sine {
        Sine { a: self.sine_a, b: self.sine_b, c: self.sine_c, d: self.sine_d }
    }

    /// The first `ops` ops of db_bench's mixgraph over `records` keys (db_bench's `num`; 0 is
    /// taken as 1), its thread's generator seeded with `seed` (see the module's text). Setup
    /// memory is O(keyrange_num), O(1) per op. Assumes [`Mixgraph::validate`] passed (an
    /// invalid one gives some stream, never a panic).
    pub fn stream(&self, ops: u64, records: u64, seed: u64) -> MixgraphStream {
        let num = records.clamp(1, i64::MAX as u64);
        let keys = if self.random_modeling() {
            Keys::Random
        } else if self.prefix_modeling() {
            Keys::Ranges(Ranges::new(self, num))
        } else {
            Keys::Power
        };
        let clock = self.sine_mix_rate.then(|| {
            let interval_us = self.sine_mix_rate_interval_milliseconds as f64 * 1000.0;
            SineClock::new(self.sine(), interval_us, self.sine_mix_rate_noise, seed)
        });
        MixgraphStream {
            p: self.clone(),
            rng: Mt64::new(seed),
            num,
            decider: Decider::new([self.mix_get_ratio, self.mix_put_ratio, self.mix_seek_ratio]),
            keys,
            value_max: self.mix_max_value_size.clamp(1, VALUE_MAX),
            clock,
            k: 0,
            ops,
        }
    }
}

/// db_bench's `QueryDecider`: each kind gets `ceil(1000 * ratio / sum)` integers.
#[derive(Debug, Clone)]
struct Decider {
    ends: [i64; 3],
}

impl Decider {
    fn new(ratios: [f64; 3]) -> Decider {
        let sum: f64 = ratios.iter().sum();
        let mut ends = [0i64; 3];
        let mut end = 0i64;
        for (e, r) in ends.iter_mut().zip(ratios) {
            let share = (1000.0 * (r / sum)).ceil();
            end += if share.is_finite() { share.clamp(0.0, 1000.0) as i64 } else { 0 };
            *e = end;
        }
        Decider { ends }
    }

    fn kind(&self, random: i64) -> Kind {
        let range = self.ends[2].max(1);
        let pos = random.rem_euclid(range);
        match self.ends.iter().position(|&e| pos < e) {
            Some(1) => Kind::Put,
            Some(2) => Kind::Scan,
            _ => Kind::Get,
        }
    }
}

/// db_bench's `GenerateTwoTermExpKeys`: ranges of `num / keyrange_num` keys, each drawn by its
/// share of integers, in db_bench's shuffled order.
#[derive(Debug, Clone)]
struct Ranges {
    /// Start of each range's integers, in key order.
    starts: Vec<i64>,
    rand_max: i64,
    size: i64,
}

impl Ranges {
    fn new(params: &Mixgraph, num: u64) -> Ranges {
        let n = params.keyrange_num.clamp(1, KEYRANGE_NUM_MAX);
        let mut amplify = 0i64;
        let mut access: Vec<i64> = Vec::with_capacity(n as usize);
        for h in params.hotness() {
            let h = h.unwrap_or(0.0);
            if amplify == 0 && h > 0.0 {
                amplify = cast_i64((1.0 / h).floor()).saturating_add(1);
            }
            access.push(if h > 0.0 { cast_i64((amplify as f64 * h).floor()).max(0) } else { 0 });
        }
        let rand_max = access.iter().fold(0i64, |s, a| s.saturating_add(*a));
        // db_bench shuffles with mt19937_64 seeded by the total, so the order is the same for
        // the same parameters.
        let mut shuffle = Mt64::new(rand_max as u64);
        for i in 0..access.len() {
            let pos = (shuffle.next_u64() % n as u64) as usize;
            access.swap(i, pos);
        }
        let starts = access
            .iter()
            .scan(0i64, |s, a| {
                let start = *s;
                *s = s.saturating_add(*a);
                Some(start)
            })
            .collect();
        // db_bench divides by zero when num < keyrange_num; here each range is then one key.
        let size = (num as i64 / n).max(1);
        Ranges { starts, rand_max: rand_max.max(1), size }
    }

    fn key(&self, random: i64, scale: f64, power: f64) -> u64 {
        let x = random.rem_euclid(self.rand_max);
        let id = self.starts.partition_point(|s| *s <= x).saturating_sub(1) as i64;
        let u = random.rem_euclid(self.size) as f64 / self.size as f64;
        // Inside a range db_bench's remainder is unsigned.
        let offset = (mt64_first(power_seed(u, scale, power) as u64) % self.size as u64) as i64;
        self.size.wrapping_mul(id).wrapping_add(offset) as u64
    }
}

#[derive(Debug, Clone)]
enum Keys {
    /// `key_dist_a` or `key_dist_b` is 0: the key is the draw itself.
    Random,
    /// One power law over all keys (db_bench's signed remainder: a negative one wraps).
    Power,
    Ranges(Ranges),
}

/// db_bench mixgraph's operations (see [`Mixgraph::stream`]).
#[derive(Clone)]
pub struct MixgraphStream {
    p: Mixgraph,
    rng: Mt64,
    num: u64,
    decider: Decider,
    keys: Keys,
    value_max: i64,
    clock: Option<SineClock>,
    k: u64,
    ops: u64,
}

impl MixgraphStream {
    fn key(&self, random: i64, uniform: f64) -> u64 {
        let (a, b) = (self.p.key_dist_a, self.p.key_dist_b);
        match &self.keys {
            Keys::Random => random as u64,
            Keys::Power => ((mt64_first(power_seed(uniform, a, b) as u64) as i64) % self.num as i64) as u64,
            Keys::Ranges(ranges) => ranges.key(random, a, b),
        }
    }

    fn value_size(&self, uniform: f64) -> u32 {
        let v = pareto_inv(uniform, self.p.value_theta, self.p.value_k, self.p.value_sigma);
        let v = if v < 10 {
            10
        } else if v > self.value_max {
            v % self.value_max
        } else {
            v
        };
        v as u32
    }

    fn scan_len(&self, uniform: f64) -> u32 {
        let s =
            pareto_inv(uniform, self.p.iter_theta, self.p.iter_k, self.p.iter_sigma) % self.p.mix_max_scan_len.max(1);
        s.clamp(0, i64::from(u32::MAX)) as u32
    }
}

impl Iterator for MixgraphStream {
    type Item = TraceOp;

    fn next(&mut self) -> Option<TraceOp> {
        if self.k >= self.ops {
            return None;
        }
        // db_bench draws twice an op: one picks the DB (`SelectDBWithCfh`), one the key.
        self.rng.next_u64();
        let r = (self.rng.next_u64() % self.num) as i64;
        let u = r as f64 / self.num as f64;
        let kind = self.decider.kind(r);
        let op = TraceOp {
            ts_us: self.clock.as_mut().map_or(self.k, SineClock::next_us),
            client: 0,
            kind,
            key: key_bytes(self.key(r, u), self.p.key_size),
            value_size: (kind == Kind::Put).then(|| self.value_size(u)),
            scan_len: (kind == Kind::Scan).then(|| self.scan_len(u)),
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
    use super::*;

    fn zippy() -> Mixgraph {
        Mixgraph {
            key_dist_a: 0.002312,
            key_dist_b: 0.3467,
            mix_get_ratio: 0.85,
            mix_put_ratio: 0.14,
            mix_seek_ratio: 0.01,
            ..Mixgraph::default()
        }
    }

    fn prefix() -> Mixgraph {
        Mixgraph {
            keyrange_num: 30,
            keyrange_dist_a: 14.18,
            keyrange_dist_b: -2.917,
            keyrange_dist_c: 0.0164,
            keyrange_dist_d: -0.08082,
            ..zippy()
        }
    }

    fn index(op: &TraceOp) -> u64 {
        u64::from_be_bytes(op.key[..8].try_into().unwrap())
    }

    #[test]
    fn defaults_are_db_benchs() {
        let m: Mixgraph = toml::from_str("").unwrap();
        assert_eq!(m, Mixgraph::default());
        assert_eq!((m.value_k, m.value_sigma, m.iter_k, m.iter_sigma), (0.2615, 25.45, 2.517, 14.236));
        assert_eq!((m.mix_get_ratio, m.mix_max_value_size, m.mix_max_scan_len), (1.0, 1024, 10000));
        assert_eq!((m.sine_mix_rate_interval_milliseconds, m.key_size, m.value_size), (10000, 16, 100));
        assert!(toml::from_str::<Mixgraph>("key_dist_c = 1.0").is_err(), "unknown flags are refused");
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn the_same_seed_gives_the_same_ops() {
        for m in [zippy(), prefix(), Mixgraph { sine_mix_rate: true, sine_mix_rate_noise: 0.5, ..zippy() }] {
            let a: Vec<TraceOp> = m.stream(3000, 10_000, 3).collect();
            assert_eq!(a, m.stream(3000, 10_000, 3).collect::<Vec<_>>());
            assert_ne!(a, m.stream(3000, 10_000, 4).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_mix_is_db_benchs_within_half_a_point() {
        let ops: Vec<TraceOp> = zippy().stream(200_000, 1_000_000, 1).collect();
        for (kind, want) in [(Kind::Get, 0.85), (Kind::Put, 0.14), (Kind::Scan, 0.01)] {
            let got = ops.iter().filter(|o| o.kind == kind).count() as f64 / ops.len() as f64;
            assert!((got - want).abs() < 0.005, "{kind:?}: {got} for {want}");
        }
        assert!(ops.iter().all(|o| o.key.len() == 16 && o.client == 0 && !o.joined));
        assert!(ops.iter().all(|o| (o.kind == Kind::Put) == o.value_size.is_some()));
        assert!(ops.iter().all(|o| (o.kind == Kind::Scan) == o.scan_len.is_some()));
    }

    #[test]
    fn ratios_round_up_to_thousandths_as_db_bench() {
        let d = Decider::new([1.0, 1.0, 1.0]);
        assert_eq!(d.ends, [334, 668, 1002]);
        assert_eq!((d.kind(333), d.kind(334), d.kind(668), d.kind(1001), d.kind(1002)), {
            (Kind::Get, Kind::Put, Kind::Scan, Kind::Scan, Kind::Get)
        });
    }

    #[test]
    fn keys_are_in_range_except_db_benchs_negative_remainders() {
        let n = 20_000;
        // One power law: db_bench's signed remainder puts about half the keys at 2^64 - x.
        let ops: Vec<TraceOp> = zippy().stream(20_000, n, 1).collect();
        let wrapped = ops.iter().filter(|o| index(o) >= n).count() as f64 / ops.len() as f64;
        assert!((0.4..0.6).contains(&wrapped), "{wrapped} of the keys wrapped");
        assert!(ops.iter().map(index).all(|v| v < n || v > u64::MAX - n));
        // Uniform keys and key ranges stay in 0..n.
        for m in [Mixgraph::default(), prefix()] {
            assert!(m.stream(20_000, n, 1).all(|o| index(&o) < n));
        }
    }

    #[test]
    fn key_ranges_follow_the_two_term_exponential() {
        let p = prefix();
        let n = 30_000u64;
        let ranges = Ranges::new(&p, n);
        let mut hits = vec![0u64; 30];
        for op in p.stream(200_000, n, 2) {
            hits[(index(&op) / ranges.size as u64) as usize] += 1;
        }
        // Each range gets its integers' share (db_bench's floor(amplify * hotness))...
        let ends = ranges.starts.iter().skip(1).copied().chain([ranges.rand_max]);
        let shares: Vec<f64> =
            ranges.starts.iter().zip(ends).map(|(s, e)| (e - s) as f64 / ranges.rand_max as f64).collect();
        for (h, w) in hits.iter().zip(&shares) {
            assert!((*h as f64 / 200_000.0 - w).abs() < 0.005, "{h} hits for a share of {w}");
        }
        // ... close to a*exp(b*x)+c*exp(d*x), in db_bench's shuffled order.
        let mut want: Vec<f64> = p.hotness().map(|h| h.unwrap_or(0.0)).collect();
        let total: f64 = want.iter().sum();
        want.iter_mut().for_each(|w| *w /= total);
        want.sort_by(|a, b| b.total_cmp(a));
        hits.sort_unstable_by(|a, b| b.cmp(a));
        for (h, w) in hits.iter().zip(&want) {
            assert!((*h as f64 / 200_000.0 - w).abs() < 0.02, "{h} hits for a hotness of {w}");
        }
    }

    #[test]
    fn values_and_scans_are_clamped_as_db_bench_clamps() {
        let m = Mixgraph { mix_get_ratio: 0.0, mix_put_ratio: 0.5, mix_seek_ratio: 0.5, ..zippy() };
        let s = m.stream(0, 1000, 1);
        assert_eq!(s.value_size(0.0), 10, "u = 0: db_bench's cast of infinity, then its floor of 10");
        assert_eq!(s.value_size(0.999), 10);
        assert_eq!(s.value_size(0.001), (pareto_inv(0.001, 0.0, 0.2615, 25.45) % 1024) as u32);
        assert_eq!(s.scan_len(0.0), 0);
        assert!(m.stream(20_000, 1000, 1).all(|o| o.value_size.is_none_or(|v| v < 1024)));
        assert!(m.stream(20_000, 1000, 1).all(|o| o.scan_len.is_none_or(|v| v < 10_000)));
    }

    #[test]
    fn sine_rate_steps_each_interval() {
        let m = Mixgraph {
            sine_mix_rate: true,
            sine_a: 300.0,
            sine_b: 0.3,
            sine_c: 0.0,
            sine_d: 1000.0,
            sine_mix_rate_interval_milliseconds: 2000,
            ..zippy()
        };
        let mut per_s = [0u64; 20];
        for op in m.stream(25_000, 10_000, 1) {
            if let Some(n) = per_s.get_mut((op.ts_us / 1_000_000) as usize) {
                *n += 1;
            }
        }
        for (t, &n) in per_s.iter().enumerate() {
            let want = m.sine().at((t / 2 * 2) as f64);
            assert!((n as f64 / want - 1.0).abs() < 0.05, "second {t}: {n} ops, the sine says {want}");
        }
        let flat: Vec<u64> = zippy().stream(4, 10, 1).map(|o| o.ts_us).collect();
        assert_eq!(flat, [0, 1, 2, 3]);
    }

    #[test]
    fn validate_names_the_flag() {
        let cases: Vec<(Mixgraph, &str)> = vec![
            (Mixgraph { key_dist_a: -1.0, ..zippy() }, "key_dist_a"),
            (Mixgraph { key_dist_b: f64::NAN, ..zippy() }, "key_dist_b"),
            (Mixgraph { value_k: f64::INFINITY, ..zippy() }, "value_k"),
            (Mixgraph { iter_sigma: -2.0, ..zippy() }, "iter_sigma"),
            (Mixgraph { mix_put_ratio: -0.1, ..zippy() }, "mix_put_ratio"),
            (Mixgraph { mix_get_ratio: 0.0, mix_put_ratio: 0.0, mix_seek_ratio: 0.0, ..zippy() }, "mix_get_ratio"),
            (Mixgraph { mix_max_scan_len: 0, ..zippy() }, "mix_max_scan_len"),
            (Mixgraph { mix_max_value_size: 0, ..zippy() }, "mix_max_value_size"),
            (Mixgraph { sine_mix_rate: true, sine_d: 0.0, ..zippy() }, "sine_d"),
            (Mixgraph { sine_mix_rate: true, sine_b: f64::NAN, ..zippy() }, "sine_b"),
            (
                Mixgraph { sine_mix_rate: true, sine_mix_rate_interval_milliseconds: 0, ..zippy() },
                "sine_mix_rate_interval",
            ),
            (Mixgraph { sine_mix_rate: true, sine_mix_rate_noise: 2.0, ..zippy() }, "sine_mix_rate_noise"),
            (Mixgraph { keyrange_num: 0, ..zippy() }, "keyrange_num"),
            (Mixgraph { keyrange_dist_c: f64::NAN, ..prefix() }, "keyrange_dist_c"),
            (Mixgraph { keyrange_dist_a: -1.0, keyrange_dist_c: 0.0, ..prefix() }, "keyrange_dist_a..d"),
            (Mixgraph { keyrange_dist_b: 800.0, ..prefix() }, "keyrange_dist_a..d"),
            (
                Mixgraph {
                    keyrange_dist_a: 1e6,
                    keyrange_dist_b: -1.3,
                    keyrange_dist_c: 0.0,
                    keyrange_num: 100,
                    ..prefix()
                },
                { "keyrange_dist_a..d" },
            ),
            (Mixgraph { key_size: 4, ..zippy() }, "key_size"),
            (Mixgraph { value_size: u32::MAX, ..zippy() }, "value_size"),
        ];
        for (m, flag) in cases {
            let e = m.validate().expect_err(flag);
            assert!(e.starts_with(flag), "`{e}` should name {flag}");
            // An invalid one still streams without a panic.
            assert_eq!(m.stream(200, 0, 1).count(), 200);
        }
        assert_eq!(prefix().validate(), Ok(()));
        // db_bench divides by zero with fewer keys than ranges; here each range is one key.
        assert_eq!(prefix().stream(100, 10, 1).count(), 100);
    }

    #[test]
    fn the_reference_scenarios_hold_valid_mixgraphs() {
        let files = [
            include_str!("../../../scenarios/ref-mixgraph.toml"),
            include_str!("../../../scenarios/ref-mixgraph-all-random.toml"),
        ];
        for text in files {
            let doc: toml::Table = toml::from_str(text).unwrap();
            let phases = doc["phase"].as_array().unwrap();
            assert_eq!((phases.len(), phases[1]["kind"].as_str()), (2, Some("replay")), "a load, then the replay");
            let m: Mixgraph = phases[1]["mixgraph"].clone().try_into().unwrap();
            assert_eq!(m.validate(), Ok(()), "{}", phases[1]["name"]);
            assert_eq!((m.key_size, m.value_size), (48, 43));
            assert_eq!(m.stream(1000, 50_000_000, 1).count(), 1000);
        }
    }
}
