//! Plan format 2's derivations (docs/plan-format.md): the primitives, keys, values, the
//! permutation, YCSB's zipfian and latest draws, and the constants kvbench computes for a job.
//! The Go and Python workers implement the same functions; `tests/vectors/derive.json` holds
//! their outputs, so any change here is a format change.

use std::sync::Arc;

use anyhow::{bail, ensure};

use crate::job::{Dataset, Dist, Generator};
use crate::planfile::PlanFile;
use crate::spec::{KeyKind, ValueContent};

pub use crate::primitives::{below, mix64, push_db_bench_key, push_random_key, rnd, stream, unit, Perm, G};

// ---------------------------------------------------------------------------------------------
// Keys

/// FNV-1a 64 over the 8 little-endian bytes of `value`, made non-negative as Java's `Math.abs`
/// does (YCSB's `Utils.fnvhash64`): `i64::MIN` stays negative.
pub fn ycsbhash(value: u64) -> i64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in value.to_le_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    (h as i64).wrapping_abs()
}

const DIGITS2: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `number` at the end of `buf`; returns where they start.
#[inline]
fn digits(mut number: u64, buf: &mut [u8; 20]) -> usize {
    let mut i = 20;
    while number >= 100 {
        let d = (number % 100) as usize * 2;
        number /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGITS2[d..d + 2]);
    }
    if number >= 10 {
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGITS2[number as usize * 2..number as usize * 2 + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + number as u8;
    }
    i
}

/// Appends the decimal digits of `number`, left-padded with `0` to `width` digits.
#[inline]
pub fn push_decimal(out: &mut Vec<u8>, number: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let i = digits(number, &mut buf);
    if width == 16 && i >= 4 {
        // kvbench's default keys: a copy of known length is a move, not a call to memcpy.
        out.extend_from_slice(&buf[4..]);
    } else if width <= 20 {
        // The buffer is already zero-filled: one copy covers digits and padding.
        out.extend_from_slice(&buf[i.min(20 - width)..]);
    } else {
        out.resize(out.len() + width - (20 - i), b'0');
        out.extend_from_slice(&buf[i..]);
    }
}

/// Writes the derived key of `record` into `out` (cleared first).
#[inline(always)]
pub fn derived_key(kind: KeyKind, width: u32, record: u64, out: &mut Vec<u8>) {
    out.clear();
    match kind {
        KeyKind::U32be => out.extend_from_slice(&(record as u32).to_be_bytes()),
        KeyKind::U64be => out.extend_from_slice(&record.to_be_bytes()),
        KeyKind::Decimal => push_decimal(out, record, width as usize),
        KeyKind::Ycsb => {
            out.extend_from_slice(b"user");
            let h = ycsbhash(record);
            if h < 0 {
                out.push(b'-');
            }
            push_decimal(out, h.unsigned_abs(), 0);
        }
        KeyKind::Random => push_random_key(out, record, width as usize),
        KeyKind::DbBench => push_db_bench_key(out, record, width as usize),
    }
}

/// Keys of a dataset: derived, or read from the plan file for stored data.
#[derive(Clone)]
pub struct Keys {
    kind: KeyKind,
    width: u32,
    stored: Option<Arc<PlanFile>>,
}

impl Keys {
    pub fn new(ds: &Dataset, plan: Option<Arc<PlanFile>>) -> anyhow::Result<Keys> {
        if ds.generator == Generator::Stored && plan.is_none() {
            bail!("dataset generator `stored` needs the job's plan file");
        }
        if ds.key.kind == KeyKind::U32be && ds.total > 1 << 32 {
            bail!("dataset.key: u32be holds at most 4294967296 records, total is {}", ds.total);
        }
        let stored = if ds.generator == Generator::Stored { plan } else { None };
        if let Some(p) = &stored {
            p.require(&[crate::planfile::DATA, crate::planfile::INDEX])?;
            let records = p.header().records;
            // Record numbers index the plan's sections: a total the plan does not hold would
            // read past them.
            if ds.total > records {
                bail!(
                    "dataset.total is {} but the plan file holds {records} records (allowed: 0..={records})",
                    ds.total
                );
            }
        }
        Ok(Keys { kind: ds.key.kind, width: ds.key.width, stored })
    }

