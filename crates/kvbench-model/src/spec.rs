//! What a plan is made from: the dataset and each phase's operation sequence.
//! These types are what scenario files and the command line fill in.

use serde::{Deserialize, Serialize};

/// The records to load. `records` counts records of the generator, or is ignored for files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    #[serde(default = "default_records")]
    pub records: u64,
    #[serde(default)]
    pub key: KeySpec,
    #[serde(default)]
    pub value: ValueSpec,
    /// A generator with its own key and value shapes (`json-docs`, `dictionary`, ...);
    /// `key`/`value` then only apply where the generator says so.
    #[serde(default)]
    pub generator: Option<String>,
    /// `file:PATH.tsv`, `dir:PATH` ... for data a user brings.
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub key_column: Option<usize>,
    #[serde(default)]
    pub value_column: Option<usize>,
}

fn default_records() -> u64 {
    100_000
}

impl Default for DatasetSpec {
    fn default() -> Self {
        DatasetSpec {
            records: default_records(),
            key: KeySpec::default(),
            value: ValueSpec::default(),
            generator: None,
            source: None,
            key_column: None,
            value_column: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum KeyKind {
    /// 4-byte big-endian record number (article 000).
    U32be,
    /// 8-byte big-endian record number.
    U64be,
    /// Zero-padded decimal record number, `width` digits (like db_bench's `%016d`).
    #[default]
    Decimal,
    /// YCSB-style `user<fnv64 of the record number>`: unsorted relative to insertion order.
    Ycsb,
    /// `width` bytes (8 or more) that look random, as redb's benchmark keys: unsorted, unique.
    Random,
    /// db_bench's keys: the 8-byte big-endian record number padded with `0` characters to
    /// `width` bytes (8 or more), so that a store holds the bytes db_bench's would.
    DbBench,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySpec {
    #[serde(default)]
    pub kind: KeyKind,
    #[serde(default = "default_key_width")]
    pub width: u32,
}

fn default_key_width() -> u32 {
    16
}

impl Default for KeySpec {
    fn default() -> Self {
        KeySpec { kind: KeyKind::default(), width: default_key_width() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ValueContent {
    /// Printable ASCII taken from a seeded pool (fast, compressible about like text).
    #[default]
    Printable,
    /// Uniformly random bytes (incompressible).
    Random,
}

/// Value sizes: `size` for a fixed size, or `min`..=`max` uniformly. With `fields`, YCSB's
/// record shape: that many fields of `field_size` (or `min`..=`max`) bytes each, serialised
/// into the value (docs/plan-format.md, "Fields").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    #[serde(default)]
    pub size: Option<u32>,
    #[serde(default)]
    pub min: Option<u32>,
    #[serde(default)]
    pub max: Option<u32>,
    #[serde(default)]
    pub content: ValueContent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_size: Option<u32>,
    /// An update writes every field (YCSB's `writeallfields`); by default one field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_all_fields: Option<bool>,
}

impl Default for ValueSpec {
    fn default() -> Self {
        ValueSpec {
            size: Some(100),
            min: None,
            max: None,
            content: ValueContent::Printable,
            fields: None,
            field_size: None,
            write_all_fields: None,
        }
    }
}

impl ValueSpec {
    /// Inclusive size range: of the value, or with `fields` of each field.
    pub fn range(&self) -> Result<(u32, u32), String> {
        if self.fields.is_some() {
            return match (self.field_size, self.size, self.min, self.max) {
                (Some(s), None, None, None) => Ok((s, s)),
                (None, None, Some(a), Some(b)) if a <= b => Ok((a, b)),
                _ => Err("value: with `fields`, give `field_size`, or both `min` and `max` (bytes per field) \
                          with min <= max"
                    .into()),
            };
        }
        if self.field_size.is_some() || self.write_all_fields.is_some() {
            return Err("value: `field_size` and `write_all_fields` need `fields`".into());
        }
        match (self.size, self.min, self.max) {
            (Some(s), None, None) => Ok((s, s)),
            (None, Some(a), Some(b)) if a <= b => Ok((a, b)),
            (None, None, None) => Ok((100, 100)),
            _ => Err("value: give either `size`, or both `min` and `max` with min <= max".into()),
        }
    }
}

/// The kind of a scenario phase, of a job's ops step and of each operation it runs (a mixed
/// phase's ops are each of one of its `kinds`): one enum, so a phase and its operations share
/// one name in the scenario, the job protocol and the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    Load,
    Get,
    MultiGet,
    Scan,
    Update,
    /// Writes records that were never loaded (YCSB's insert).
    Insert,
    Delete,
    /// Read a record and write its next version, timed as one operation (YCSB F).
    Rmw,
    Mixed,
    /// A recorded or modelled operation stream run op by op as it was recorded (a trace,
    /// db_bench's mixgraph, a model fitted to a trace): gets, multi-gets, puts (as updates),
    /// deletes and scans, each request as one unit.
    Replay,
    /// Untimed, between phases: the engine flushes and compacts (or waits until no compaction
    /// is pending), so the next phase starts from a settled store. Runs no operations.
    Settle,
    /// Untimed figure, between phases: the store is closed and its files' allocated bytes
    /// read right there (the space after a write, before later phases add to it). Runs no
    /// operations.
    Size,
    /// Between phases: the store is closed and opened again read-write, the page cache left as
    /// it is (RocksDB's benchmark.sh runs each test in a new db_bench process on the existing
    /// files). An LSM store's memtable reaches its files on the way (RocksDB replays its WAL
    /// into level 0 at open), so the next phase reads what the writes left on disk. Its figure
    /// is the open; the close is a note. Runs no operations.
    Reopen,
}

impl PhaseKind {
    pub const ALL: [PhaseKind; 13] = [
        PhaseKind::Load,
        PhaseKind::Get,
        PhaseKind::MultiGet,
        PhaseKind::Scan,
        PhaseKind::Update,
        PhaseKind::Insert,
        PhaseKind::Delete,
        PhaseKind::Rmw,
        PhaseKind::Mixed,
        PhaseKind::Replay,
        PhaseKind::Settle,
        PhaseKind::Size,
        PhaseKind::Reopen,
    ];

    /// The name the scenario, the job protocol and the results spell.
    pub fn as_str(&self) -> &'static str {
        match self {
            PhaseKind::Load => "load",
            PhaseKind::Get => "get",
            PhaseKind::MultiGet => "multi-get",
            PhaseKind::Scan => "scan",
            PhaseKind::Update => "update",
            PhaseKind::Insert => "insert",
            PhaseKind::Delete => "delete",
            PhaseKind::Rmw => "rmw",
            PhaseKind::Mixed => "mixed",
            PhaseKind::Replay => "replay",
            PhaseKind::Settle => "settle",
            PhaseKind::Size => "size",
            PhaseKind::Reopen => "reopen",
        }
    }

    /// A phase after the load that runs operations (settle and size run none): what `--threads` and
    /// a row's `threads` set.
    pub fn runs_after_load(&self) -> bool {
        *self != PhaseKind::Load && self.runs_ops()
    }

    /// Writes per commit when neither the phase nor the row says: a load commits every 1 000.
    pub fn default_batch(&self) -> u32 {
        if *self == PhaseKind::Load {
            1000
        } else {
            1
        }
    }

    /// Whether the phase runs operations (settle, size and reopen phases run none): the kinds an
    /// ops step may have.
    pub fn runs_ops(&self) -> bool {
        !matches!(self, PhaseKind::Settle | PhaseKind::Size | PhaseKind::Reopen)
    }

    /// The same for a result's phase kind (`open` and `close` run one call each: true; a reopen's
    /// time is the store's, not a rate, as a settle's).
    pub fn named_runs_ops(kind: &str) -> bool {
        !matches!(kind, "settle" | "size" | "reopen")
    }

    /// Every operation of this kind writes (a mixed phase's do not all: [`PhaseKind::may_write`]).
    pub fn writes(&self) -> bool {
        matches!(self, PhaseKind::Load | PhaseKind::Update | PhaseKind::Insert | PhaseKind::Delete | PhaseKind::Rmw)
    }

    /// A phase of this kind may write: its operations write, or it is mixed or a replay.
    pub fn may_write(&self) -> bool {
        self.writes() || matches!(self, PhaseKind::Mixed | PhaseKind::Replay)
    }

    /// A kind a mixed phase's operations may have (one key a unit, no load, no nesting).
    pub fn mixes(&self) -> bool {
        self.runs_ops() && !matches!(self, PhaseKind::Load | PhaseKind::Mixed | PhaseKind::Replay | PhaseKind::MultiGet)
    }
}

/// Which records the operations of a phase touch, in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Record 0, 1, 2 ... wrapping around.
    Sequential,
    /// Every record exactly once per pass, in random order (a permutation).
    #[default]
    Shuffle,
    /// The order the load wrote the records in (a shuffled load's permutation, replayed).
    LoadOrder,
    /// Uniformly random records, with replacement (for a load: a permutation, as `shuffle`).
    Uniform,
    /// YCSB's scrambled Zipfian (a few records are hot, spread over the key space).
    Zipfian,
    /// The most recently loaded records are the hottest (YCSB's "latest").
    Latest,
    /// One record every time (`hot_key`), the cache-friendly pattern of articles 000 and 003.
    Hot,
}

/// The record a `hot` phase reads: a record number, or a share of the record count written
/// `"12.3456%"` (record `floor(records × share)`) so a scenario keeps its shape at any size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HotKey {
    Record(u64),
    Percent(f64),
}

impl HotKey {
    /// The record among `records`; `None` when it is past the last one.
    pub fn record(self, records: u64) -> Option<u64> {
        let r = match self {
            HotKey::Record(r) => r,
            // A share written to a record's digits ("12.3456%" of 1 000 000) lands on that
            // record despite binary rounding.
            HotKey::Percent(p) => (records as f64 * p / 100.0 + 1e-6).floor() as u64,
        };
        (r < records).then_some(r)
    }

    fn parse_percent(text: &str) -> Result<HotKey, String> {
        let p = text.trim().strip_suffix('%').and_then(|n| n.trim().parse::<f64>().ok());
        match p {
            Some(p) if (0.0..100.0).contains(&p) => Ok(HotKey::Percent(p)),
            _ => Err(format!(
                "`{text}` is not a hot key (allowed: a record number, or a share of the records from \"0%\" to below \"100%\", e.g. \"12.5%\")"
            )),
        }
    }
}

impl std::fmt::Display for HotKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HotKey::Record(r) => write!(formatter, "{r}"),
            HotKey::Percent(p) => write!(formatter, "{p}%"),
        }
    }
}

