//! The profile of an operation stream: what `kvbench trace describe` prints and what
//! `kvbench trace fit` ([`crate::fit`]) turns into a model. One pass over the stream, in memory
//! that grows with the stream's distinct keys only (see [`Profiler`]); a [`Profile`] is
//! deterministic for a given stream.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::{Kind, TraceError, TraceOp};

/// Points of the popularity curve and of every size distribution: x = 0, 0.01, ..., 1.
pub const CURVE_POINTS: usize = 101;
/// The most popular fractions of keys whose share of accesses a profile states.
pub const TOP_FRACTIONS: [f64; 6] = [0.001, 0.01, 0.05, 0.1, 0.2, 0.5];
/// Points of the working-set growth: after each 5% of the ops.
pub const GROWTH_POINTS: u64 = 20;
/// The most time buckets of the request rate.
pub const RATE_BUCKETS: usize = 120;

/// Ops of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KindCounts {
    pub get: u64,
    pub put: u64,
    pub delete: u64,
    pub scan: u64,
}

impl KindCounts {
    pub fn of(&self, kind: Kind) -> u64 {
        match kind {
            Kind::Get => self.get,
            Kind::Put => self.put,
            Kind::Delete => self.delete,
            Kind::Scan => self.scan,
        }
    }

    pub fn total(&self) -> u64 {
        self.get + self.put + self.delete + self.scan
    }

    /// The part of all ops that are of `kind` (0 when there are none).
    pub fn fraction(&self, kind: Kind) -> f64 {
        ratio(self.of(kind) as f64, self.total() as f64).unwrap_or(0.0)
    }

    fn bump(&mut self, kind: Kind) {
        let n = match kind {
            Kind::Get => &mut self.get,
            Kind::Put => &mut self.put,
            Kind::Delete => &mut self.delete,
            Kind::Scan => &mut self.scan,
        };
        *n += 1;
    }
}

/// A distribution of sizes (bytes, records): how many were seen, their mean, and
/// [`CURVE_POINTS`] quantiles (`q[i]` is the i/100 quantile: `q[0]` the least, `q[100]` the most).
/// Sizes up to 2047 are exact; larger ones are binned to 11 significant bits (within 0.05%),
/// so a profile holds a few thousand bins whatever the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    pub count: u64,
    pub mean: f64,
    pub q: Vec<u32>,
}

impl Sizes {
    pub fn median(&self) -> u32 {
        self.q.get(self.q.len() / 2).copied().unwrap_or(0)
    }
}

/// The share of accesses the most popular `keys` fraction of the keys takes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TopShare {
    pub keys: f64,
    pub share: f64,
}

/// How accesses (ops of any kind) spread over the keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Popularity {
    /// Accesses of the most popular key.
    pub max_count: u32,
    /// The shares of [`TOP_FRACTIONS`].
    pub top: Vec<TopShare>,
    /// `curve[i]` = F(i/100): the share of accesses to the most popular i% of keys (F(0) = 0,
    /// F(1) = 1, linear between keys); empty when there are no keys.
    pub curve: Vec<f64>,
    /// The Zipf exponent that best explains the access counts (maximum likelihood, see
    /// [`zipf_mle`]); 0 for uniform popularity and when there are fewer than two keys.
    pub zipf_s: f64,
    /// The key space of that law: the distinct keys seen and those it expects the stream never
    /// touched (a model replaying the stream over this many keys sees about as many distinct
    /// keys as the stream did).
    pub zipf_keys: u64,
}

/// Ops a second over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Ops over the duration; `None` when the duration is zero.
    pub mean_per_s: Option<f64>,
    /// Seconds each bucket of `per_s` spans (0 when there are none).
    pub bucket_s: f64,
    /// Ops a second in up to [`RATE_BUCKETS`] equal buckets from the first op's time.
    pub per_s: Vec<f64>,
}

/// What a stream does: its mix, keys, sizes and pace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub ops: u64,
    pub kinds: KindCounts,
    /// Ops that start a request (not `joined` to the one before).
    pub requests: u64,
    pub clients: u32,
    pub distinct_keys: u64,
    /// The earliest and latest timestamps (µs), `None` for an empty stream.
    pub first_ts_us: Option<u64>,
    pub last_ts_us: Option<u64>,
    pub duration_s: f64,
    /// (gets + scans) / (puts + deletes); `None` without writes.
    pub read_write_ratio: Option<f64>,
    /// Distinct keys seen after each 5% of the ops ([`GROWTH_POINTS`] points; empty without
    /// ops). Exact up to 2048 ops, interpolated within 1/1024 of the ops beyond.
    pub working_set: Vec<u64>,
    /// Distinct keys whose first op is not a put: the ones a replay loads first.
    pub keys_read_before_written: u64,
    pub popularity: Popularity,
    /// Value sizes written by puts.
    pub put_values: Option<Sizes>,
    /// Value sizes found by gets, where the trace records them.
    pub get_values: Option<Sizes>,
    pub key_sizes: Option<Sizes>,
    /// Records visited by scans, where the trace records them.
    pub scan_lengths: Option<Sizes>,
    pub rate: Rate,
}

