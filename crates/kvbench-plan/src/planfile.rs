//! The format-2 plan file (docs/plan-format.md, "The plan file"): what cannot be derived —
//! the records of a stored dataset, the winner of each duplicate key, and the key order of a
//! dataset whose keys are not in record order. Reading, validating, building and caching.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context};
use memmap2::{Mmap, MmapMut};
use xxhash_rust::xxh3::Xxh3;

use crate::gen::RecordSource;
use crate::primitives::{rnd, Perm};

pub const MAGIC: &[u8; 8] = b"KVBPLAN\0";
pub const VERSION: u32 = 2;
pub const HEADER: usize = 64;
pub const ENTRY: usize = 32;
pub const MAX_SECTIONS: u32 = 126;

pub const DATA: u32 = 1;
pub const INDEX: u32 = 2;
pub const SORTED: u32 = 3;
pub const CANON: u32 = 4;
/// A replay's operations, in recorded order ([`crate::replay`]).
pub const OPS: u32 = 5;
/// u32 per record: the sorted position of its key (SORTED inverted), where a scan of it starts.
pub const RANK: u32 = 6;
pub const SPEC: u32 = 8;

/// The header's numbers (bytes 16..56).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Header {
    pub seed: u64,
    pub spec_hash: u64,
    pub records: u64,
    pub distinct: u64,
    pub raw_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub kind: u32,
    pub index: u32,
    pub offset: u64,
    pub length: u64,
    pub count: u64,
}

