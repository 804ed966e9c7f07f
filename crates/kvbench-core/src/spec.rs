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

/// Value sizes: `size` for a fixed size, or `min`..=`max` uniformly.
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
}

impl Default for ValueSpec {
    fn default() -> Self {
        ValueSpec { size: Some(100), min: None, max: None, content: ValueContent::Printable }
    }
}

impl ValueSpec {
    /// Inclusive size range.
    pub fn range(&self) -> Result<(u32, u32), String> {
        match (self.size, self.min, self.max) {
            (Some(s), None, None) => Ok((s, s)),
            (None, Some(a), Some(b)) if a <= b => Ok((a, b)),
            (None, None, None) => Ok((100, 100)),
            _ => Err("value: give either `size`, or both `min` and `max` with min <= max".into()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl PhaseKind {
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
        }
    }

    pub fn writes(&self) -> bool {
        matches!(
            self,
            PhaseKind::Load
                | PhaseKind::Update
                | PhaseKind::Insert
                | PhaseKind::Delete
                | PhaseKind::Rmw
                | PhaseKind::Mixed
        )
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
    /// Record number for `distribution = "hot"`.
    pub hot_key: Option<u64>,
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
