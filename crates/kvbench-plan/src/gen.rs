//! Deterministic record generators. Every record draws from its own RNG seeded by
//! (seed, stream, record number), so record i is the same whatever order records are made in.

use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::spec::{DatasetSpec, KeyKind, ValueContent};

pub mod dictionary;
pub mod dir;
pub mod rows;
pub mod tsv;

/// Size of the shared pool printable values are cut from (1 MiB, as db_bench does with its
/// compressible pool): copying from it keeps generation far above 1 GB/s.
const POOL_SIZE: usize = 1 << 20;

/// Characters of printable values: letters, digits, punctuation and space, without `"` and
/// `\` so values can sit inside JSON strings unescaped.
const PRINTABLE: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'()*+,-./:;<=>?@[]^_`{|}~ ";

pub fn mix64(mut state: u64) -> u64 {
    // splitmix64 finaliser
    state = (state ^ (state >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    state = (state ^ (state >> 27)).wrapping_mul(0x94d049bb133111eb);
    state ^ (state >> 31)
}

pub fn record_rng(seed: u64, stream: u64, record: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ mix64(stream.wrapping_add(record.wrapping_mul(0x9e3779b97f4a7c15)))))
}

pub fn fnv1a64(value: u64) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in value.to_le_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Makes the keys and values of a dataset. `record` is called for i = 0, 1, 2 ... in order;
/// `update_value` may be called in any order.
pub trait RecordSource {
    /// Number of records (known before generation starts).
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()>;
    /// The value written by the `version`-th update of `record` (version >= 1).
    fn update_value(&mut self, record: u64, version: u64, value: &mut Vec<u8>);
    /// Key of `record` when called again later (to address records by number).
    fn key(&mut self, record: u64, key: &mut Vec<u8>);
}

/// Keys from a [`KeySpec`](crate::spec::KeySpec), values of a size range and content kind.
pub struct Synthetic {
    seed: u64,
    records: u64,
    key_kind: KeyKind,
    key_width: usize,
    min: u32,
    max: u32,
    content: ValueContent,
    pool: Vec<u8>,
}

impl Synthetic {
    pub fn new(seed: u64, spec: &DatasetSpec) -> Result<Synthetic, String> {
        let (min, max) = spec.value.range()?;
        if spec.key.kind == KeyKind::U32be && spec.records > u32::MAX as u64 {
            return Err("key kind u32be holds at most 4294967295 records".into());
        }
        Ok(Synthetic {
            seed,
            records: spec.records,
            key_kind: spec.key.kind,
            key_width: spec.key.width as usize,
            min,
            max,
            content: spec.value.content,
            pool: printable_pool(seed, POOL_SIZE + max as usize),
        })
    }

    fn fill_value(&self, mut rng: Xoshiro256PlusPlus, value: &mut Vec<u8>) {
        value.clear();
        let len = if self.min == self.max { self.min } else { rng.gen_range(self.min..=self.max) } as usize;
        match self.content {
            ValueContent::Printable => {
                let off = rng.gen_range(0..POOL_SIZE);
                value.extend_from_slice(&self.pool[off..off + len]);
            }
            ValueContent::Random => {
                value.resize(len, 0);
                rng.fill_bytes(value);
            }
        }
    }
}

pub fn printable_pool(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = record_rng(seed, 0x706f6f6c, 0);
    (0..len).map(|_| PRINTABLE[rng.gen_range(0..PRINTABLE.len())]).collect()
}

pub fn make_key(kind: KeyKind, width: usize, record: u64, key: &mut Vec<u8>) {
    use std::io::Write;
    key.clear();
    match kind {
        KeyKind::U32be => key.extend_from_slice(&(record as u32).to_be_bytes()),
        KeyKind::U64be => key.extend_from_slice(&record.to_be_bytes()),
        KeyKind::Decimal => {
            let _ = write!(key, "{:0width$}", record, width = width);
        }
        KeyKind::Ycsb => {
            let _ = write!(key, "user{}", fnv1a64(record));
        }
        KeyKind::Random => crate::primitives::push_random_key(key, record, width),
        KeyKind::DbBench => crate::primitives::push_db_bench_key(key, record, width),
    }
}

impl RecordSource for Synthetic {
    fn len(&self) -> u64 {
        self.records
    }

    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        make_key(self.key_kind, self.key_width, record, key);
        self.fill_value(record_rng(self.seed, 1, record), value);
        Ok(())
    }

    fn update_value(&mut self, record: u64, version: u64, value: &mut Vec<u8>) {
        self.fill_value(record_rng(self.seed, 1 + version, record), value);
    }

    fn key(&mut self, record: u64, key: &mut Vec<u8>) {
        make_key(self.key_kind, self.key_width, record, key);
    }
}

/// Article 000's documents: `{"text": "<0..=2000 printable chars>", "created_at": <int>}`
/// under 4-byte big-endian keys (the key spec still applies).
pub struct JsonDocs {
    inner: Synthetic,
}