    /// Key of `record` into `out` (cleared first).
    #[inline]
    pub fn key(&self, record: u64, out: &mut Vec<u8>) {
        match &self.stored {
            Some(p) => {
                out.clear();
                out.extend_from_slice(p.key(record));
            }
            None => derived_key(self.kind, self.width, record, out),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Values

pub const POOL: usize = 1 << 20;

/// Largest derived value (the pool is POOL + max bytes, held by every worker).
pub const MAX_VALUE: u64 = 1 << 30;

/// 93 characters: no `"` and no `\`, so values sit inside JSON strings unescaped.
pub const PRINTABLE: &[u8; 93] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'()*+,-./:;<=>?@[]^_`{|}~ ";

/// The printable pool every printable value of a dataset is cut from.
pub struct Pool {
    bytes: crate::huge::HugeBytes,
}

impl Pool {
    /// `POOL + max` bytes, so a value of up to `max` bytes can start anywhere in the first POOL.
    pub fn new(pool_seed: u64, max: usize) -> Pool {
        let len = POOL + max;
        let mut bytes = Vec::with_capacity(len + 8);
        for b in 0..len.div_ceil(8) as u64 {
            let w = rnd(pool_seed, b);
            bytes.extend((0..8).map(|t| PRINTABLE[((w >> (8 * t)) & 0xFF) as usize % 93]));
        }
        bytes.truncate(len);
        Pool { bytes: crate::huge::HugeBytes::copy_of(&bytes) }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// What value(r, v) is made of: its length and the draw `h` that decides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Draw {
    h: u64,
    len: usize,
}

const JSON_HEAD: &[u8] = b"{\"text\": \"";
const JSON_MID: &[u8] = b"\", \"created_at\": ";
const JSON_EPOCH: u64 = 1_700_000_000;

pub use crate::job::{fields_overhead, MAX_FIELDS};

/// `field<N>`, N the number `field`, with its big-endian u32 length before it.
fn field_name(field: u64, out: &mut [u8; 29]) -> usize {
    let mut buf = [0u8; 20];
    let at = digits(field, &mut buf);
    let name = 5 + 20 - at;
    out[..4].copy_from_slice(&(name as u32).to_be_bytes());
    out[4..9].copy_from_slice(b"field");
    out[9..9 + 20 - at].copy_from_slice(&buf[at..]);
    4 + name
}

/// value(r, v) of a dataset, written into a caller's buffer or checked against bytes read.
pub struct Values {
    generator: Generator,
    content: ValueContent,
    seed: u64,
    min: u64,
    span: u64,
    pool: Pool,
    stored: Option<Arc<PlanFile>>,
    /// YCSB's record shape: fields per value (0: a plain value), and whether every write
    /// writes all of them.
    fields: u64,
    write_all: bool,
}

impl Values {
    pub fn new(ds: &Dataset, plan: Option<Arc<PlanFile>>) -> anyhow::Result<Values> {
        let (min, max) = (ds.value.min as u64, ds.value.max as u64);
        ensure!(min <= max, "dataset.value: min {min} is above max {max}");
        let stored = match ds.generator {
            Generator::Stored => Some(plan.ok_or_else(|| anyhow::anyhow!("dataset `stored` needs the plan file"))?),
            _ => None,
        };
        if let Some(p) = &stored {
            p.require(&[crate::planfile::DATA, crate::planfile::INDEX])?;
        }
        ensure!(max <= MAX_VALUE, "dataset.value: max {max} bytes is above the {MAX_VALUE} bytes a value may have");
        let longest = stored.as_ref().map_or(0, |p| p.longest_value() as u64);
        let pool = Pool::new(ds.pool_seed, max.max(longest) as usize);
        let (generator, content, seed) = (ds.generator, ds.value.content, ds.value_seed);
        let fields = ds.value.fields as u64;
        ensure!(fields as usize <= MAX_FIELDS, "dataset.value: {fields} fields, at most {MAX_FIELDS}");
        ensure!(
            fields == 0 || generator == Generator::Synthetic,
            "dataset.value: fields are for generated values (generator synthetic)"
        );
        let write_all = ds.value.write_all_fields;
        Ok(Values { generator, content, seed, min, span: max - min + 1, pool, stored, fields, write_all })
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    #[inline]
    fn draw(&self, record: u64, version: u64) -> Draw {
        let h = mix64(rnd(self.seed, record) ^ version.wrapping_mul(G));
        let len = match &self.stored {
            Some(p) => p.value(record).len(),
            None => (self.min + below(h, self.span)) as usize,
        };
        Draw { h, len }
    }

    #[inline]
    fn printable(&self, draw: Draw) -> &[u8] {
        let o = below(mix64(draw.h), POOL as u64) as usize;
        &self.pool.bytes[o..o + draw.len]
    }

    /// Writes value(record, version) into `out` (cleared first); allocates only to grow `out`.
    pub fn value(&self, record: u64, version: u64, out: &mut Vec<u8>) {
        out.clear();
        if let (Some(p), 0) = (&self.stored, version) {
            return out.extend_from_slice(p.value(record));
        }
        if self.fields > 0 {
            return self.fields_value(record, version, out);
        }
        let d = self.draw(record, version);
        match (self.generator, self.content) {
            (Generator::JsonDocs, _) => self.json_doc(record, d, out),
            (Generator::Synthetic, ValueContent::Random) => push_random(out, d),
            _ => out.extend_from_slice(self.printable(d)),
        }
    }

    /// The one field that `version` of `record` writes (an update that merges one field);
    /// `None` when that version writes every field (the first, or every write writes all).
    pub fn field_written(&self, record: u64, version: u64) -> Option<u64> {
        (self.fields > 0 && !self.write_all && version > 0).then(|| self.written_field(record, version))
    }

    /// The field `version` of `record` writes (one field; every field at version 0 or when
    /// every write writes all).
    #[inline]
    fn written_field(&self, record: u64, version: u64) -> u64 {
        below(mix64(mix64(rnd(self.seed, record) ^ version.wrapping_mul(G)) ^ 1), self.fields)
    }

    /// For each field of value(record, version), the version that last wrote it: walking back from
    /// `version` until every field is found (a write of all fields, version 0, finds the rest).
    fn field_versions(&self, record: u64, version: u64) -> [u64; MAX_FIELDS] {
        let mut at = [u64::MAX; MAX_FIELDS];
        let (mut left, mut u) = (self.fields, version);
        while left > 0 && u > 0 && !self.write_all {
            let f = self.written_field(record, u) as usize;
            if at[f] == u64::MAX {
                at[f] = u;
                left -= 1;
            }
            u -= 1;
        }
        at[..self.fields as usize].iter_mut().filter(|x| **x == u64::MAX).for_each(|x| *x = u);
        at
    }

    /// Field `field` of `record` as `version` wrote it: value(record * fields + field, version) of a
    /// plain dataset.
    #[inline]
    fn field_draw(&self, record: u64, field: u64, version: u64) -> Draw {
        self.draw(record.wrapping_mul(self.fields).wrapping_add(field), version)
    }

    fn fields_value(&self, record: u64, version: u64, out: &mut Vec<u8>) {
        let versions = self.field_versions(record, version);
        for i in 0..self.fields {
            self.push_field(record, i, versions[i as usize], out);
        }
    }

    /// Appends field `field` of `record` as `version` wrote it, serialised as in a record.
    fn push_field(&self, record: u64, field: u64, version: u64, out: &mut Vec<u8>) {
        let mut name = [0u8; 29];
        let n = field_name(field, &mut name);
        out.extend_from_slice(&name[..n]);
        let d = self.field_draw(record, field, version);
        out.extend_from_slice(&(d.len as u32).to_be_bytes());
        match self.content {
            ValueContent::Random => push_random(out, d),
            ValueContent::Printable => out.extend_from_slice(self.printable(d)),
        }
    }

    /// Writes into `out` (cleared first) the fields `version` of `record` changes, serialised
    /// as a record of those fields: the one field an update writes, or every field (the value)
    /// where that version writes all.
    pub fn changed_fields(&self, record: u64, version: u64, out: &mut Vec<u8>) {
        match self.field_written(record, version) {
            Some(f) => {
                out.clear();
                self.push_field(record, f, version, out);
            }
            None => self.value(record, version, out),
        }
    }

    /// Whether `found` holds exactly the fields of `record` whose versions are `versions`
    /// (field_versions), each checked.
    fn fields_match(&self, record: u64, versions: &[u64; MAX_FIELDS], found: &[u8]) -> bool {
        let mut name = [0u8; 29];
        let mut rest = found;
        for i in 0..self.fields {
            let n = field_name(i, &mut name);
            let Some(after) = rest.strip_prefix(&name[..n]) else { return false };
            let d = self.field_draw(record, i, versions[i as usize]);
            let Some(after) = after.strip_prefix(&(d.len as u32).to_be_bytes()[..]) else { return false };
            if after.len() < d.len {
                return false;
            }
            let (field, next) = after.split_at(d.len);
            let ok = match self.content {
                ValueContent::Random => random_matches(d, field),
                ValueContent::Printable => field == self.printable(d),
            };
            if !ok {
                return false;
            }
            rest = next;
        }
        rest.is_empty()
    }

    /// The pool's slices that fields_match compares the fields at `versions` with (none for
    /// random bytes, which are computed).
    fn field_sources(&self, record: u64, versions: &[u64; MAX_FIELDS], mut f: impl FnMut(&[u8])) {
        if self.content == ValueContent::Printable {
            for i in 0..self.fields {
                f(self.printable(self.field_draw(record, i, versions[i as usize])));
            }
        }
    }

    fn json_doc(&self, record: u64, draw: Draw, out: &mut Vec<u8>) {
        out.extend_from_slice(JSON_HEAD);
        out.extend_from_slice(self.printable(draw));
        out.extend_from_slice(JSON_MID);
        push_decimal(out, JSON_EPOCH + record, 0);
        out.push(b'}');
    }

    /// Whether `found` is value(record, version), without building the value where it can be avoided.
    #[inline]
    pub fn matches(&self, record: u64, version: u64, found: &[u8]) -> bool {
        self.expected(record, version).matches(found)
    }

    /// What a read of (record, version) must return, derived before the read: a worker that calls this
    /// before the engine call lets the CPU overlap the derivation with the call.
    #[inline(always)]
    pub fn expected(&self, record: u64, version: u64) -> Expected<'_> {
        if let (Some(p), 0) = (&self.stored, version) {
            return Expected::Bytes(p.value(record));
        }
        if self.fields > 0 {
            return Expected::Fields { of: FieldsOf(self), r: record, v: version };
        }
        let d = self.draw(record, version);
        match (self.generator, self.content) {
            (Generator::JsonDocs, _) => Expected::Json { text: self.printable(d), r: record },
            (Generator::Synthetic, ValueContent::Random) => Expected::Random { h: d.h, len: d.len },
            _ => Expected::Bytes(self.printable(d)),
        }
    }
}

/// An expected value, compared without being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected<'a> {
    Bytes(&'a [u8]),
    Random {
        h: u64,
        len: usize,
    },
    Json {
        text: &'a [u8],
        r: u64,
    },
    /// value(r, v) of a dataset whose values have fields: every field checked.
    Fields {
        of: FieldsOf<'a>,
        r: u64,
        v: u64,
    },
}

/// The values an [`Expected::Fields`] is derived from (equal when they are the same).
#[derive(Clone, Copy)]
pub struct FieldsOf<'a>(&'a Values);

impl std::fmt::Debug for FieldsOf<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{} fields", self.0.fields)
    }
}

impl PartialEq for FieldsOf<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for FieldsOf<'_> {}

impl Expected<'_> {
    #[inline]
    pub fn matches(&self, found: &[u8]) -> bool {
        match *self {
            Expected::Fields { of, r, v } => of.0.fields_match(r, &of.0.field_versions(r, v), found),
            _ => self.matches_fetched(found, |_| {}),
        }
    }