impl Profile {
    /// The profile of a whole stream; the stream's first error ends it.
    pub fn build(ops: impl Iterator<Item = Result<TraceOp, TraceError>>) -> Result<Profile, TraceError> {
        let mut p = Profiler::new();
        for op in ops {
            p.add(&op?);
        }
        Ok(p.finish())
    }
}

/// Passes a hash through: the keys of [`Profiler`]'s map already are xxh3-64 hashes.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// Builds a [`Profile`] one op at a time, so a caller can do other work in the same pass.
///
/// Memory grows with the stream's distinct keys: each is counted under its xxh3-64 hash in a
/// `HashMap<u64, u32>`, about 16 bytes a key (more while the table grows), never the key itself.
/// Everything else is bounded (size bins, 2048 growth samples, 4096 time buckets, the clients).
/// Two keys of the same hash count as one (about one pair in 10^19 per key pair).
pub struct Profiler {
    ops: u64,
    kinds: KindCounts,
    requests: u64,
    clients: HashSet<u32>,
    min_ts: Option<u64>,
    max_ts: u64,
    keys: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
    read_before_written: u64,
    growth: Growth,
    put_values: SizeHist,
    get_values: SizeHist,
    key_sizes: SizeHist,
    scan_lengths: SizeHist,
    timeline: Timeline,
}

impl Default for Profiler {
    fn default() -> Self {
        Profiler::new()
    }
}

impl Profiler {
    pub fn new() -> Profiler {
        Profiler {
            ops: 0,
            kinds: KindCounts::default(),
            requests: 0,
            clients: HashSet::new(),
            min_ts: None,
            max_ts: 0,
            keys: HashMap::default(),
            read_before_written: 0,
            growth: Growth::new(),
            put_values: SizeHist::default(),
            get_values: SizeHist::default(),
            key_sizes: SizeHist::default(),
            scan_lengths: SizeHist::default(),
            timeline: Timeline::new(),
        }
    }

    pub fn add(&mut self, op: &TraceOp) {
        self.ops += 1;
        self.kinds.bump(op.kind);
        self.requests += u64::from(!op.joined);
        self.clients.insert(op.client);
        self.min_ts = Some(self.min_ts.map_or(op.ts_us, |t| t.min(op.ts_us)));
        self.max_ts = self.max_ts.max(op.ts_us);
        self.timeline.add(op.ts_us);
        self.count_key(op);
        self.growth.after_op(self.ops, self.keys.len() as u64);
        self.add_sizes(op);
    }

    fn count_key(&mut self, op: &TraceOp) {
        let n = self.keys.entry(xxh3_64(&op.key)).or_insert_with(|| {
            // A key first seen by anything but a put was there before the trace began.
            self.read_before_written += u64::from(op.kind != Kind::Put);
            0
        });
        *n = n.saturating_add(1);
    }

    fn add_sizes(&mut self, op: &TraceOp) {
        self.key_sizes.add(u32::try_from(op.key.len()).unwrap_or(u32::MAX));
        match (op.kind, op.value_size) {
            (Kind::Put, Some(v)) => self.put_values.add(v),
            (Kind::Get, Some(v)) => self.get_values.add(v),
            _ => {}
        }
        if let (Kind::Scan, Some(n)) = (op.kind, op.scan_len) {
            self.scan_lengths.add(n);
        }
    }

    pub fn finish(self) -> Profile {
        let first = self.min_ts;
        let last = first.map(|_| self.max_ts);
        let duration_us = self.max_ts.saturating_sub(first.unwrap_or(0));
        let duration_s = duration_us as f64 / 1e6;
        let distinct = self.keys.len() as u64;
        let k = &self.kinds;
        Profile {
            ops: self.ops,
            kinds: self.kinds,
            requests: self.requests,
            clients: u32::try_from(self.clients.len()).unwrap_or(u32::MAX),
            distinct_keys: distinct,
            first_ts_us: first,
            last_ts_us: last,
            duration_s,
            read_write_ratio: ratio((k.get + k.scan) as f64, (k.put + k.delete) as f64),
            working_set: self.growth.points(self.ops, distinct),
            keys_read_before_written: self.read_before_written,
            popularity: popularity(self.keys.into_values().collect()),
            put_values: self.put_values.sizes(),
            get_values: self.get_values.sizes(),
            key_sizes: self.key_sizes.sizes(),
            scan_lengths: self.scan_lengths.sizes(),
            rate: self.timeline.rate(self.ops, duration_us),
        }
    }
}

/// `a / b`, or `None` when `denominator` is zero (no NaN, no infinity).
fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator > 0.0).then(|| numerator / denominator)
}

/// A histogram of sizes: exact below 2048, 11 significant bits above.
#[derive(Default)]
struct SizeHist {
    bins: BTreeMap<u32, u64>,
    count: u64,
    sum: u128,
}

/// The bits a bin drops from `size`: none below 2048, all but the 11 leading ones above.
fn bin_shift(size: u32) -> u32 {
    (32 - size.leading_zeros()).saturating_sub(11)
}