/// Bytes per element of the sections whose length their count implies.
fn element_size(kind: u32) -> Option<u64> {
    match kind {
        INDEX => Some(16),
        SORTED | CANON | RANK => Some(4),
        OPS => Some(crate::replay::OP_BYTES as u64),
        _ => None,
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// xxh3-64 of header bytes 0..56, the section table, then every section's bytes in table order.
fn checksum(bytes: &[u8], table_end: usize, sections: &[Section]) -> u64 {
    let mut h = Xxh3::new();
    h.update(&bytes[..56]);
    h.update(&bytes[HEADER..table_end]);
    for s in sections {
        h.update(&bytes[s.offset as usize..(s.offset + s.length) as usize]);
    }
    h.digest()
}

/// A validated, memory-mapped plan file.
pub struct PlanFile {
    path: PathBuf,
    map: Mmap,
    header: Header,
    sections: Vec<Section>,
    longest: usize,
    /// Offsets of INDEX, SORTED, CANON and RANK (looked up once: readers use them per op).
    index_at: Option<usize>,
    sorted_at: Option<usize>,
    canon_at: Option<usize>,
    rank_at: Option<usize>,
}

impl std::fmt::Debug for PlanFile {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("PlanFile").field("path", &self.path).field("header", &self.header).finish()
    }
}

impl PlanFile {
    /// Opens and validates a plan file; every error names the path.
    pub fn open(path: &Path) -> anyhow::Result<PlanFile> {
        let file = File::open(path).with_context(|| format!("plan {}: cannot open", path.display()))?;
        // SAFETY: plan files are written once under a temporary name and renamed into place;
        // kvbench never modifies one that a worker may have mapped.
        let map = unsafe { Mmap::map(&file) }.with_context(|| format!("plan {}: cannot map", path.display()))?;
        Self::parse(path, map).with_context(|| format!("plan {}", path.display()))
    }

    fn parse(path: &Path, map: Mmap) -> anyhow::Result<PlanFile> {
        let b = &map[..];
        ensure!(b.len() >= HEADER, "file of {} bytes is shorter than the 64-byte header", b.len());
        ensure!(&b[..8] == MAGIC, "bad magic (not a kvbench plan)");
        ensure!(u32_at(b, 8) == VERSION, "format version {} (this kvbench reads {VERSION})", u32_at(b, 8));
        let count = u32_at(b, 12);
        ensure!(count <= MAX_SECTIONS, "section count {count} (at most {MAX_SECTIONS})");
        let table_end = HEADER + count as usize * ENTRY;
        ensure!(b.len() >= table_end, "section table ends at {table_end}, past the end of the file");
        let sections: Vec<Section> = (0..count as usize).map(|i| section_at(b, HEADER + i * ENTRY)).collect();
        for s in &sections {
            check_section(s, b.len() as u64, table_end as u64)?;
        }
        ensure!(checksum(b, table_end, &sections) == u64_at(b, 56), "checksum mismatch (file corrupt)");
        let header = Header {
            seed: u64_at(b, 16),
            spec_hash: u64_at(b, 24),
            records: u64_at(b, 32),
            distinct: u64_at(b, 40),
            raw_bytes: u64_at(b, 48),
        };
        let at = |k: u32| sections.iter().find(|s| s.kind == k).map(|s| s.offset as usize);
        let (index_at, sorted_at, canon_at, rank_at) = (at(INDEX), at(SORTED), at(CANON), at(RANK));
        let path = path.to_path_buf();
        let mut plan = PlanFile { path, map, header, sections, longest: 0, index_at, sorted_at, canon_at, rank_at };
        plan.check_contents()?;
        Ok(plan)
    }

    /// Counts that must agree with the header, and INDEX entries that must lie inside DATA.
    fn check_contents(&mut self) -> anyhow::Result<()> {
        let records = self.header.records;
        for kind in [INDEX, CANON, RANK] {
            if let Some(s) = self.section(kind) {
                ensure!(s.count == records, "section {kind} holds {} entries for {records} records", s.count);
            }
        }
        if let Some(s) = self.section(SORTED) {
            ensure!(
                s.count == self.header.distinct,
                "SORTED holds {} of {} distinct keys",
                s.count,
                self.header.distinct
            );
        }
        if let (Some(d), Some(_)) = (self.section(DATA), self.section(INDEX)) {
            for r in 0..records {
                let (off, klen, vlen) = self.entry(r);
                let end = off.checked_add(klen + vlen);
                ensure!(
                    off >= d.offset && end.is_some_and(|e| e <= d.offset + d.length),
                    "INDEX entry {r} points outside DATA"
                );
                self.longest = self.longest.max(vlen as usize);
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> Header {
        self.header
    }

    pub fn section(&self, kind: u32) -> Option<Section> {
        self.sections.iter().find(|s| s.kind == kind).copied()
    }

    /// The bytes of a section (checked to lie inside the file when it was opened).
    pub fn section_bytes(&self, kind: u32) -> Option<&[u8]> {
        let s = self.section(kind)?;
        Some(&self.map[s.offset as usize..(s.offset + s.length) as usize])
    }

    /// An error naming the file when it lacks one of `kinds` (what a reader is about to use).
    pub fn require(&self, kinds: &[u32]) -> anyhow::Result<()> {
        for &k in kinds {
            ensure!(self.section(k).is_some(), "plan {}: has no section of kind {k}", self.path.display());
        }
        Ok(())
    }

    fn entry(&self, record: u64) -> (u64, u64, u64) {
        let at = self.index_at.expect("INDEX (Keys and Values check for it)") + record as usize * 16;
        let b = &self.map[at..at + 16];
        (u64_at(b, 0), u32_at(b, 8) as u64, u32_at(b, 12) as u64)
    }

    /// Key of `record` (stored datasets).
    pub fn key(&self, record: u64) -> &[u8] {
        let (off, klen, _) = self.entry(record);
        &self.map[off as usize..(off + klen) as usize]
    }

    /// The load value of `record` (stored datasets).
    pub fn value(&self, record: u64) -> &[u8] {
        let (off, klen, vlen) = self.entry(record);
        &self.map[(off + klen) as usize..(off + klen + vlen) as usize]
    }

    /// Length of the longest stored value (0 without DATA).
    pub fn longest_value(&self) -> usize {
        self.longest
    }

    fn u32_entry(&self, at: usize, index: u64) -> u64 {
        u32_at(&self.map, at + index as usize * 4) as u64
    }

    /// The record at sorted position `position` (requires SORTED).
    pub fn sorted(&self, position: u64) -> u64 {
        self.u32_entry(self.sorted_at.expect("SORTED (kvbench writes it for scans)"), position)
    }

    /// The sorted position of `record`'s key, where the plan holds RANK.
    pub fn rank(&self, record: u64) -> Option<u64> {
        self.rank_at.map(|at| self.u32_entry(at, record))
    }

    /// The canonical record of `record` (itself without CANON).
    pub fn canon(&self, record: u64) -> u64 {
        self.canon_at.map_or(record, |at| self.u32_entry(at, record))
    }

    pub fn spec_json(&self) -> Option<&[u8]> {
        self.section(SPEC).map(|s| &self.map[s.offset as usize..(s.offset + s.length) as usize])
    }
}

fn section_at(bytes: &[u8], at: usize) -> Section {
    Section {
        kind: u32_at(bytes, at),
        index: u32_at(bytes, at + 4),
        offset: u64_at(bytes, at + 8),
        length: u64_at(bytes, at + 16),
        count: u64_at(bytes, at + 24),
    }
}

fn check_section(section: &Section, file_len: u64, table_end: u64) -> anyhow::Result<()> {
    let end = section.offset.checked_add(section.length);
    ensure!(
        section.offset >= table_end && section.offset.is_multiple_of(8) && end.is_some_and(|e| e <= file_len),
        "section kind {} at {}..+{} lies outside the file ({file_len} bytes) or is misaligned",
        section.kind,
        section.offset,
        section.length
    );
    if let Some(size) = element_size(section.kind) {
        ensure!(
            section.count.checked_mul(size) == Some(section.length),
            "section kind {} has {} bytes for {} entries",
            section.kind,
            section.length,
            section.count
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Writing

/// Order in which the load writes records (it decides which duplicate wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadOrder {
    Sequential,
    /// `perm(loaded, rnd(perm_seed, 0), k)`.
    Shuffle {
        perm_seed: u64,
    },
}

impl LoadOrder {
    /// Load position of each record (the inverse of the load order), 4 bytes a record.
    fn positions(self, count: u64) -> Vec<u32> {
        match self {
            LoadOrder::Sequential => (0..count as u32).collect(),
            LoadOrder::Shuffle { perm_seed } => {
                let perm = Perm::new(count, rnd(perm_seed, 0));
                let mut pos = vec![0u32; count as usize];
                for k in 0..count {
                    pos[perm.at(k) as usize] = k as u32;
                }
                pos
            }
        }
    }
}

/// Sections are written after the header and table, each aligned to 8.
struct Writer {
    file: BufWriter<File>,
    at: u64,
    sections: Vec<Section>,
}

impl Writer {
    fn create(path: &Path, sections: u32) -> anyhow::Result<Writer> {
        // Read access too: the builder maps what it wrote to sort keys and to checksum.
        let file = File::options().read(true).write(true).create(true).truncate(true).open(path);
        let file = file.with_context(|| format!("plan {}: cannot create", path.display()))?;
        let at = (HEADER + sections as usize * ENTRY) as u64;
        let mut file = BufWriter::with_capacity(1 << 20, file);
        file.write_all(&vec![0u8; at as usize])?;
        Ok(Writer { file, at, sections: Vec::new() })
    }

    fn begin(&mut self) -> anyhow::Result<u64> {
        let pad = self.at.next_multiple_of(8) - self.at;
        self.file.write_all(&[0u8; 8][..pad as usize])?;
        self.at += pad;
        Ok(self.at)
    }

    fn write(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.file.write_all(bytes)?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    fn end(&mut self, kind: u32, start: u64, count: u64) {
        self.sections.push(Section { kind, index: 0, offset: start, length: self.at - start, count });
    }

    fn u32s(&mut self, kind: u32, values: impl Iterator<Item = u32>) -> anyhow::Result<()> {
        let start = self.begin()?;
        let mut count = 0;
        for v in values {
            self.write(&v.to_le_bytes())?;
            count += 1;
        }
        self.end(kind, start, count);
        Ok(())
    }

    /// RANK after the sections written so far: SORTED inverted (a key's duplicates take their
    /// canonical record's position, from CANON where there is one). Written as zeros, then
    /// filled in place through a map of the file, so that a derived dataset's stays in bounded
    /// memory whatever its record count.
    fn rank(&mut self, records: u64) -> anyhow::Result<()> {
        let sorted = self.sections.iter().find(|s| s.kind == SORTED).copied().context("RANK needs SORTED")?;
        let canon = self.sections.iter().find(|s| s.kind == CANON).copied();
        let start = self.begin()?;
        let zeros = vec![0u8; 1 << 20];
        for at in (0..records * 4).step_by(zeros.len()) {
            self.write(&zeros[..(records * 4 - at).min(zeros.len() as u64) as usize])?;
        }
        self.end(RANK, start, records);
        self.file.flush()?;
        // SAFETY: the file is ours, under a temporary name no other process opens.
        let mut map = unsafe { MmapMut::map_mut(self.file.get_ref()) }.context("plan: cannot map to write RANK")?;
        let (head, rank) = map.split_at_mut(start as usize);
        let entry = |at: u64, i: u64| u32_at(head, (at + i * 4) as usize) as usize;
        let set = |rank: &mut [u8], r: usize, p: u32| rank[r * 4..][..4].copy_from_slice(&p.to_le_bytes());
        for p in 0..sorted.count {
            set(rank, entry(sorted.offset, p), p as u32);
        }
        if let Some(c) = canon {
            for r in 0..records as usize {
                let winner = entry(c.offset, r as u64);
                if winner != r {
                    let p = u32_at(rank, winner * 4);
                    set(rank, r, p);
                }
            }
        }
        Ok(())
    }

    /// Writes the table and the header (checksum last) and renames the file into place.
    fn finish(self, tmp: &Path, path: &Path, header: Header) -> anyhow::Result<()> {
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        let mut head = Vec::with_capacity(HEADER + self.sections.len() * ENTRY);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&(self.sections.len() as u32).to_le_bytes());
        for v in [header.seed, header.spec_hash, header.records, header.distinct, header.raw_bytes, 0] {
            head.extend_from_slice(&v.to_le_bytes());
        }
        for s in &self.sections {
            head.extend_from_slice(&s.kind.to_le_bytes());
            head.extend_from_slice(&s.index.to_le_bytes());
            for v in [s.offset, s.length, s.count] {
                head.extend_from_slice(&v.to_le_bytes());
            }
        }
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&head)?;
        let map = unsafe_map(&file, tmp)?;
        let sum = checksum(&map, head.len(), &self.sections);
        file.seek(SeekFrom::Start(56))?;
        file.write_all(&sum.to_le_bytes())?;
        drop(map);
        std::fs::rename(tmp, path).with_context(|| format!("plan {}: cannot rename into place", path.display()))
    }
}

fn unsafe_map(file: &File, path: &Path) -> anyhow::Result<Mmap> {
    // SAFETY: the file is ours, under a temporary name no other process opens.
    unsafe { Mmap::map(file) }.with_context(|| format!("plan {}: cannot map", path.display()))
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".tmp{}", std::process::id()));
    PathBuf::from(s)
}

/// What the header records beside the sections.
#[derive(Debug, Clone, Copy)]
pub struct PlanId<'a> {
    pub seed: u64,
    pub spec_hash: u64,
    pub spec_json: &'a [u8],
}

/// Builds the plan file of a stored dataset: DATA and INDEX in record order, CANON (the
/// duplicate loaded last wins), SORTED (the winners in key byte order), SPEC.
/// Memory while it builds: 28 bytes a record (index entries, load positions, sort order, canon).
pub fn build_stored(path: &Path, id: PlanId, source: &mut dyn RecordSource, order: LoadOrder) -> anyhow::Result<()> {
    write_checked(path, id, source, order, None)
}

/// A section written after a stored dataset's own ones: its kind, its count of entries, and
/// what writes its bytes.
pub struct Extra<'a> {
    pub kind: u32,
    pub count: u64,
    pub write: &'a mut dyn FnMut(&mut dyn Write) -> anyhow::Result<()>,
}

/// As [`build_stored`], plus the sections `extra` writes (a replay's OPS).
pub fn build_stored_with(
    path: &Path,
    id: PlanId,
    source: &mut dyn RecordSource,
    order: LoadOrder,
    extra: Extra<'_>,
) -> anyhow::Result<()> {
    write_checked(path, id, source, order, Some(extra))
}

fn write_checked(
    path: &Path,
    id: PlanId,
    source: &mut dyn RecordSource,
    order: LoadOrder,
    extra: Option<Extra<'_>>,
) -> anyhow::Result<()> {
    let n = source.len();
    ensure!(n <= u32::MAX as u64, "a stored dataset holds at most 4294967295 records, this one {n}");
    let tmp = tmp_path(path);
    let result = write_stored(&tmp, path, id, source, order, extra);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_stored(
    tmp: &Path,
    path: &Path,
    id: PlanId,
    source: &mut dyn RecordSource,
    order: LoadOrder,
    extra: Option<Extra<'_>>,
) -> anyhow::Result<()> {
    let n = source.len();
    let mut w = Writer::create(tmp, 6 + u32::from(extra.is_some()))?;
    let index = write_data(&mut w, source)?;
    let start = w.begin()?;
    for (off, klen, vlen) in &index {
        w.write(&off.to_le_bytes())?;
        w.write(&klen.to_le_bytes())?;
        w.write(&vlen.to_le_bytes())?;
    }
    w.end(INDEX, start, n);
    w.file.flush()?;
    let data = unsafe_map(w.file.get_ref(), tmp)?;
    let key = |r: u32| {
        let (off, klen, _) = index[r as usize];
        &data[off as usize..off as usize + klen as usize]
    };
    let (canon, sorted) = resolve(n, key, order);
    let raw = sorted.iter().map(|&r| index[r as usize].1 as u64 + index[r as usize].2 as u64).sum();
    drop(index);
    w.u32s(SORTED, sorted.iter().copied())?;
    w.u32s(CANON, canon.into_iter())?;
    w.rank(n)?;
    if let Some(extra) = extra {
        write_extra(&mut w, extra)?;
    }
    write_spec(&mut w, id.spec_json)?;
    let header =
        Header { seed: id.seed, spec_hash: id.spec_hash, records: n, distinct: sorted.len() as u64, raw_bytes: raw };
    drop(data);
    w.finish(tmp, path, header)
}

/// DATA: every record's key and value; returns the INDEX entries.
fn write_data(writer: &mut Writer, source: &mut dyn RecordSource) -> anyhow::Result<Vec<(u64, u32, u32)>> {
    let start = writer.begin()?;
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut index = Vec::with_capacity(source.len() as usize);
    for r in 0..source.len() {
        source.record(r, &mut key, &mut value).with_context(|| format!("record {r}"))?;
        ensure!(key.len() <= u32::MAX as usize && value.len() <= u32::MAX as usize, "record {r} is larger than 4 GiB");
        index.push((writer.at, key.len() as u32, value.len() as u32));
        writer.write(&key)?;
        writer.write(&value)?;
    }
    writer.end(DATA, start, source.len());
    Ok(index)
}

fn write_extra(writer: &mut Writer, extra: Extra<'_>) -> anyhow::Result<()> {
    let start = writer.begin()?;
    (extra.write)(&mut Counted { w: &mut *writer })?;
    writer.end(extra.kind, start, extra.count);
    Ok(())
}

/// The writer as a `Write` that keeps the section's length.
struct Counted<'w> {
    w: &'w mut Writer,
}

impl Write for Counted<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.w.file.write_all(bytes)?;
        self.w.at += bytes.len() as u64;
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.file.flush()
    }
}