    /// `matches`, having first handed `fetch` each stretch of stored bytes it compares with (a
    /// caller's prefetch, for bytes not fetched ahead): asked for together, their cache misses
    /// overlap instead of following one another.
    #[inline]
    pub fn matches_fetched(&self, found: &[u8], mut fetch: impl FnMut(&[u8])) -> bool {
        match *self {
            Expected::Bytes(b) => {
                fetch(b);
                b == found
            }
            Expected::Random { h, len } => random_matches(Draw { h, len }, found),
            Expected::Json { text, r } => {
                fetch(text);
                json_matches(text, r, found)
            }
            Expected::Fields { of, r, v } => {
                let versions = of.0.field_versions(r, v);
                of.0.field_sources(r, &versions, fetch);
                of.0.fields_match(r, &versions, found)
            }
        }
    }

    /// Calls `f` with each stretch of stored bytes the check compares with (the pool's slices),
    /// so that a caller can have them fetched into the cache before the check.
    #[inline]
    pub fn each_source(&self, mut f: impl FnMut(&[u8])) {
        match *self {
            Expected::Bytes(b) => f(b),
            Expected::Random { .. } => {}
            Expected::Json { text, .. } => f(text),
            Expected::Fields { of, r, v } => of.0.field_sources(r, &of.0.field_versions(r, v), f),
        }
    }
}

