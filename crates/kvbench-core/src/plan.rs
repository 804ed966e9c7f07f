//! The plan: records and every phase's operations, generated once from a seed and written to
//! a little-endian binary file that every worker (Rust, Go, Python) memory-maps.
//! The format is specified in `docs/plan-format.md`; keep the two in step.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use memmap2::Mmap;
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::gen::{self, record_rng};
use crate::spec::{DatasetSpec, Distribution, OpsSpec, PhaseKind};

pub const MAGIC: &[u8; 8] = b"KVBPLAN\0";
pub const FORMAT_VERSION: u32 = 1;
pub const HEADER_SIZE: u64 = 64;
pub const SECTION_ENTRY_SIZE: u64 = 32;
pub const MAX_SECTIONS: u64 = 126;
/// Sections start after the header and the section table, at 4096.
pub const FIRST_SECTION: u64 = 4096;
/// "No value": the record is absent (never loaded or deleted).
pub const NONE: u32 = u32::MAX;

pub mod section {
    /// Keys and load values, concatenated record after record.
    pub const DATA: u32 = 1;
    /// Per record: u64 absolute offset of its key, u32 key length, u32 value length.
    pub const INDEX: u32 = 2;
    /// u32 record numbers of the distinct keys in byte order (the last loaded duplicate wins).
    pub const SORTED: u32 = 3;
    /// Values written by updates, concatenated.
    pub const UPDATE_DATA: u32 = 4;
    /// Per update value: u64 absolute offset, u32 record number, u32 length.
    pub const UPDATE_INDEX: u32 = 5;
    /// One phase's operations (section index = phase number), 16 bytes each.
    pub const OPS: u32 = 6;
    /// For scan phases: u32 value index per sorted position at the phase's start.
    pub const SCAN_EXPECT: u32 = 7;
    /// The plan spec as JSON (for people and tools; workers need not read it).
    pub const SPEC: u32 = 8;
}

pub mod op {
    pub const PUT: u32 = 1;
    pub const GET: u32 = 2;
    pub const DELETE: u32 = 3;
    pub const SCAN: u32 = 4;
}

/// One operation: `key` is a record number (for scans, a position in SORTED), `value` a value
/// index (to write, or expected by a read; NONE = absent), `aux` the records a scan visits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    pub kind: u32,
    pub key: u32,
    pub value: u32,
    pub aux: u32,
}

/// Everything that decides a plan's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanSpec {
    pub seed: u64,
    pub dataset: DatasetSpec,
    pub phases: Vec<OpsSpec>,
}

impl PlanSpec {
    pub fn hash(&self) -> u64 {
        let mut json = serde_json::to_vec(self).expect("plan spec serialises");
        // Data a user brings can change under the same name: its size and modification time
        // are part of the plan's identity, so an edited file gets a new plan.
        if let Some(src) = &self.dataset.source {
            let path = src.split_once(':').map(|(_, p)| p).unwrap_or(src);
            if let Ok(m) = std::fs::metadata(path) {
                let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                json.extend_from_slice(format!("{}:{:?}", m.len(), mtime).as_bytes());
            }
        }
        xxhash_rust::xxh3::xxh3_64_with_seed(&json, FORMAT_VERSION as u64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SectionEntry {
    kind: u32,
    index: u32,
    offset: u64,
    length: u64,
    count: u64,
}

/// Return the path of the plan for `spec` in `cache_dir`, building it if it is not there.
pub fn ensure(spec: &PlanSpec, cache_dir: &Path) -> anyhow::Result<(PathBuf, bool)> {
    std::fs::create_dir_all(cache_dir).with_context(|| format!("creating plan cache {}", cache_dir.display()))?;
    let path = cache_dir.join(format!("plan-{:016x}.kvbplan", spec.hash()));
    if path.exists() {
        if let Ok(p) = Plan::open(&path) {
            if p.spec_hash() == spec.hash() {
                return Ok((path, false));
            }
        }
    }
    build(spec, &path)?;
    Ok((path, true))
}

struct Out {
    w: BufWriter<File>,
    pos: u64,
    sections: Vec<SectionEntry>,
}

impl Out {
    fn write(&mut self, b: &[u8]) -> anyhow::Result<()> {
        self.w.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }
    fn align(&mut self) -> anyhow::Result<()> {
        while !self.pos.is_multiple_of(8) {
            self.write(&[0])?;
        }
        Ok(())
    }
    fn begin(&mut self) -> anyhow::Result<u64> {
        self.align()?;
        Ok(self.pos)
    }
    fn end(&mut self, kind: u32, index: u32, start: u64, count: u64) {
        self.sections.push(SectionEntry { kind, index, offset: start, length: self.pos - start, count });
    }
}

fn spill() -> anyhow::Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(1 << 20, tempfile_in_tmp()?))
}

fn tempfile_in_tmp() -> anyhow::Result<File> {
    // An unlinked temporary file: gone when dropped, whatever happens.
    let dir = std::env::temp_dir();
    for n in 0..1000u32 {
        let p = dir.join(format!("kvbench-spill-{}-{}-{n}", std::process::id(), nanos()));
        if let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&p) {
            let _ = std::fs::remove_file(&p);
            return Ok(f);
        }
    }
    bail!("cannot create a temporary file in {}", dir.display())
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

fn copy_spill(out: &mut Out, spill: BufWriter<File>) -> anyhow::Result<()> {
    let mut f = spill.into_inner().map_err(|e| e.into_error())?;
    f.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.write(&buf[..n])?;
    }
    Ok(())
}