impl Serialize for HotKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            HotKey::Record(r) => serializer.serialize_u64(*r),
            HotKey::Percent(_) => serializer.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for HotKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<HotKey, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = HotKey;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a record number or a share of the records such as \"12.5%\"")
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<HotKey, E> {
                Ok(HotKey::Record(value))
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<HotKey, E> {
                u64::try_from(value)
                    .map(HotKey::Record)
                    .map_err(|_| E::custom(format!("{value} is not a record number")))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<HotKey, E> {
                HotKey::parse_percent(value).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// Operation mix of a `mixed` phase, in parts (normalised); YCSB A is read 50, update 50.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Mix {
    #[serde(default)]
    pub read: f64,
    #[serde(default)]
    pub update: f64,
    #[serde(default)]
    pub scan: f64,
    #[serde(default)]
    pub delete: f64,
    #[serde(default)]
    pub insert: f64,
    /// Read-modify-write (YCSB F).
    #[serde(default)]
    pub rmw: f64,
}

/// The part of a phase that decides its operation sequence (hashed into the plan's id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpsSpec {
    pub kind: PhaseKind,
    /// Operations (or requests for multi-get and scan); `None` = one per record.
    pub count: Option<u64>,
    pub distribution: Distribution,
    /// Keys per multi-get request.
    pub keys_per_request: u32,
    /// Records per scan; 0 = to the end.
    pub scan_length: u64,
    /// Fewest records per scan: lengths are uniform in `scan_min..=scan_length`.
    #[serde(default)]
    pub scan_min: u64,
    pub mix: Mix,
    /// Record of `distribution = "hot"`: a number, or a share of the records.
    pub hot_key: Option<HotKey>,
    pub zipf_exponent: f64,
}

/// How much a phase does for one engine once its ops are fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    #[default]
    Warm,
    /// Close the database, evict its files from the page cache (posix_fadvise DONTNEED),
    /// reopen, then run the phase.
    Cold,
    /// Close and reopen the database before the phase, page cache kept: reads find a settled
    /// database (memtables flushed, nothing pending), as a program that opens it afresh does.
    Reopen,
}

