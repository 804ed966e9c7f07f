//! SORTED (and RANK) for a derived dataset whose keys are not in record order (`ycsb`, `random`, and `decimal` with
//! more records than `width` digits hold), built in bounded memory: a sample fixes bucket
//! boundaries, one pass over the records spills each key's code to its bucket's file, and each
//! bucket is then sorted on its own and appended.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context};

use super::{tmp_path, write_spec, Header, PlanId, Writer, SORTED};
use crate::derive::derived_key;
use crate::job::KeyShape;
use crate::spec::KeyKind;

/// Bytes of key codes held in memory at once (16 bytes a record).
const BUDGET: u64 = 32 << 20;
/// Records sampled to place the bucket boundaries.
const SAMPLE: u64 = 1 << 16;

/// The sort key of a derived key: after `user` (ycsb) the key is at most 20 characters of `-`
/// and digits, each coded in 4 bits (end 0, `-` 1, `0`..`9` 2..11), which keeps byte order in
/// 80 bits; the record number fills the low 32 bits of the u128.
pub(super) fn digit_code(key: &[u8]) -> u128 {
    let body = key.strip_prefix(b"user").unwrap_or(key);
    let mut code = 0u128;
    for i in 0..20 {
        let c = match body.get(i) {
            None => 0,
            Some(b'-') => 1,
            Some(d) => (d - b'0' + 2) as u128,
        };
        code = code << 4 | c;
    }
    code
}

struct Codes {
    key: KeyShape,
    buf: Vec<u8>,
}

impl Codes {
    fn of(&mut self, record: u64) -> u128 {
        derived_key(self.key.kind, self.key.width, record, &mut self.buf);
        let code = match self.key.kind {
            // The first 8 bytes of a random key tell records apart, so they order the keys.
            KeyKind::Random => u64::from_be_bytes(self.buf[..8].try_into().expect("8 bytes or more")) as u128,
            _ => digit_code(&self.buf),
        };
        code << 32 | record as u128
    }
}

/// Bucket boundaries: bucket b holds codes below `splits[b]` (and at or above the one before).
fn splits(codes: &mut Codes, total: u64, budget: u64) -> Vec<u128> {
    let per_bucket = (budget / 16 / 2).max(1);
    let buckets = total.div_ceil(per_bucket).max(1);
    if buckets == 1 {
        return vec![];
    }
    let mut sample: Vec<u128> = (0..SAMPLE).map(|i| codes.of(i * total / SAMPLE)).collect();
    sample.sort_unstable();
    (1..buckets).map(|b| sample[(b * SAMPLE / buckets) as usize]).collect()
}

/// Builds a plan file holding SORTED, RANK and SPEC alone. Memory: about 16 MiB of codes plus a
/// 64 KiB buffer a bucket, whatever the record count; the bucket files take 16 bytes a record
/// beside the plan while it builds.
pub fn build_sorted(path: &Path, id: PlanId, key: KeyShape, total: u64) -> anyhow::Result<()> {
    build_sorted_within(path, id, key, total, BUDGET)
}

/// `build_sorted` holding about `budget` bytes of codes at once.
pub(super) fn build_sorted_within(
    path: &Path,
    id: PlanId,
    key: KeyShape,
    total: u64,
    budget: u64,
) -> anyhow::Result<()> {
    ensure!(total <= u32::MAX as u64 + 1, "SORTED numbers records in 32 bits; {total} records are too many");
    ensure!(
        matches!(key.kind, KeyKind::Ycsb | KeyKind::Decimal | KeyKind::Random),
        "keys of kind {:?} are in record order",
        key.kind
    );
    let tmp = tmp_path(path);
    let spill = tmp.with_extension("buckets");
    let result = write(path, &tmp, &spill, id, key, total, budget);
    let _ = std::fs::remove_dir_all(&spill);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write(
    path: &Path,
    tmp: &Path,
    spill: &Path,
    id: PlanId,
    key: KeyShape,
    total: u64,
    budget: u64,
) -> anyhow::Result<()> {
    let mut codes = Codes { key, buf: Vec::new() };
    let splits = splits(&mut codes, total, budget);
    let files = spread(&mut codes, total, &splits, spill)?;
    let mut w = Writer::create(tmp, 3)?;
    let start = w.begin()?;
    for f in &files {
        let mut bucket = read_bucket(f, &mut codes, total, splits.is_empty())?;
        bucket.sort_unstable();
        for c in bucket {
            w.write(&(c as u32).to_le_bytes())?;
        }
    }
    w.end(SORTED, start, total);
    w.rank(total)?;
    write_spec(&mut w, id.spec_json)?;
    let header = Header { seed: id.seed, spec_hash: id.spec_hash, records: total, distinct: total, raw_bytes: 0 };
    w.finish(tmp, path, header)
}

/// One pass over the records: each code goes to its bucket's file (none for a single bucket).
fn spread(codes: &mut Codes, total: u64, splits: &[u128], spill: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if splits.is_empty() {
        return Ok(vec![PathBuf::new()]);
    }
    std::fs::create_dir_all(spill).with_context(|| format!("sort spill {}: cannot create", spill.display()))?;
    let paths: Vec<PathBuf> = (0..=splits.len()).map(|b| spill.join(format!("{b}"))).collect();
    let mut outs = paths
        .iter()
        .map(|p| {
            Ok(BufWriter::with_capacity(
                64 << 10,
                File::create(p).with_context(|| format!("sort spill {}", p.display()))?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    for r in 0..total {
        let c = codes.of(r);
        outs[splits.partition_point(|&s| s <= c)].write_all(&c.to_le_bytes())?;
    }
    for o in &mut outs {
        o.flush()?;
    }
    Ok(paths)
}

/// A bucket's codes: from its file, or (a single bucket) derived again.
fn read_bucket(path: &Path, codes: &mut Codes, total: u64, single: bool) -> anyhow::Result<Vec<u128>> {
    if single {
        return Ok((0..total).map(|r| codes.of(r)).collect());
    }
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes).with_context(|| format!("sort spill {}", path.display()))?;
    Ok(bytes.chunks_exact(16).map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes"))).collect())
}