impl SizeHist {
    fn add(&mut self, size: u32) {
        let shift = bin_shift(size);
        *self.bins.entry((size >> shift) << shift).or_insert(0) += 1;
        self.count += 1;
        self.sum += u128::from(size);
    }

    fn sizes(&self) -> Option<Sizes> {
        (self.count > 0).then(|| Sizes {
            count: self.count,
            mean: self.sum as f64 / self.count as f64,
            q: self.quantiles(),
        })
    }

    /// The value of rank round(p·(count−1)) for p = 0, 0.01, ..., 1 (a binned value stands for
    /// the middle of its bin).
    fn quantiles(&self) -> Vec<u32> {
        let mut q = Vec::with_capacity(CURVE_POINTS);
        let mut bins = self.bins.iter();
        let (mut bin, mut upto) = (None, 0u64); // the bin of the last rank, values up to it
        for i in 0..CURVE_POINTS {
            let rank = ((self.count - 1) as f64 * i as f64 / (CURVE_POINTS - 1) as f64).round() as u64;
            while upto <= rank {
                let Some((&lo, &n)) = bins.next() else { break };
                (bin, upto) = (Some(lo), upto + n);
            }
            q.push(bin.map_or(0, |lo| lo + ((1u32 << bin_shift(lo)) >> 1)));
        }
        q
    }
}

/// Distinct keys after every `stride` ops, the stride doubling whenever 2048 samples are held.
struct Growth {
    stride: u64,
    samples: Vec<u64>,
}

const GROWTH_SAMPLES: usize = 2048;

impl Growth {
    fn new() -> Growth {
        Growth { stride: 1, samples: Vec::new() }
    }

    fn after_op(&mut self, ops: u64, distinct: u64) {
        if !ops.is_multiple_of(self.stride) {
            return;
        }
        self.samples.push(distinct);
        if self.samples.len() >= GROWTH_SAMPLES {
            // Keep the samples at multiples of the doubled stride.
            self.samples = self.samples.iter().skip(1).step_by(2).copied().collect();
            self.stride *= 2;
        }
    }

    /// Distinct keys after `after` of `ops` ops, interpolated between the samples around it.
    fn at(&self, after: u64, ops: u64, distinct: u64) -> u64 {
        if after >= ops {
            return distinct;
        }
        let i = after / self.stride;
        let (lo_t, lo_v) = (i * self.stride, if i == 0 { 0 } else { self.sample(i - 1, distinct) });
        let (hi_t, hi_v) = match self.samples.get(i as usize) {
            Some(&v) => ((i + 1) * self.stride, v),
            None => (ops, distinct),
        };
        let span = hi_t.saturating_sub(lo_t).max(1) as f64;
        let v = lo_v as f64 + (hi_v as f64 - lo_v as f64) * (after - lo_t) as f64 / span;
        v.round() as u64
    }

    fn sample(&self, index: u64, otherwise: u64) -> u64 {
        self.samples.get(index as usize).copied().unwrap_or(otherwise)
    }

    fn points(&self, ops: u64, distinct: u64) -> Vec<u64> {
        if ops == 0 {
            return Vec::new();
        }
        let at = |k: u64| ((u128::from(ops) * u128::from(k) + 10) / u128::from(GROWTH_POINTS)) as u64;
        (1..=GROWTH_POINTS).map(|k| self.at(at(k), ops, distinct)).collect()
    }
}

/// Ops counted in up to 4096 fine time buckets from the first op's time, their width doubling
/// as the stream goes on, so the final buckets can be drawn at any resolution down to 1/34 of
/// one of them.
struct Timeline {
    origin: Option<u64>,
    width_us: u64,
    counts: Vec<u64>,
}

const FINE_BUCKETS: u64 = 4096;

impl Timeline {
    fn new() -> Timeline {
        Timeline { origin: None, width_us: 1, counts: Vec::new() }
    }

    fn add(&mut self, ts: u64) {
        // Ops stamped before the first one (clients' clocks a little apart) count at its time.
        let off = ts.saturating_sub(*self.origin.get_or_insert(ts));
        while off / self.width_us >= FINE_BUCKETS {
            self.counts = self.counts.chunks(2).map(|c| c.iter().sum()).collect();
            self.width_us *= 2;
        }
        let i = (off / self.width_us) as usize;
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
    }

    fn rate(&self, ops: u64, duration_us: u64) -> Rate {
        let none = Rate { mean_per_s: None, bucket_s: 0.0, per_s: Vec::new() };
        if duration_us == 0 || self.counts.is_empty() {
            return none;
        }
        let buckets = self.counts.len().min(RATE_BUCKETS);
        let width = (self.counts.len() as u64 * self.width_us) as f64 / buckets as f64;
        let mut per = vec![0.0; buckets];
        for (j, &n) in self.counts.iter().enumerate() {
            spread(&mut per, n as f64, j as f64 * self.width_us as f64, self.width_us as f64, width);
        }
        let bucket_s = width / 1e6;
        Rate {
            mean_per_s: Some(ops as f64 / (duration_us as f64 / 1e6)),
            bucket_s,
            per_s: per.into_iter().map(|n| n / bucket_s).collect(),
        }
    }
}