/// Open the database once for the phase, or around every operation (the article 000 method,
/// kept so its cost can be shown; never the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OpenPer {
    #[default]
    Phase,
    Operation,
}

/// Bounds on every number a scenario or the command line gives: beyond them a run would
/// abort, spin or overflow rather than measure anything.
pub mod limits {
    /// Key width of decimal keys (digits) and random keys (bytes).
    pub const KEY_WIDTH: u32 = 64;
    /// The narrowest random or db-bench key: its first 8 bytes alone tell records apart.
    pub const RANDOM_KEY_WIDTH: u32 = 8;
    /// One value (64 MiB).
    pub const VALUE_SIZE: u32 = 64 << 20;
    /// Writes per batch.
    pub const BATCH: u32 = 1_000_000;
    /// Keys per multi-get request.
    pub const KEYS_PER_REQUEST: u32 = 1_000_000;
    /// Seconds one engine may run (7 days).
    pub const TIMEOUT_S: u64 = 7 * 24 * 3600;
    pub const THREADS: u32 = 1024;
    /// Records of a generated dataset (what fits on disk is the size guard's to say).
    pub const RECORDS: u64 = 1_000_000_000_000;
    /// Operations (or requests) of one phase.
    pub const OPS: u64 = 1_000_000_000_000;
    pub const REPETITIONS: u32 = 1000;
    /// Passes of a get phase over every record.
    pub const PASSES: u32 = 1000;
    /// Largest Zipf exponent (beyond it every operation hits the first record anyway).
    /// Operations per second of an open-loop phase.
    pub const RATE: f64 = 1e9;
    /// Cluster members are numbered from 0; no cluster kvbench starts has more.
    pub const KILL_MEMBER: u32 = 99;
    /// Parts of one kind in a `mix`.
    pub const MIX_PART: f64 = 1e9;
    /// Column of a `file:` dataset (counted from 1).
    pub const COLUMN: usize = 4096;
    /// Characters of a scenario name or row label.
    pub const NAME_CHARS: usize = 200;
}