fn json_matches(text: &[u8], record: u64, found: &[u8]) -> bool {
    let Some(rest) = found.strip_prefix(JSON_HEAD) else { return false };
    let Some(rest) = rest.strip_prefix(text) else { return false };
    let Some(rest) = rest.strip_prefix(JSON_MID) else { return false };
    let mut buf = [0u8; 20];
    let i = digits(JSON_EPOCH + record, &mut buf);
    rest.len() == 21 - i && rest[..20 - i] == buf[i..] && rest[20 - i] == b'}'
}

/// Appends the `draw.len` random bytes of `draw`.
fn push_random(out: &mut Vec<u8>, draw: Draw) {
    let end = out.len() + draw.len;
    let mut i = 0;
    while out.len() < end {
        let w = rnd(draw.h, i).to_le_bytes();
        let take = (end - out.len()).min(8);
        out.extend_from_slice(&w[..take]);
        i += 1;
    }
}

fn random_matches(draw: Draw, found: &[u8]) -> bool {
    if found.len() != draw.len {
        return false;
    }
    found.chunks(8).enumerate().all(|(i, c)| rnd(draw.h, i as u64).to_le_bytes()[..c.len()] == *c)
}

// ---------------------------------------------------------------------------------------------
// YCSB's zipfian and latest