/// Adds `ops` ops spread evenly over `[start, start + len)` to the buckets of `width` they cover.
fn spread(buckets: &mut [f64], ops: f64, start: f64, len: f64, width: f64) {
    let end = start + len;
    let mut b = (start / width) as usize;
    while b < buckets.len() && (b as f64) * width < end {
        let lo = start.max(b as f64 * width);
        let hi = end.min((b + 1) as f64 * width);
        if hi > lo {
            buckets[b] += ops * (hi - lo) / len;
        }
        b += 1;
    }
}

/// The popularity of keys from their access counts (any order).
fn popularity(mut counts: Vec<u32>) -> Popularity {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let curve_x: Vec<f64> = (0..CURVE_POINTS).map(|i| i as f64 / (CURVE_POINTS - 1) as f64).collect();
    let curve = if counts.is_empty() { Vec::new() } else { shares_at(&counts, &curve_x) };
    let top = TOP_FRACTIONS
        .iter()
        .zip(shares_at(&counts, &TOP_FRACTIONS))
        .map(|(&keys, share)| TopShare { keys, share })
        .collect();
    let zipf = zipf_mle(&counts);
    let max_count = counts.first().copied().unwrap_or(0);
    Popularity { max_count, top, curve, zipf_s: zipf.s, zipf_keys: zipf.keys }
}

/// F(x) for ascending `xs`: the share of accesses to the most popular fraction x of the keys
/// (`counts` descending), linear within a key. One pass, no prefix array (4 bytes a key only).
fn shares_at(counts: &[u32], xs: &[f64]) -> Vec<f64> {
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let n = counts.len() as f64;
    let (mut idx, mut prefix) = (0usize, 0u64);
    let mut out = Vec::with_capacity(xs.len());
    for &x in xs {
        let pos = (x.clamp(0.0, 1.0) * n).min(n);
        let whole = pos.floor() as usize;
        while idx < whole.min(counts.len()) {
            prefix += u64::from(counts[idx]);
            idx += 1;
        }
        let part = counts.get(idx).map_or(0.0, |&c| (pos - whole as f64) * f64::from(c));
        out.push(ratio(prefix as f64 + part, total as f64).unwrap_or(0.0).min(1.0));
    }
    out
}

/// A Zipf law fitted to access counts: its exponent and the key space it spreads over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZipfFit {
    pub s: f64,
    /// Keys of the law, seen or not (at least the distinct keys seen).
    pub keys: u64,
}

/// The key space a fit considers: from the keys seen up to this many times as many.
const MAX_UNSEEN_FACTOR: f64 = 1000.0;

/// The Zipf law of the access counts (`counts` descending), by maximum likelihood.
///
/// Why not least squares on the log-log rank-frequency plot: most of its points are the tail,
/// where keys seen once or twice make a flat, noisy floor that drags the slope, and the ranks
/// of a sample are themselves noisy. Even a maximum likelihood fit over the observed ranks
/// mistakes that noise for skew (uniform keys drawn 20 times each look like s ≈ 0.2 once
/// sorted), and one over the keys seen only ignores the keys a sparse trace never touched
/// (Zipf(0.8) over 10^6 keys, 2·10^6 draws: 58% seen, fitted as s ≈ 0.95). So this fit models
/// what was observed: N keys, each drawn a Poisson number of times whose mean is
/// `ops · r^-s / H(N, s)` for a rank r the data does not tell (a mixture over the ranks),
/// those drawn at least once being the keys seen. The likelihood of the counts (with the
/// unseen keys) is maximised over s in [0, 4] (to 0.001) for each N, and over N from the keys
/// seen to 1000 times as many (to 0.5%), by golden-section searches. N is poorly determined
/// when s > 1 (the unseen tail holds little of the mass), s is not.
pub fn zipf_mle(counts: &[u32]) -> ZipfFit {
    let seen = counts.len() as u64;
    if seen < 2 {
        return ZipfFit { s: 0.0, keys: seen };
    }
    let data = ZipfData::new(counts);
    let keys_at = |ln_keys: f64| (ln_keys.exp().round() as u64).max(seen);
    let best_s = |keys: u64| {
        let bins = RankBins::new(keys);
        golden_max(|s| data.log_likelihood(&bins, s), 0.0, 4.0, 1e-3)
    };
    let ln_seen = (seen as f64).ln();
    let (ln_keys, _) = golden_max(|k| best_s(keys_at(k)).1, ln_seen, ln_seen + MAX_UNSEEN_FACTOR.ln(), 0.005);
    let keys = keys_at(ln_keys);
    ZipfFit { s: best_s(keys).0, keys }
}