/// `Ok` when `lo <= v <= hi`; else the allowed range, for an error naming the field.
/// The smallest and largest memory budget a row may have: below 8 MiB no worker starts.
pub const MEMORY_MIN: u64 = 8 << 20;
pub const MEMORY_MAX: u64 = 1 << 50;

/// A memory budget: `512MiB`, `2GiB`, `512m`, `1g`, `64k` (powers of 1024) or bytes.
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic()).trim();
    let unit = lower[digits.len()..].trim();
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        // The stated maximum is 1PiB: its own unit is accepted.
        "p" | "pb" | "pib" => 1 << 50,
        _ => return Err(memory_error(t)),
    };
    let n: f64 = digits.parse().map_err(|_| memory_error(t))?;
    let bytes = n * scale as f64;
    if !bytes.is_finite() || bytes < MEMORY_MIN as f64 || bytes > MEMORY_MAX as f64 {
        return Err(memory_error(t));
    }
    Ok(bytes as u64)
}

fn memory_error(text: &str) -> String {
    format!("`{text}` is not a memory size from 8MiB to 1PiB (allowed forms: \"512MiB\", \"2GiB\", \"512m\", bytes)")
}

pub fn in_range<T: PartialOrd + std::fmt::Display>(value: T, lo: T, hi: T) -> Result<(), String> {
    if value < lo || value > hi {
        return Err(format!("{value} is out of range (allowed: {lo} to {hi})"));
    }
    Ok(())
}