/// Generate the plan for `spec` into `path` (written to a temporary name, then renamed).
pub fn build(spec: &PlanSpec, path: &Path) -> anyhow::Result<()> {
    validate(spec)?;
    let mut source = gen::source_for(spec.seed, &spec.dataset).map_err(|e| anyhow::anyhow!("dataset: {e}"))?;
    let n = source.len();
    if n == 0 {
        bail!("dataset: no records (set `records` > 0 or check the source file)");
    }
    if n >= NONE as u64 {
        bail!("dataset: {n} records; a plan holds fewer than {}", NONE);
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    let mut out = Out { w: BufWriter::with_capacity(4 << 20, file), pos: 0, sections: Vec::new() };
    out.write(&vec![0u8; FIRST_SECTION as usize])?;

    // DATA + INDEX: records streamed in order; the index is spilled and appended.
    let data_start = out.begin()?;
    let mut index = spill()?;
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut raw_bytes = 0u64;
    for i in 0..n {
        source.record(i, &mut key, &mut value).with_context(|| format!("dataset record {}", i + 1))?;
        if key.len() > u32::MAX as usize || value.len() > u32::MAX as usize {
            bail!("dataset record {}: key or value larger than 4 GiB", i + 1);
        }
        index.write_all(&out.pos.to_le_bytes())?;
        index.write_all(&(key.len() as u32).to_le_bytes())?;
        index.write_all(&(value.len() as u32).to_le_bytes())?;
        out.write(&key)?;
        out.write(&value)?;
        raw_bytes += (key.len() + value.len()) as u64;
    }
    out.end(section::DATA, 0, data_start, n);
    let index_start = out.begin()?;
    copy_spill(&mut out, index)?;
    out.end(section::INDEX, 0, index_start, n);
    out.w.flush()?;

    // Read the keys back through a map to sort them.
    let map = unsafe { Mmap::map(out.w.get_ref())? };
    let key_of = |r: u32| -> &[u8] {
        let e = index_start as usize + r as usize * 16;
        let off = u64::from_le_bytes(map[e..e + 8].try_into().unwrap()) as usize;
        let len = u32::from_le_bytes(map[e + 8..e + 12].try_into().unwrap()) as usize;
        &map[off..off + len]
    };

    // Load order first: it decides which duplicate of a key wins.
    let load = &spec.phases[0];
    let mut load_order: Vec<u32> = (0..n as u32).collect();
    if load.distribution == Distribution::Uniform {
        let mut rng = record_rng(spec.seed, 100, 0);
        for i in (1..load_order.len()).rev() {
            let j = rng.gen_range(0..=i);
            load_order.swap(i, j);
        }
    }
    let mut load_pos = vec![0u32; n as usize];
    for (p, &r) in load_order.iter().enumerate() {
        load_pos[r as usize] = p as u32;
    }
    let mut by_key: Vec<u32> = (0..n as u32).collect();
    by_key.sort_unstable_by(|&a, &b| key_of(a).cmp(key_of(b)).then(load_pos[a as usize].cmp(&load_pos[b as usize])));
    // canon[r] = the record whose value a read of r's key must return (last loaded duplicate).
    let mut canon = vec![0u32; n as usize];
    let mut sorted: Vec<u32> = Vec::with_capacity(n as usize);
    let mut i = 0;
    while i < by_key.len() {
        let mut j = i + 1;
        while j < by_key.len() && key_of(by_key[j]) == key_of(by_key[i]) {
            j += 1;
        }
        let winner = by_key[j - 1];
        for &r in &by_key[i..j] {
            canon[r as usize] = winner;
        }
        sorted.push(winner);
        i = j;
    }
    drop(by_key);
    drop(load_pos);
    let unique = sorted.len() as u64;
    let mut raw_unique = 0u64;
    for &r in &sorted {
        let e = index_start as usize + r as usize * 16;
        raw_unique += u32::from_le_bytes(map[e + 8..e + 12].try_into().unwrap()) as u64
            + u32::from_le_bytes(map[e + 12..e + 16].try_into().unwrap()) as u64;
    }
    let _ = raw_bytes;
    drop(map);

    let s = out.begin()?;
    for &r in &sorted {
        out.write(&r.to_le_bytes())?;
    }
    out.end(section::SORTED, 0, s, unique);

    // Operations. `current[c]` is the value index a read of canonical record c must return.
    let mut current: Vec<u32> = (0..n as u32).collect();
    let mut updates: Vec<(u32, u32)> = Vec::new(); // (record, version) per update value
    let mut versions: Vec<u32> = Vec::new();
    let mut gen_ops = OpWriter { out: &mut out, count: 0 };
    let s = gen_ops.out.begin()?;
    for &r in &load_order {
        gen_ops.push(Op { kind: op::PUT, key: r, value: r, aux: 0 })?;
    }
    let c = gen_ops.count;
    gen_ops.out.end(section::OPS, 0, s, c);
    drop(load_order);

    for (pi, ph) in spec.phases.iter().enumerate().skip(1) {
        let mut rng = record_rng(spec.seed, 100 + pi as u64, 0);
        let mut picker = Picker::new(ph, n, spec.seed, pi as u64)?;
        if ph.kind == PhaseKind::Scan {
            let s = out.begin()?;
            for &r in &sorted {
                out.write(&current[r as usize].to_le_bytes())?;
            }
            out.end(section::SCAN_EXPECT, pi as u32, s, unique);
        }
        let requests = ph.count.unwrap_or(match ph.kind {
            PhaseKind::Scan => 1,
            PhaseKind::MultiGet => n.div_ceil(ph.keys_per_request.max(1) as u64),
            _ => n,
        });
        let mut w = OpWriter { out: &mut out, count: 0 };
        let s = w.out.begin()?;
        let mut scan_next = 0u64;
        let mix_total = ph.mix.read + ph.mix.update + ph.mix.scan + ph.mix.delete;
        for _ in 0..requests {
            let kind = match ph.kind {
                PhaseKind::Get | PhaseKind::MultiGet => op::GET,
                PhaseKind::Update => op::PUT,
                PhaseKind::Delete => op::DELETE,
                PhaseKind::Scan => op::SCAN,
                PhaseKind::Mixed => {
                    let x = rng.gen::<f64>() * mix_total;
                    if x < ph.mix.read {
                        op::GET
                    } else if x < ph.mix.read + ph.mix.update {
                        op::PUT
                    } else if x < ph.mix.read + ph.mix.update + ph.mix.scan {
                        op::SCAN
                    } else {
                        op::DELETE
                    }
                }
                PhaseKind::Load => unreachable!("validated: load is the first phase only"),
            };
            let per_request = if ph.kind == PhaseKind::MultiGet { ph.keys_per_request.max(1) } else { 1 };
            for _ in 0..per_request {
                match kind {
                    op::GET => {
                        let r = picker.next(&mut rng);
                        w.push(Op { kind, key: r, value: current[canon[r as usize] as usize], aux: 0 })?;
                    }
                    op::PUT => {
                        let r = picker.next(&mut rng);
                        let c = canon[r as usize] as usize;
                        let j = n as u32 + updates.len() as u32;
                        if versions.is_empty() {
                            versions = vec![0; n as usize];
                        }
                        versions[c] += 1;
                        updates.push((c as u32, versions[c]));
                        current[c] = j;
                        w.push(Op { kind, key: r, value: j, aux: 0 })?;
                    }
                    op::DELETE => {
                        let r = picker.next(&mut rng);
                        current[canon[r as usize] as usize] = NONE;
                        w.push(Op { kind, key: r, value: NONE, aux: 0 })?;
                    }
                    _ => {
                        let len = if ph.scan_length == 0 { unique } else { ph.scan_length.min(unique) };
                        let start = match ph.distribution {
                            Distribution::Sequential => {
                                let st = scan_next % unique;
                                scan_next = st + len;
                                st
                            }
                            _ => rng.gen_range(0..unique),
                        };
                        // Visit `len` live records from `start` (deleted ones are skipped).
                        let mut live = 0u64;
                        let mut p = start;
                        while p < unique && live < len {
                            if current[sorted[p as usize] as usize] != NONE {
                                live += 1;
                            }
                            p += 1;
                        }
                        w.push(Op { kind, key: start as u32, value: NONE, aux: live as u32 })?;
                    }
                }
            }
        }
        let c = w.count;
        w.out.end(section::OPS, pi as u32, s, c);
    }

    // Update values, made after the ops that need them.
    let mut uindex = spill()?;
    let s = out.begin()?;
    for &(r, version) in &updates {
        source.update_value(r as u64, version as u64, &mut value);
        uindex.write_all(&out.pos.to_le_bytes())?;
        uindex.write_all(&r.to_le_bytes())?;
        uindex.write_all(&(value.len() as u32).to_le_bytes())?;
        out.write(&value)?;
    }
    out.end(section::UPDATE_DATA, 0, s, updates.len() as u64);
    let s = out.begin()?;
    copy_spill(&mut out, uindex)?;
    out.end(section::UPDATE_INDEX, 0, s, updates.len() as u64);

    let s = out.begin()?;
    out.write(&serde_json::to_vec_pretty(spec)?)?;
    out.end(section::SPEC, 0, s, 1);
    out.align()?;

    // Header and section table.
    if out.sections.len() as u64 > MAX_SECTIONS {
        bail!("plan has {} sections; at most {MAX_SECTIONS} (fewer phases)", out.sections.len());
    }
    let mut head = Vec::with_capacity(FIRST_SECTION as usize);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    head.extend_from_slice(&(out.sections.len() as u32).to_le_bytes());
    head.extend_from_slice(&spec.seed.to_le_bytes());
    head.extend_from_slice(&spec.hash().to_le_bytes());
    head.extend_from_slice(&n.to_le_bytes());
    head.extend_from_slice(&unique.to_le_bytes());
    head.extend_from_slice(&raw_unique.to_le_bytes());
    head.extend_from_slice(&(updates.len() as u64).to_le_bytes());
    for e in &out.sections {
        head.extend_from_slice(&e.kind.to_le_bytes());
        head.extend_from_slice(&e.index.to_le_bytes());
        head.extend_from_slice(&e.offset.to_le_bytes());
        head.extend_from_slice(&e.length.to_le_bytes());
        head.extend_from_slice(&e.count.to_le_bytes());
    }
    let mut f = out.w.into_inner().map_err(|e| e.into_error())?;
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&head)?;
    // No fsync: a plan is a cache, rebuilt from its spec when missing or invalid; forcing a
    // gigabyte to disk would cost more than generating it.
    drop(f);
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    Ok(())
}