/// Where a unimodal `objective` on `[a, b]` is highest (within `tolerance`) and its value there (a
/// non-finite `objective` counts as the lowest value).
fn golden_max(objective: impl Fn(f64) -> f64, mut low: f64, mut high: f64, tolerance: f64) -> (f64, f64) {
    let objective = |x: f64| Some(objective(x)).filter(|v| v.is_finite()).unwrap_or(f64::NEG_INFINITY);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (high - g * (high - low), low + g * (high - low));
    let (mut fc, mut fd) = (objective(c), objective(d));
    while high - low > tolerance {
        if fc >= fd {
            (high, d, fd) = (d, c, fc);
            c = high - g * (high - low);
            fc = objective(c);
        } else {
            (low, c, fc) = (c, d, fd);
            d = low + g * (high - low);
            fd = objective(d);
        }
    }
    // The ends too: the best s is often exactly 0 (uniform keys), N exactly the keys seen.
    [(low, objective(low)), ((low + high) / 2.0, objective((low + high) / 2.0)), (high, objective(high))]
        .into_iter()
        .fold((low, f64::NEG_INFINITY), |best, x| if x.1 > best.1 { x } else { best })
}

/// How many keys were seen how often.
struct ZipfData {
    /// (count, keys seen that often), counts descending.
    seen: Vec<(f64, f64)>,
    keys: f64,
    accesses: f64,
}

/// The ranks of N keys: the first 1024 one by one, then geometric bins (ratio 1.02) whose
/// ranks share one popularity (within 2%: a Poisson mean the counts cannot tell apart), so
/// 10^9 keys cost some 1700 bins.
struct RankBins {
    keys: f64,
    ln_w: Vec<f64>,
    ln_r: Vec<f64>,
}

impl RankBins {
    fn new(keys: u64) -> RankBins {
        let (mut ln_w, mut ln_r) = (Vec::new(), Vec::new());
        let mut lo = 1u64;
        while lo <= keys {
            let hi = if lo <= 1024 { lo } else { ((lo as f64 * 1.02) as u64).clamp(lo, keys) };
            ln_w.push(((hi - lo + 1) as f64).ln());
            ln_r.push(((lo as f64).ln() + (hi as f64).ln()) / 2.0);
            lo = hi + 1;
        }
        RankBins { keys: keys as f64, ln_w, ln_r }
    }
}

impl ZipfData {
    fn new(counts: &[u32]) -> ZipfData {
        let mut seen: Vec<(f64, f64)> = Vec::new();
        for &c in counts {
            match seen.last_mut() {
                Some((last, n)) if *last == f64::from(c) => *n += 1.0,
                _ => seen.push((f64::from(c), 1.0)),
            }
        }
        let accesses = counts.iter().map(|&c| f64::from(c)).sum();
        ZipfData { seen, keys: counts.len() as f64, accesses }
    }

    /// The log-likelihood of the counts at exponent s over the ranks of `bins` (without the
    /// terms neither s nor N changes): ln N!/(N-n)! + (N-n) ln P(unseen) + Σ ln P(count).
    fn log_likelihood(&self, bins: &RankBins, exponent: f64) -> f64 {
        let ln_h = log_sum_exp(bins.ln_w.iter().zip(&bins.ln_r).map(|(w, r)| w - exponent * r));
        let ln_lam: Vec<f64> = bins.ln_r.iter().map(|r| self.accesses.ln() - exponent * r - ln_h).collect();
        let lam: Vec<f64> = ln_lam.iter().map(|l| l.exp()).collect();
        let unseen = bins.keys - self.keys;
        let mut ll = ln_gamma(bins.keys + 1.0) - ln_gamma(unseen + 1.0) - self.keys * bins.keys.ln();
        if unseen > 0.0 {
            let ln_p0 = log_sum_exp(bins.ln_w.iter().zip(&lam).map(|(w, l)| w - l)) - bins.keys.ln();
            ll += unseen * ln_p0;
        }
        for &(c, n) in &self.seen {
            ll += n * ln_mixture(&bins.ln_w, c, &lam, &ln_lam);
        }
        ll
    }
}

/// ln Σ_bins w · λ^c · e^-λ over the bins whose mean λ is near c (the others add nothing a
/// double can hold); `lam` is descending.
fn ln_mixture(ln_w: &[f64], count: f64, lam: &[f64], ln_lam: &[f64]) -> f64 {
    let reach = 12.0 * count.sqrt() + 12.0;
    let a = lam.partition_point(|&l| l > count + reach).saturating_sub(1);
    let b = (lam.partition_point(|&l| l >= count - reach) + 1).min(lam.len());
    log_sum_exp((a..b).map(|i| ln_w[i] + count * ln_lam[i] - lam[i]))
}

/// ln Γ(x) for x ≥ 1: Stirling's series from 10 on (error below 1e-10), shifted below.
fn ln_gamma(value: f64) -> f64 {
    let (mut value, mut shift) = (value, 0.0);
    while value < 10.0 {
        shift -= value.ln();
        value += 1.0;
    }
    let series = 1.0 / (12.0 * value) - 1.0 / (360.0 * value.powi(3)) + 1.0 / (1260.0 * value.powi(5));
    shift + (value - 0.5) * value.ln() - value + 0.5 * (2.0 * std::f64::consts::PI).ln() + series
}

fn log_sum_exp(xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let max = xs.clone().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + xs.map(|x| (x - max).exp()).sum::<f64>().ln()
}