/// YCSB's ScrambledZipfianGenerator: the zipfian runs over ITEM_COUNT + 1 items
/// (`new ZipfianGenerator(0, ITEM_COUNT, ...)`) with the precomputed ZETAN for theta 0.99.
pub const YCSB_ITEM_COUNT: u64 = 10_000_000_000;
pub const YCSB_ZETAN: f64 = 26.46902820178302;
pub const YCSB_THETA: f64 = 0.99;

/// zeta(items, theta) = sum of 1/i^theta for i = 1..=items, summed in YCSB's order (exact YCSB
/// result, O(items)).
pub fn zeta(items: u64, theta: f64) -> f64 {
    zeta_from(0, items, theta, 0.0)
}

/// YCSB's incremental zeta: `sum` (= zeta(st)) plus 1/(i+1)^theta for i = st..n, in order.
pub fn zeta_from(st: u64, items: u64, theta: f64, sum: f64) -> f64 {
    (st..items).fold(sum, |s, i| s + 1.0 / ((i + 1) as f64).powf(theta))
}

/// zeta(items, theta) by Euler–Maclaurin: the first `M` terms summed, the rest as the integral plus
/// the end-point and the B2, B4 corrections. The next term is below 1e-16 for M = 1000, so the
/// result is as accurate as the double it holds (YCSB's summed ZETAN is 3.2e-11 above it).
pub fn zeta_em(items: u64, theta: f64) -> f64 {
    const M: u64 = 1000;
    if items <= M {
        return zeta(items, theta);
    }
    let f = |x: f64| x.powf(-theta);
    let d1 = |x: f64| -theta * x.powf(-theta - 1.0);
    let d3 = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    let (a, b) = (M as f64, items as f64);
    let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
    let tail = integral + (f(a) + f(b)) / 2.0 + (d1(b) - d1(a)) / 12.0 - (d3(b) - d3(a)) / 720.0;
    zeta(M - 1, theta) + tail
}

/// zeta(2, theta) as YCSB computes it (0 + 1/1^theta + 1/2^theta).
pub fn zeta2(theta: f64) -> f64 {
    zeta(2, theta)
}

/// YCSB's eta for a generator over `items` items whose current zeta is `zetan`.
pub fn eta(items: u64, theta: f64, zetan: f64) -> f64 {
    (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2(theta) / zetan)
}

/// YCSB's ZipfianGenerator.nextLong(itemcount) for a uniform double `uniform`.
#[inline]
pub fn zipf(uniform: f64, itemcount: u64, zetan: f64, eta: f64, theta: f64, alpha: f64) -> u64 {
    zipf_with(uniform, itemcount as f64, zetan, eta, 1.0 + 0.5f64.powf(theta), alpha)
}