struct OpWriter<'a> {
    out: &'a mut Out,
    count: u64,
}

impl OpWriter<'_> {
    fn push(&mut self, o: Op) -> anyhow::Result<()> {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&o.kind.to_le_bytes());
        b[4..8].copy_from_slice(&o.key.to_le_bytes());
        b[8..12].copy_from_slice(&o.value.to_le_bytes());
        b[12..16].copy_from_slice(&o.aux.to_le_bytes());
        self.count += 1;
        self.out.write(&b)
    }
}

/// Picks record numbers for one phase.
struct Picker {
    dist: Distribution,
    n: u64,
    next_seq: u64,
    hot: u32,
    zipf: Option<rand_distr::Zipf<f64>>,
    /// For deletes: a random permutation so no record is deleted twice.
    perm: Option<Vec<u32>>,
}

impl Picker {
    fn new(ph: &OpsSpec, n: u64, seed: u64, phase: u64) -> anyhow::Result<Picker> {
        let zipf = match ph.distribution {
            Distribution::Zipfian | Distribution::Latest => Some(
                rand_distr::Zipf::new(n, ph.zipf_exponent)
                    .map_err(|e| anyhow::anyhow!("zipf_exponent {}: {e}", ph.zipf_exponent))?,
            ),
            _ => None,
        };
        let perm = if ph.kind == PhaseKind::Delete && ph.distribution == Distribution::Uniform {
            let mut p: Vec<u32> = (0..n as u32).collect();
            let mut rng = record_rng(seed, 200 + phase, 0);
            for i in (1..p.len()).rev() {
                let j = rng.gen_range(0..=i);
                p.swap(i, j);
            }
            Some(p)
        } else {
            None
        };
        let hot = ph.hot_key.unwrap_or(n / 2).min(n - 1) as u32;
        Ok(Picker { dist: ph.distribution, n, next_seq: 0, hot, zipf, perm })
    }