impl Profile {
    /// A readable description for the terminal: aligned columns, units, no colour.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.text_ops(&mut out);
        self.text_keys(&mut out);
        self.text_time(&mut out);
        self.text_sizes(&mut out);
        out
    }

    fn text_ops(&self, out: &mut String) {
        row(out, "ops", &format!("{}  (requests {}, clients {})", self.ops, self.requests, self.clients));
        let w = self.ops.to_string().len();
        for kind in Kind::ALL {
            let (n, pct) = (self.kinds.of(kind), 100.0 * self.kinds.fraction(kind));
            row(out, &format!("  {}", kind.as_str()), &format!("{n:>w$}  {pct:>5.1}%"));
        }
        let rw = self.read_write_ratio.map_or_else(|| "no writes".to_string(), |r| format!("{r:.2}"));
        row(out, "read/write", &format!("{rw}  (gets + scans : puts + deletes)"));
    }

    fn text_keys(&self, out: &mut String) {
        let pre = format!("{} read before written", self.keys_read_before_written);
        row(out, "distinct keys", &format!("{}  ({pre})", self.distinct_keys));
        let w = self.distinct_keys.to_string().len();
        for (half, points) in self.working_set.chunks(10).enumerate() {
            let cells: Vec<String> =
                points.iter().enumerate().map(|(i, n)| format!("{:>3}% {n:<w$}", (half * 10 + i + 1) * 5)).collect();
            row(out, if half == 0 { "working set" } else { "" }, cells.join("  ").trim_end());
        }
        let pop = &self.popularity;
        let law = format!("Zipf s = {:.3} over ~{} keys", pop.zipf_s, pop.zipf_keys);
        row(out, "key popularity", &format!("{law}  (most popular key: {} accesses)", pop.max_count));
        for t in &pop.top {
            let label = format!("  top {}% keys", trim_float(100.0 * t.keys));
            row(out, &label, &format!("{:>5.1}% of accesses", 100.0 * t.share));
        }
    }

    fn text_time(&self, out: &mut String) {
        let (Some(first), Some(last)) = (self.first_ts_us, self.last_ts_us) else {
            row(out, "time", "no ops");
            return;
        };
        let secs = |us: u64| format!("{}.{:06} s", us / 1_000_000, us % 1_000_000);
        row(out, "time", &format!("{} .. {}  (duration {:.3} s)", secs(first), secs(last), self.duration_s));
        let Some(mean) = self.rate.mean_per_s else {
            row(out, "rate", "no duration");
            return;
        };
        let min = self.rate.per_s.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.rate.per_s.iter().copied().fold(0.0, f64::max);
        row(out, "rate", &format!("{mean:.1} ops/s mean"));
        let buckets = format!("{} buckets of {:.3} s", self.rate.per_s.len(), self.rate.bucket_s);
        row(out, "", &format!("{min:.1} .. {max:.1} ops/s over {buckets}"));
    }

    fn text_sizes(&self, out: &mut String) {
        let all = [
            ("value size (put)", &self.put_values, "B"),
            ("value size (get)", &self.get_values, "B"),
            ("key size", &self.key_sizes, "B"),
            ("scan length", &self.scan_lengths, "records"),
        ];
        for (label, sizes, unit) in all {
            match sizes {
                Some(s) => size_rows(out, label, s, unit),
                None => row(out, label, "not recorded"),
            }
        }
    }
}

fn size_rows(out: &mut String, label: &str, sizes: &Sizes, unit: &str) {
    let at = |p: usize| sizes.q.get(p).copied().unwrap_or(0);
    row(out, label, &format!("mean {:.1} {unit}  ({} seen)", sizes.mean, sizes.count));
    let qs: Vec<String> = [(0, "min"), (25, "p25"), (50, "p50"), (75, "p75"), (90, "p90"), (99, "p99"), (100, "max")]
        .iter()
        .map(|&(p, name)| format!("{name} {}", at(p)))
        .collect();
    row(out, "", &format!("{} {unit}", qs.join(", ")));
}

/// One line: the label in a column of 20, then the value.
fn row(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "{label:<20}{value}");
}