/// `Ok` when `value` is finite and `0 < value <= hi` (or `0 <= value` with `zero_ok`).
pub fn positive_finite(value: f64, hi: f64, zero_ok: bool) -> Result<(), String> {
    let low_ok = if zero_ok { value >= 0.0 } else { value > 0.0 };
    if !value.is_finite() || !low_ok || value > hi {
        let low = if zero_ok { ">= 0" } else { "> 0" };
        return Err(format!("{value} is out of range (allowed: a finite number {low} and <= {hi})"));
    }
    Ok(())
}

/// `Ok` when `value` is strictly between 0 and 1: the Zipfian constant YCSB's generator takes.
pub fn in_open_unit(value: f64) -> Result<(), String> {
    if !(value > 0.0 && value < 1.0) {
        return Err(format!(
            "{value} is out of range (allowed: a number > 0 and < 1, as YCSB's Zipfian generator takes)"
        ));
    }
    Ok(())
}

/// A name shown in reports and used (sanitised) in file names: not too long, no control
/// characters.
pub fn sane_name(name: &str) -> Result<(), String> {
    if name.chars().count() > limits::NAME_CHARS {
        return Err(format!("is {} characters long (allowed: at most {})", name.chars().count(), limits::NAME_CHARS));
    }
    if name.chars().any(char::is_control) {
        return Err("contains control characters (allowed: printable text)".into());
    }
    Ok(())
}

/// What a row declares about its verification (`expect = "mismatch"` on an `[[engine]]`
/// table); the policy decides whether the row behaved as declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// Some reads return wrong values (and nothing else goes wrong).
    Mismatch,
}

impl Expect {
    pub fn as_str(self) -> &'static str {
        match self {
            Expect::Mismatch => "mismatch",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_memory, PhaseKind, MEMORY_MAX, MEMORY_MIN};

    #[test]
    fn memory_sizes_are_accepted_up_to_and_including_the_stated_maximum() {
        assert_eq!(parse_memory("1PiB"), Ok(MEMORY_MAX));
        assert_eq!(parse_memory("1024TiB"), Ok(MEMORY_MAX));
        assert_eq!(parse_memory("8MiB"), Ok(MEMORY_MIN));
        for bad in ["1.01PiB", "2p", "7MiB", "1EiB"] {
            let e = parse_memory(bad).unwrap_err();
            assert!(e.contains("from 8MiB to 1PiB") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn every_kind_serializes_as_its_name_and_back() {
        for k in PhaseKind::ALL {
            let json = serde_json::to_value(k).unwrap();
            assert_eq!(json, serde_json::json!(k.as_str()));
            assert_eq!(serde_json::from_value::<PhaseKind>(json).unwrap(), k);
        }
    }

    #[test]
    fn settle_size_and_reopen_are_the_kinds_without_operations() {
        let none: Vec<&str> = PhaseKind::ALL.iter().filter(|k| !k.runs_ops()).map(|k| k.as_str()).collect();
        assert_eq!(none, ["settle", "size", "reopen"]);
        assert!(PhaseKind::ALL.iter().all(|k| k.runs_ops() == PhaseKind::named_runs_ops(k.as_str())));
    }

    #[test]
    fn a_phase_may_write_when_its_operations_write_or_it_is_mixed() {
        let writes: Vec<&str> = PhaseKind::ALL.iter().filter(|k| k.writes()).map(|k| k.as_str()).collect();
        assert_eq!(writes, ["load", "update", "insert", "delete", "rmw"]);
        let may: Vec<&str> = PhaseKind::ALL.iter().filter(|k| k.may_write()).map(|k| k.as_str()).collect();
        assert_eq!(may, ["load", "update", "insert", "delete", "rmw", "mixed", "replay"]);
    }

    #[test]
    fn a_mix_holds_single_key_kinds_that_run_operations() {
        let mixes: Vec<&str> = PhaseKind::ALL.iter().filter(|k| k.mixes()).map(|k| k.as_str()).collect();
        assert_eq!(mixes, ["get", "scan", "update", "insert", "delete", "rmw"]);
    }
}