    fn next(&mut self, rng: &mut impl Rng) -> u32 {
        if let Some(p) = &self.perm {
            let r = p[(self.next_seq % self.n) as usize];
            self.next_seq += 1;
            return r;
        }
        match self.dist {
            Distribution::Sequential => {
                let r = self.next_seq % self.n;
                self.next_seq += 1;
                r as u32
            }
            Distribution::Uniform => rng.gen_range(0..self.n) as u32,
            Distribution::Hot => self.hot,
            Distribution::Zipfian => {
                let rank = rng.sample(self.zipf.as_ref().unwrap()) as u64 - 1;
                (gen::fnv1a64(rank) % self.n) as u32
            }
            Distribution::Latest => {
                let rank = rng.sample(self.zipf.as_ref().unwrap()) as u64 - 1;
                (self.n - 1 - rank.min(self.n - 1)) as u32
            }
        }
    }
}

fn validate(spec: &PlanSpec) -> anyhow::Result<()> {
    let Some(first) = spec.phases.first() else { bail!("workload: no phases (the first must be `load`)") };
    if first.kind != PhaseKind::Load {
        bail!("workload: the first phase must be `load` (it is `{}`)", first.kind.as_str());
    }
    if !matches!(first.distribution, Distribution::Sequential | Distribution::Uniform) {
        bail!("workload: phase 1 (load): distribution must be `sequential` or `uniform` (a random permutation)");
    }
    for (i, p) in spec.phases.iter().enumerate().skip(1) {
        if p.kind == PhaseKind::Load {
            bail!("workload: phase {} is a second `load`; use `update` to overwrite records", i + 1);
        }
        if p.kind == PhaseKind::Mixed && p.mix.read + p.mix.update + p.mix.scan + p.mix.delete <= 0.0 {
            bail!("workload: phase {} (mixed) needs a `mix` with some read/update/scan/delete parts", i + 1);
        }
        if p.kind == PhaseKind::MultiGet && p.keys_per_request == 0 {
            bail!("workload: phase {} (multi-get) needs `keys` >= 1", i + 1);
        }
    }
    Ok(())
}