/// 0.1 → "0.1", 5 → "5": a percentage without trailing zeros.
fn trim_float(value: f64) -> String {
    let s = format!("{value:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;
    use crate::Place;

    fn op(ts_us: u64, client: u32, kind: Kind, key: &str, value_size: Option<u32>) -> TraceOp {
        TraceOp { ts_us, client, kind, key: key.as_bytes().to_vec(), value_size, scan_len: None, joined: false }
    }

    fn profile(ops: Vec<TraceOp>) -> Profile {
        Profile::build(ops.into_iter().map(Ok)).unwrap()
    }

    /// Every float of a profile is finite: serde_json writes NaN and infinities as null, which
    /// reads back as an error (an f64) or as `None` (never equal to `Some(NaN)`).
    fn assert_finite(profile: &Profile) {
        let json = serde_json::to_string(profile).unwrap();
        let back: Profile = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, profile, "a profile survives JSON");
    }

    /// A little stream: 10 ops, 2 clients, 1 s apart, one MGET of two keys.
    fn hand_made() -> Vec<TraceOp> {
        let mut ops = vec![
            op(1_000_000, 0, Kind::Get, "a", None),
            op(2_000_000, 0, Kind::Put, "b", Some(100)),
            op(3_000_000, 1, Kind::Put, "a", Some(200)),
            op(4_000_000, 1, Kind::Get, "b", Some(100)),
            op(5_000_000, 0, Kind::Get, "c", None),
            op(5_000_000, 0, Kind::Get, "a", None),
            op(7_000_000, 1, Kind::Delete, "d", None),
            op(8_000_000, 0, Kind::Put, "e", Some(300)),
            op(9_000_000, 0, Kind::Scan, "a", None),
            op(11_000_000, 1, Kind::Get, "a", Some(200)),
        ];
        ops[5].joined = true;
        ops[8].scan_len = Some(7);
        ops
    }

    #[test]
    fn a_hand_made_stream_is_counted() {
        let p = profile(hand_made());
        assert_eq!((p.ops, p.requests, p.clients, p.distinct_keys), (10, 9, 2, 5));
        assert_eq!(p.kinds, KindCounts { get: 5, put: 3, delete: 1, scan: 1 });
        assert_eq!((p.first_ts_us, p.last_ts_us, p.duration_s), (Some(1_000_000), Some(11_000_000), 10.0));
        assert_eq!(p.read_write_ratio, Some(6.0 / 4.0));
        // a (get first), c (get), d (delete) were there before; b and e are written first.
        assert_eq!(p.keys_read_before_written, 3);
        // Two points per op: after op k the set holds the keys of ops 1..=k.
        assert_eq!(p.working_set, [1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5]);
        assert_eq!(p.rate.mean_per_s, Some(1.0));
        let held = p.rate.per_s.iter().sum::<f64>() * p.rate.bucket_s;
        assert!((held - 10.0).abs() < 1e-9, "the buckets hold every op: {held}");
        assert_finite(&p);
    }

    #[test]
    fn popularity_and_sizes_of_a_hand_made_stream() {
        let p = profile(hand_made());
        // Accesses: a 5, b 2, c 1, d 1, e 1 of 10.
        assert_eq!(p.popularity.max_count, 5);
        let curve = &p.popularity.curve;
        assert_eq!(curve.len(), CURVE_POINTS);
        assert_eq!((curve[0], curve[20], curve[40], curve[100]), (0.0, 0.5, 0.7, 1.0));
        assert!((curve[10] - 0.25).abs() < 1e-12, "half of the top key: {}", curve[10]);
        let put = p.put_values.as_ref().unwrap();
        assert_eq!((put.count, put.mean), (3, 200.0));
        assert_eq!((put.q[0], put.q[24], put.q[25], put.q[50], put.q[100]), (100, 100, 200, 200, 300));
        let get = p.get_values.as_ref().unwrap();
        assert_eq!((get.count, get.q[0], get.q[100]), (2, 100, 200));
        assert_eq!(p.key_sizes.as_ref().unwrap().q, vec![1; CURVE_POINTS]);
        assert_eq!(p.scan_lengths.as_ref().unwrap().q, vec![7; CURVE_POINTS]);
    }

    #[test]
    fn quantiles_are_exact_up_to_2047_and_binned_beyond() {
        let ops: Vec<TraceOp> = (0..=100).map(|i| op(i, 0, Kind::Put, "k", Some(i as u32 * 10))).collect();
        let q = profile(ops).put_values.unwrap().q;
        assert_eq!(q, (0..=100).map(|i| i * 10).collect::<Vec<u32>>());
        let big = profile(vec![op(0, 0, Kind::Put, "k", Some(1_000_003)), op(1, 0, Kind::Put, "k", Some(u32::MAX))]);
        let q = big.put_values.unwrap().q;
        assert!(q[0].abs_diff(1_000_003) <= 1_000_003 / 2048, "{}", q[0]);
        assert!(q[100].abs_diff(u32::MAX) <= u32::MAX / 2048, "{}", q[100]);
    }

    #[test]
    fn working_set_growth_of_a_long_stream_is_sampled() {
        // 100 000 ops, a new key every other op: the set grows linearly to 50 000.
        let ops: Vec<TraceOp> = (0..100_000u64).map(|i| op(i, 0, Kind::Put, &(i / 2).to_string(), Some(1))).collect();
        let p = profile(ops);
        assert_eq!(p.distinct_keys, 50_000);
        let want: Vec<u64> = (1..=20).map(|k| k * 2_500).collect();
        for (got, want) in p.working_set.iter().zip(&want) {
            assert!(got.abs_diff(*want) <= 1, "{:?}", p.working_set);
        }
        assert_eq!(p.working_set.len(), 20);
        // 100 000 µs in 120 buckets of equal rate.
        assert_eq!(p.rate.per_s.len(), RATE_BUCKETS);
        for r in &p.rate.per_s {
            assert!((r - 1e6).abs() < 1e6 * 0.02, "{r}");
        }
    }

    #[test]
    fn empty_one_key_and_instant_streams_are_described() {
        let empty = profile(Vec::new());
        assert_eq!((empty.ops, empty.distinct_keys, empty.first_ts_us), (0, 0, None));
        assert!(empty.working_set.is_empty() && empty.popularity.curve.is_empty());
        assert_eq!((empty.rate.mean_per_s, empty.read_write_ratio, empty.popularity.zipf_s), (None, None, 0.0));
        assert_eq!(empty.popularity.top.iter().map(|t| t.share).sum::<f64>(), 0.0);
        assert_finite(&empty);
        assert!(empty.text().contains("no ops"));

        let one = profile(vec![op(5, 0, Kind::Get, "k", None); 3]);
        assert_eq!((one.distinct_keys, one.duration_s, one.rate.mean_per_s), (1, 0.0, None));
        assert_eq!((one.popularity.curve[50], one.popularity.curve[100]), (0.5, 1.0), "linear within the key");
        assert_eq!(one.read_write_ratio, None);
        assert_finite(&one);
        let _ = one.text();
    }

    #[test]
    fn the_first_error_ends_the_build() {
        let err = TraceError::new(Path::new("t"), Place::Line(2), "bad");
        let got = Profile::build(vec![Ok(op(0, 0, Kind::Get, "a", None)), Err(err.clone())].into_iter());
        assert_eq!(got, Err(err));
    }

    /// `draws` keys of Zipf(s) over `keys` ranks, the rank's name as the key.
    fn zipf_stream(keys: usize, exponent: f64, draws: usize, seed: u64) -> Vec<TraceOp> {
        let mut cdf: Vec<f64> = (1..=keys).map(|r| (r as f64).powf(-exponent)).collect();
        let total: f64 = cdf.iter().sum();
        let mut acc = 0.0;
        for w in cdf.iter_mut() {
            acc += *w / total;
            *w = acc;
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..draws)
            .map(|i| {
                let u: f64 = rng.gen();
                let rank = cdf.partition_point(|&c| c < u).min(keys - 1);
                op(i as u64, 0, Kind::Get, &format!("key{rank}"), None)
            })
            .collect()
    }

    fn assert_zipf_fitted(exponent: f64, seed: u64) {
        let got = profile(zipf_stream(10_000, exponent, 200_000, seed)).popularity;
        eprintln!("zipf s = {exponent}: fitted {} over {} keys", got.zipf_s, got.zipf_keys);
        assert!((got.zipf_s - exponent).abs() < 0.05, "s = {exponent}, fitted {}", got.zipf_s);
        assert!(got.zipf_keys.abs_diff(10_000) < 500, "10 000 keys, fitted {}", got.zipf_keys);
    }

    #[test]
    fn zipf_0_9_is_fitted_within_five_hundredths() {
        assert_zipf_fitted(0.9, 1);
    }

    #[test]
    fn zipf_1_2_is_fitted_within_five_hundredths() {
        assert_zipf_fitted(1.2, 2);
    }

    #[test]
    fn zipf_0_5_is_fitted_within_five_hundredths() {
        assert_zipf_fitted(0.5, 3);
    }

    #[test]
    fn a_uniform_stream_has_s_near_zero() {
        let got = profile(zipf_stream(10_000, 0.0, 200_000, 4)).popularity.zipf_s;
        eprintln!("uniform: fitted {got:.4}");
        assert!(got < 0.05, "fitted {got}");
    }

    #[test]
    fn the_text_names_each_part_with_units() {
        let text = profile(hand_made()).text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "ops                 10  (requests 9, clients 2)");
        assert!(lines.contains(&"  get                5   50.0%"), "{text}");
        assert!(lines.contains(&"  delete             1   10.0%"), "{text}");
        assert!(lines.contains(&"read/write          1.50  (gets + scans : puts + deletes)"), "{text}");
        assert!(lines.contains(&"distinct keys       5  (3 read before written)"), "{text}");
        assert!(lines.contains(&"time                1.000000 s .. 11.000000 s  (duration 10.000 s)"), "{text}");
        assert!(lines.contains(&"rate                1.0 ops/s mean"), "{text}");
        assert!(lines.contains(&"  top 50% keys       75.0% of accesses"), "{text}");
        assert!(
            lines.contains(&"key popularity      Zipf s = 1.205 over ~9 keys  (most popular key: 5 accesses)"),
            "{text}"
        );
        assert!(lines.contains(&"value size (put)    mean 200.0 B  (3 seen)"), "{text}");
        assert!(lines.contains(&"                    min 100, p25 200, p50 200, p75 300, p90 300, p99 300, max 300 B"));
        assert!(lines.contains(&"scan length         mean 7.0 records  (1 seen)"), "{text}");
        assert!(lines.contains(
            &"working set           5% 1   10% 1   15% 2   20% 2   25% 2   30% 2   35% 2   40% 2   45% 3   50% 3"
        ));
        assert!(lines.contains(
            &"                     55% 3   60% 3   65% 4   70% 4   75% 5   80% 5   85% 5   90% 5   95% 5  100% 5"
        ));
        assert!(lines.contains(&"rate                1.0 ops/s mean"), "{text}");
        assert_eq!(text, profile(hand_made()).text(), "deterministic");
    }
}