impl JsonDocs {
    pub fn new(seed: u64, spec: &DatasetSpec) -> Result<JsonDocs, String> {
        let mut s = spec.clone();
        s.value = crate::spec::ValueSpec { size: None, min: Some(0), max: Some(2000), ..Default::default() };
        if let Some((a, b)) = spec.value.min.zip(spec.value.max) {
            s.value.min = Some(a);
            s.value.max = Some(b);
        }
        Ok(JsonDocs { inner: Synthetic::new(seed, &s)? })
    }

    fn doc(&self, rng_stream: u64, record: u64, value: &mut Vec<u8>) {
        use std::io::Write;
        let mut text = Vec::new();
        self.inner.fill_value(record_rng(self.inner.seed, rng_stream, record), &mut text);
        value.clear();
        value.extend_from_slice(b"{\"text\": \"");
        value.extend_from_slice(&text);
        // A fixed epoch plus the record number keeps documents deterministic.
        let _ = write!(value, "\", \"created_at\": {}}}", 1_700_000_000 + record);
    }
}

impl RecordSource for JsonDocs {
    fn len(&self) -> u64 {
        self.inner.records
    }
    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        self.inner.key(record, key);
        self.doc(1, record, value);
        Ok(())
    }
    fn update_value(&mut self, record: u64, version: u64, value: &mut Vec<u8>) {
        self.doc(1 + version, record, value);
    }
    fn key(&mut self, record: u64, key: &mut Vec<u8>) {
        self.inner.key(record, key);
    }
}

/// Build the record source a dataset spec names. New generators add one arm here.
pub fn source_for(seed: u64, spec: &DatasetSpec) -> Result<Box<dyn RecordSource>, String> {
    if let Some(src) = &spec.source {
        if let Some(path) = src.strip_prefix("dir:") {
            return Ok(Box::new(dir::DirSource::new(path, spec)?));
        }
        if let Some(path) = src.strip_prefix("file:") {
            if [".csv", ".json", ".jsonl"].iter().any(|ext| path.ends_with(ext)) {
                return Err(format!("dataset source `{src}`: only tab-separated files are read so far"));
            }
            return Ok(Box::new(tsv::TsvFile::open(path, spec.key_column, spec.value_column)?));
        }
        return Err(format!("dataset source `{src}`: no reader for this source kind yet"));
    }
    match spec.generator.as_deref() {
        None | Some("synthetic") => Ok(Box::new(Synthetic::new(seed, spec)?)),
        Some("json-docs") => Ok(Box::new(JsonDocs::new(seed, spec)?)),
        Some("dictionary") => Ok(Box::new(dictionary::Dictionary::new(seed, spec)?)),
        Some("rows") => Ok(Box::new(rows::Rows::new(seed, spec)?)),
        Some(other) => {
            Err(format!("dataset generator `{other}` is unknown (known: synthetic, json-docs, dictionary, rows)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_do_not_depend_on_generation_order() {
        let spec = DatasetSpec::default();
        let mut a = Synthetic::new(7, &spec).unwrap();
        let mut b = Synthetic::new(7, &spec).unwrap();
        let (mut k1, mut v1, mut k2, mut v2) = (vec![], vec![], vec![], vec![]);
        a.record(5, &mut k1, &mut v1).unwrap();
        b.record(9, &mut k2, &mut v2).unwrap();
        b.record(5, &mut k2, &mut v2).unwrap();
        assert_eq!((k1, v1), (k2, v2));
    }

    #[test]
    fn value_sizes_stay_in_range() {
        let mut spec = DatasetSpec::default();
        spec.value = crate::spec::ValueSpec {
            size: None,
            min: Some(45),
            max: Some(55),
            content: ValueContent::Random,
            ..Default::default()
        };
        let mut g = Synthetic::new(1, &spec).unwrap();
        let (mut k, mut v) = (vec![], vec![]);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..2000 {
            g.record(i, &mut k, &mut v).unwrap();
            assert!((45..=55).contains(&v.len()));
            seen.insert(v.len());
        }
        assert_eq!(seen.len(), 11, "every size in the range should occur");
    }

    #[test]
    fn json_docs_are_valid_json() {
        let spec = DatasetSpec { generator: Some("json-docs".into()), ..Default::default() };
        let mut g = JsonDocs::new(3, &spec).unwrap();
        let (mut k, mut v) = (vec![], vec![]);
        for i in 0..200 {
            g.record(i, &mut k, &mut v).unwrap();
            let doc: serde_json::Value = serde_json::from_slice(&v).unwrap();
            assert!(doc["text"].as_str().unwrap().len() <= 2000);
            assert_eq!(doc["created_at"].as_u64(), Some(1_700_000_000 + i));
        }
    }

    #[test]
    fn keys_have_their_declared_shape() {
        let mut k = Vec::new();
        make_key(KeyKind::U32be, 0, 258, &mut k);
        assert_eq!(k, [0, 0, 1, 2]);
        make_key(KeyKind::Decimal, 8, 42, &mut k);
        assert_eq!(k, b"00000042");
        make_key(KeyKind::Ycsb, 0, 1, &mut k);
        assert!(k.starts_with(b"user"));
    }
}