/// A memory-mapped plan. Accessors panic only on a plan that failed validation at open.
pub struct Plan {
    map: Mmap,
    sections: Vec<SectionEntry>,
    records: u64,
    unique: u64,
    raw_bytes: u64,
    seed: u64,
    hash: u64,
    updates: u64,
    index_off: usize,
    uindex_off: usize,
    sorted_off: usize,
}

#[inline]
fn prefetch(b: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if !b.is_empty() {
        // SAFETY: a prefetch is a hint; the pointer is inside a live slice.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(b.as_ptr() as *const i8) };
    }
}

fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn rd64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl Plan {
    pub fn open(path: &Path) -> anyhow::Result<Plan> {
        let f = File::open(path).with_context(|| format!("opening plan {}", path.display()))?;
        let map = unsafe { Mmap::map(&f)? };
        let bad = |why: &str| anyhow::anyhow!("plan {}: {why}; delete it and run again to rebuild", path.display());
        if map.len() < FIRST_SECTION as usize || &map[0..8] != MAGIC {
            return Err(bad("not a kvbench plan (bad magic)"));
        }
        let version = rd32(&map, 8);
        if version != FORMAT_VERSION {
            return Err(bad(&format!("format version {version}, this kvbench reads {FORMAT_VERSION}")));
        }
        let nsec = rd32(&map, 12) as usize;
        let mut sections = Vec::with_capacity(nsec);
        for i in 0..nsec {
            let at = (HEADER_SIZE + SECTION_ENTRY_SIZE * i as u64) as usize;
            let e = SectionEntry {
                kind: rd32(&map, at),
                index: rd32(&map, at + 4),
                offset: rd64(&map, at + 8),
                length: rd64(&map, at + 16),
                count: rd64(&map, at + 24),
            };
            if e.offset + e.length > map.len() as u64 {
                return Err(bad("a section runs past the end of the file (truncated?)"));
            }
            sections.push(e);
        }
        let find = |k: u32| sections.iter().find(|e| e.kind == k).map(|e| e.offset as usize);
        let index_off = find(section::INDEX).ok_or_else(|| bad("no INDEX section"))?;
        let uindex_off = find(section::UPDATE_INDEX).ok_or_else(|| bad("no UPDATE_INDEX section"))?;
        let sorted_off = find(section::SORTED).ok_or_else(|| bad("no SORTED section"))?;
        Ok(Plan {
            records: rd64(&map, 32),
            unique: rd64(&map, 40),
            raw_bytes: rd64(&map, 48),
            updates: rd64(&map, 56),
            seed: rd64(&map, 16),
            hash: rd64(&map, 24),
            map,
            sections,
            index_off,
            uindex_off,
            sorted_off,
        })
    }

    pub fn records(&self) -> u64 {
        self.records
    }
    /// Distinct keys after loading.
    pub fn unique_records(&self) -> u64 {
        self.unique
    }
    /// Bytes of keys plus values of the distinct loaded records (the raw data size).
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn spec_hash(&self) -> u64 {
        self.hash
    }
    pub fn update_values(&self) -> u64 {
        self.updates
    }

    pub fn key(&self, r: u32) -> &[u8] {
        let e = self.index_off + r as usize * 16;
        let off = rd64(&self.map, e) as usize;
        let len = rd32(&self.map, e + 8) as usize;
        &self.map[off..off + len]
    }

    /// Value index `j`: below `records()` the load value of record j, above an update value.
    pub fn value(&self, j: u32) -> &[u8] {
        if (j as u64) < self.records {
            let e = self.index_off + j as usize * 16;
            let off = rd64(&self.map, e) as usize;
            let klen = rd32(&self.map, e + 8) as usize;
            let vlen = rd32(&self.map, e + 12) as usize;
            &self.map[off + klen..off + klen + vlen]
        } else {
            let e = self.uindex_off + (j as u64 - self.records) as usize * 16;
            let off = rd64(&self.map, e) as usize;
            let len = rd32(&self.map, e + 12) as usize;
            &self.map[off..off + len]
        }
    }

    /// Hint the CPU to fetch record `r`'s index entry. The runner calls it a few operations
    /// ahead so that reading keys and expected values from the plan does not stall the loop
    /// with cache misses the engine never caused (see docs/methodology.md).
    #[inline]
    pub fn prefetch_index(&self, r: u32) {
        prefetch(&self.map[self.index_off + r as usize * 16..]);
    }

    /// Hint the CPU to fetch the key of record `r` and the value `j` (its index entry should
    /// have been prefetched earlier).
    #[inline]
    pub fn prefetch_record(&self, r: u32, j: u32) {
        prefetch(self.key(r));
        if j != NONE {
            prefetch(self.value(j));
        }
    }

    /// Record number of the key at sorted position `p`.
    pub fn sorted(&self, p: u64) -> u32 {
        rd32(&self.map, self.sorted_off + p as usize * 4)
    }

    fn section(&self, kind: u32, index: u32) -> Option<&SectionEntry> {
        self.sections.iter().find(|e| e.kind == kind && e.index == index)
    }

    pub fn phase_count(&self) -> usize {
        self.sections.iter().filter(|e| e.kind == section::OPS).count()
    }

    pub fn ops(&self, phase: usize) -> Option<Ops<'_>> {
        let e = self.section(section::OPS, phase as u32)?;
        Some(Ops { bytes: &self.map[e.offset as usize..(e.offset + e.length) as usize] })
    }

    /// Value index expected at each sorted position when scan phase `phase` starts.
    pub fn scan_expect(&self, phase: usize, p: u64) -> Option<u32> {
        let e = self.section(section::SCAN_EXPECT, phase as u32)?;
        Some(rd32(&self.map, e.offset as usize + p as usize * 4))
    }

    pub fn spec_json(&self) -> Option<&[u8]> {
        let e = self.section(section::SPEC, 0)?;
        Some(&self.map[e.offset as usize..(e.offset + e.length) as usize])
    }
}