fn write_spec(writer: &mut Writer, json: &[u8]) -> anyhow::Result<()> {
    let start = writer.begin()?;
    writer.write(json)?;
    writer.end(SPEC, start, 1);
    Ok(())
}

/// CANON and SORTED from the keys: records sorted by (key, load position); the last of each
/// run of equal keys is the one loaded last, the canonical record of the whole run.
fn resolve<'a>(count: u64, key: impl Fn(u32) -> &'a [u8], order: LoadOrder) -> (Vec<u32>, Vec<u32>) {
    let pos = order.positions(count);
    let mut by_key: Vec<u32> = (0..count as u32).collect();
    by_key.sort_unstable_by(|&a, &b| key(a).cmp(key(b)).then(pos[a as usize].cmp(&pos[b as usize])));
    drop(pos);
    let mut canon = vec![0u32; count as usize];
    let mut sorted = Vec::new();
    for run in by_key.chunk_by(|&a, &b| key(a) == key(b)) {
        let winner = *run.last().expect("runs are not empty");
        run.iter().for_each(|&r| canon[r as usize] = winner);
        sorted.push(winner);
    }
    (canon, sorted)
}

/// The plan file `<cache_dir>/<spec_hash as 16 hex digits>.kvbplan`: reused when it is valid
/// and has this spec hash, otherwise (re)built with `build`. Returns the open plan and, when an
/// existing file was rebuilt, a note saying why.
pub fn ensure(
    cache_dir: &Path,
    spec_hash: u64,
    build: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> anyhow::Result<(PlanFile, Option<String>)> {
    std::fs::create_dir_all(cache_dir).with_context(|| format!("plan cache {}: cannot create", cache_dir.display()))?;
    let path = cache_dir.join(format!("{spec_hash:016x}.kvbplan"));
    let note = match path.exists().then(|| PlanFile::open(&path)) {
        Some(Ok(p)) if p.header.spec_hash == spec_hash && (p.sorted_at.is_none() || p.rank_at.is_some()) => {
            return Ok((p, None))
        }
        Some(Ok(p)) if p.header.spec_hash == spec_hash => {
            Some(format!("plan {} has no RANK (made by an older kvbench); rebuilt", path.display()))
        }
        Some(Ok(_)) => Some(format!("plan {} has another spec hash; rebuilt", path.display())),
        Some(Err(e)) => Some(format!("{e:#}; rebuilt")),
        None => None,
    };
    build(&path)?;
    let plan = PlanFile::open(&path)?;
    if plan.header.spec_hash != spec_hash {
        bail!(
            "plan {}: built with spec hash {:016x}, expected {spec_hash:016x}",
            path.display(),
            plan.header.spec_hash
        );
    }
    Ok((plan, note))
}

mod sorted;
pub use sorted::build_sorted;

#[cfg(test)]
mod tests;