/// `zipf` with `1 + 0.5^theta` precomputed (`second`).
#[inline]
pub fn zipf_with(uniform: f64, itemcount: f64, zetan: f64, eta: f64, second: f64, alpha: f64) -> u64 {
    let uz = uniform * zetan;
    if uz < 1.0 {
        return 0;
    }
    if uz < second {
        return 1;
    }
    (itemcount * (eta * uniform - eta + 1.0).powf(alpha)) as u64
}

fn check_theta(theta: f64) -> anyhow::Result<()> {
    ensure!(theta > 0.0 && theta < 1.0, "zipfian constant (theta) must be in (0, 1), got {theta}");
    Ok(())
}

/// The job's `zipfian` distribution over `records` records: YCSB's ScrambledZipfianGenerator.
/// YCSB itself uses `records` = loaded + expected inserts + 1 and draws again above the newest
/// record.
pub fn zipfian_dist(records: u64, theta: f64) -> anyhow::Result<Dist> {
    check_theta(theta)?;
    ensure!(records >= 1, "zipfian over 0 records");
    let items = YCSB_ITEM_COUNT + 1;
    let zetan = if theta == YCSB_THETA { YCSB_ZETAN } else { zeta_em(items, theta) };
    let eta = eta(items, theta, zetan);
    Ok(Dist::Zipfian { n: records, items, zetan, eta, theta, alpha: 1.0 / (1.0 - theta) })
}

/// The job's `latest` distribution: YCSB's SkewedLatestGenerator, whose ZipfianGenerator is
/// built with items = the newest record `last0` at construction (zeta summed as YCSB does).
pub fn latest_dist(records: u64, last0: u64, theta: f64) -> anyhow::Result<Dist> {
    check_theta(theta)?;
    ensure!(last0 >= 1, "latest needs at least 2 records before the phase (newest record is {last0})");
    let zetan = zeta(last0, theta);
    let eta = eta(last0, theta, zetan);
    Ok(Dist::Latest { n: records, count: last0, zetan, eta, theta, alpha: 1.0 / (1.0 - theta) })
}

/// A thread's state of YCSB's SkewedLatestGenerator: zetan grows as `last` grows, and eta is
/// recomputed from it with the construction's item count, as ZipfianGenerator.nextLong does.
#[derive(Debug, Clone, Copy)]
pub struct Latest {
    items: u64,
    countforzeta: u64,
    zetan: f64,
    eta: f64,
    theta: f64,
    alpha: f64,
    second: f64,
}

impl Latest {
    pub fn new(count: u64, zetan: f64, eta: f64, theta: f64, alpha: f64) -> Latest {
        let second = 1.0 + 0.5f64.powf(theta);
        Latest { items: count, countforzeta: count, zetan, eta, theta, alpha, second }
    }

    /// The record for the uniform double `uniform` when the newest record is `last`.
    #[inline]
    pub fn next(&mut self, uniform: f64, last: u64) -> u64 {
        if last > self.countforzeta {
            self.grow(last);
        }
        last - zipf_with(uniform, last as f64, self.zetan, self.eta, self.second, self.alpha).min(last)
    }

    #[cold]
    fn grow(&mut self, last: u64) {
        self.zetan = zeta_from(self.countforzeta, last, self.theta, self.zetan);
        self.countforzeta = last;
        self.eta = eta(self.items, self.theta, self.zetan);
    }

    pub fn zetan(&self) -> f64 {
        self.zetan
    }
}

/// Mixed-phase thresholds: part i becomes the integer weight w_i = round(part_i * 10^9); with
/// W_i the cumulative weight and W the total, threshold_i = min(floor(W_i * 2^64 / W), 2^64 - 1)
/// in 128-bit integers. Exact for parts given with up to 9 decimals.
pub fn thresholds(parts: &[f64]) -> anyhow::Result<Vec<u64>> {
    ensure!(!parts.is_empty(), "a mixed phase needs at least one operation kind");
    let mut weights = Vec::with_capacity(parts.len());
    for (i, &p) in parts.iter().enumerate() {
        ensure!(p.is_finite() && (0.0..=1e9).contains(&p), "mix part {i} is {p}: allowed 0 ..= 1e9");
        weights.push((p * 1e9).round() as u128);
    }
    let total: u128 = weights.iter().sum();
    ensure!(total > 0, "the mix's parts sum to 0");
    let mut cum = 0u128;
    Ok(weights
        .iter()
        .map(|w| {
            cum += w;
            ((cum << 64) / total).min(u64::MAX as u128) as u64
        })
        .collect())
}

#[cfg(test)]
mod tests;