#[derive(Clone, Copy)]
pub struct Ops<'a> {
    bytes: &'a [u8],
}

impl<'a> Ops<'a> {
    pub fn len(&self) -> usize {
        self.bytes.len() / 16
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    #[inline]
    pub fn get(&self, i: usize) -> Op {
        let b = &self.bytes[i * 16..i * 16 + 16];
        Op { kind: rd32(b, 0), key: rd32(b, 4), value: rd32(b, 8), aux: rd32(b, 12) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Mix, ValueSpec};

    pub fn ops(kind: PhaseKind, count: Option<u64>, dist: Distribution) -> OpsSpec {
        OpsSpec {
            kind,
            count,
            distribution: dist,
            keys_per_request: 4,
            scan_length: 0,
            mix: Mix::default(),
            hot_key: None,
            zipf_exponent: 0.99,
        }
    }

    fn spec(records: u64) -> PlanSpec {
        PlanSpec {
            seed: 42,
            dataset: DatasetSpec {
                records,
                value: ValueSpec { size: None, min: Some(1), max: Some(20), content: Default::default() },
                ..Default::default()
            },
            phases: vec![
                ops(PhaseKind::Load, None, Distribution::Uniform),
                ops(PhaseKind::Update, Some(50), Distribution::Uniform),
                ops(PhaseKind::Delete, Some(10), Distribution::Uniform),
                ops(PhaseKind::Get, Some(500), Distribution::Uniform),
                ops(PhaseKind::Scan, None, Distribution::Sequential),
            ],
        }
    }

    #[test]
    fn reads_expect_the_latest_write_and_absence_after_delete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.kvbplan");
        build(&spec(100), &path).unwrap();
        let plan = Plan::open(&path).unwrap();
        // Replay all writes into a model and check every read's expectation against it.
        let mut model = std::collections::BTreeMap::new();
        for phase in 0..plan.phase_count() {
            let ops = plan.ops(phase).unwrap();
            for i in 0..ops.len() {
                let o = ops.get(i);
                let k = plan.key(o.key).to_vec();
                match o.kind {
                    op::PUT => {
                        model.insert(k, plan.value(o.value).to_vec());
                    }
                    op::DELETE => {
                        model.remove(&k);
                    }
                    op::GET => {
                        let want = (o.value != NONE).then(|| plan.value(o.value).to_vec());
                        assert_eq!(model.get(&k).cloned(), want, "phase {phase} op {i}");
                    }
                    op::SCAN => {
                        assert_eq!(o.aux as usize, model.len(), "full scan visits every live record");
                    }
                    _ => panic!("unknown op"),
                }
            }
        }
        assert_eq!(model.len(), 90);
        assert_eq!(plan.unique_records(), 100);
    }

    #[test]
    fn same_spec_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        build(&spec(300), &a).unwrap();
        build(&spec(300), &b).unwrap();
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }

    #[test]
    fn ensure_reuses_a_cached_plan() {
        let dir = tempfile::tempdir().unwrap();
        let (p1, built1) = ensure(&spec(10), dir.path()).unwrap();
        let (p2, built2) = ensure(&spec(10), dir.path()).unwrap();
        assert_eq!(p1, p2);
        assert!(built1 && !built2);
    }

    #[test]
    fn a_load_must_come_first() {
        let mut s = spec(10);
        s.phases.remove(0);
        let dir = tempfile::tempdir().unwrap();
        let err = build(&s, &dir.path().join("x")).unwrap_err().to_string();
        assert!(err.contains("first phase must be `load`"), "{err}");
    }
}
