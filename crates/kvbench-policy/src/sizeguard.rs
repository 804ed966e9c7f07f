//! The size guard: before anything large is written, estimate the plan file and the raw data a
//! run writes and refuse, with the sizes, the file system and its free space, when they would
//! not fit.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::job::{Dataset, Generator, OpsStep, PhaseKind};
use crate::planfile::{ENTRY, HEADER};
use crate::spec::KeyKind;

/// A store takes more room than the raw keys and values: B-tree pages are partly filled, LSM
/// trees keep overwritten versions and compaction outputs until old files go, logs and journals
/// hold a copy. Three times the raw size covers the engines kvbench runs with their defaults.
pub const STORE_HEADROOM: u64 = 3;

/// The flag that skips the check.
pub const OVERRIDE_FLAG: &str = "--no-size-check";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sizes {
    /// The plan file (0: no plan file).
    pub plan_bytes: u64,
    /// Keys and values of every record the run writes (`total` records, one version each).
    pub raw_bytes: u64,
}

impl Sizes {
    /// What the data directory should have free.
    pub fn store_bytes(&self) -> u64 {
        self.raw_bytes.saturating_mul(STORE_HEADROOM)
    }
}

/// Mean key length over records `0 .. total`.
fn key_bytes(ds: &Dataset) -> u64 {
    let total = ds.total;
    match ds.key.kind {
        KeyKind::U32be => 4 * total,
        KeyKind::U64be => 8 * total,
        KeyKind::Decimal => decimal_bytes(total, ds.key.width as u64),
        // `user` + the decimal of a 63-bit hash: 19 digits for 9 hashes in 10.
        KeyKind::Ycsb => 23 * total,
        KeyKind::Random | KeyKind::DbBench => ds.key.width as u64 * total,
    }
}

/// Digits of 0 .. total, each padded to `width`.
fn decimal_bytes(total: u64, width: u64) -> u64 {
    let mut bytes = 0u64;
    let (mut lo, mut digits) = (0u64, 1u64);
    while lo < total {
        let hi = lo.saturating_mul(10).max(10).min(total);
        bytes = bytes.saturating_add((hi - lo) * digits.max(width));
        (lo, digits) = (hi, digits + 1);
    }
    bytes
}

/// Mean value length times the records (json-docs add their fixed text and the date).
fn value_bytes(ds: &Dataset) -> u64 {
    let mean = ds.value.encoded_len((ds.value.min as u64 + ds.value.max as u64) / 2);
    let extra = if ds.generator == Generator::JsonDocs { 38 } else { 0 };
    (mean + extra).saturating_mul(ds.total)
}

/// Whether a step scans (which needs SORTED when keys are not in record order).
fn scans(step: &OpsStep) -> bool {
    step.kind == PhaseKind::Scan || step.kinds.contains(&PhaseKind::Scan)
}

/// The sizes of a run over `ds` with `steps`. `stored_raw` is the raw size of a stored dataset
/// (its source's keys and values), `spec_bytes` the plan's SPEC section.
pub fn estimate(ds: &Dataset, steps: &[OpsStep], stored_raw: Option<u64>, spec_bytes: u64) -> Sizes {
    let fixed = (HEADER + 6 * ENTRY) as u64 + 6 * 8 + spec_bytes;
    if ds.generator == Generator::Stored {
        let raw = stored_raw.unwrap_or_else(|| key_bytes(ds) + value_bytes(ds));
        // DATA, INDEX (16), SORTED (4, at most), CANON (4), RANK (4) per record.
        return Sizes { plan_bytes: fixed + raw + 28 * ds.total, raw_bytes: raw };
    }
    let raw = key_bytes(ds).saturating_add(value_bytes(ds));
    // SORTED and RANK (4 each) per record.
    let plan = if !ds.ordered && steps.iter().any(scans) { fixed + 8 * ds.total } else { 0 };
    Sizes { plan_bytes: plan, raw_bytes: raw }
}

/// Free bytes for an unprivileged writer on the file system holding `path` (or its nearest
/// existing ancestor), and that file system's device id.
fn free_space(path: &Path) -> anyhow::Result<(u64, u64, PathBuf)> {
    let existing = path.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/")).to_path_buf();
    let (free, _) = disk_space(&existing).with_context(|| format!("statvfs {}", existing.display()))?;
    let dev = std::fs::metadata(&existing).with_context(|| format!("stat {}", existing.display()))?.dev();
    Ok((free, dev, existing))
}

/// (free bytes for an unprivileged writer, total bytes) of the file system holding `path`.
pub fn disk_space(path: &Path) -> std::io::Result<(u64, u64)> {
    let c = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: statvfs is plain integers, for which all-zero bytes are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` a statvfs we own.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frag = st.f_frsize as u64;
    Ok((st.f_bavail as u64 * frag, st.f_blocks as u64 * frag))
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut u) = (bytes as f64, 0);
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// Refuses a run whose plan file (in `plan_dir`) and store (in `data_dir`, raw data times
/// STORE_HEADROOM) would not fit in the free space of their file systems; the two add up when
/// they share one. `plan_bytes` should be 0 when a valid cached plan file already exists.
pub fn check(sizes: Sizes, plan_dir: &Path, data_dir: &Path) -> anyhow::Result<()> {
    let (plan_free, plan_dev, plan_fs) = free_space(plan_dir)?;
    let (data_free, data_dev, data_fs) = free_space(data_dir)?;
    let store = sizes.store_bytes();
    if plan_dev == data_dev {
        let need = sizes.plan_bytes.saturating_add(store);
        if need > data_free {
            bail!("{}", refusal(sizes, &data_fs, data_free, "plan file and store"));
        }
        return Ok(());
    }
    if sizes.plan_bytes > plan_free {
        bail!("{}", refusal(sizes, &plan_fs, plan_free, "plan file"));
    }
    if store > data_free {
        bail!("{}", refusal(sizes, &data_fs, data_free, "store"));
    }
    Ok(())
}

fn refusal(sizes: Sizes, fs: &Path, free: u64, what: &str) -> String {
    format!(
        "not enough space for the {what}: plan file {}, raw data {} (the store needs about {}x: {}), \
         but the file system of {} has {} free. Free space, point the run elsewhere, or pass {OVERRIDE_FLAG}.",
        human(sizes.plan_bytes),
        human(sizes.raw_bytes),
        STORE_HEADROOM,
        human(sizes.store_bytes()),
        fs.display(),
        human(free),
    )
}

#[cfg(test)]
mod tests;
