//! The dataset as the Rust worker reads it: derived keys and values, and where something is
//! stored (brought data, duplicate keys, key order of hashed keys) the plan file.

use std::path::Path;
use std::sync::Arc;

use kvbench_model::job::Dataset;
use kvbench_plan::derive::{Expected, Keys, Values};
use kvbench_plan::planfile::{PlanFile, CANON, SORTED};

pub struct Data {
    ds: Dataset,
    keys: Keys,
    values: Values,
    plan: Option<Arc<PlanFile>>,
    positions: u64,
    has_canon: bool,
    has_sorted: bool,
}

impl Data {
    pub fn open(ds: &Dataset, plan: Option<&Path>) -> Result<Data, String> {
        let plan = match plan {
            Some(p) => Some(Arc::new(PlanFile::open(p).map_err(|e| format!("{e:#}"))?)),
            None => None,
        };
        let keys = Keys::new(ds, plan.clone()).map_err(|e| format!("{e:#}"))?;
        let values = Values::new(ds, plan.clone()).map_err(|e| format!("{e:#}"))?;
        let has_canon = plan.as_ref().is_some_and(|p| p.section(CANON).is_some());
        let has_sorted = plan.as_ref().is_some_and(|p| p.section(SORTED).is_some());
        let positions = match &plan {
            Some(p) if has_sorted => p.section(SORTED).map(|s| s.count).unwrap_or(0),
            _ => ds.total,
        };
        Ok(Data { ds: ds.clone(), keys, values, plan, positions, has_canon, has_sorted })
    }

    pub fn dataset(&self) -> &Dataset {
        &self.ds
    }

    /// The plan file, where the dataset has one (a replay's ops are in it).
    pub fn plan(&self) -> Option<&Arc<PlanFile>> {
        self.plan.as_ref()
    }

    #[inline]
    pub fn key(&self, record: u64, out: &mut Vec<u8>) {
        self.keys.key(record, out)
    }

    /// The record whose state and value a read of r's key follows.
    #[inline]
    pub fn canon(&self, record: u64) -> u64 {
        match &self.plan {
            Some(p) if self.has_canon => p.canon(record),
            _ => record,
        }
    }

    /// The record at sorted position p.
    #[inline]
    pub fn sorted(&self, position: u64) -> u64 {
        match &self.plan {
            Some(pl) if self.has_sorted => pl.sorted(position),
            _ => position,
        }
    }

    pub fn positions(&self) -> u64 {
        self.positions
    }

    /// The sorted position of r's key: how many distinct keys sort before it (the plan's RANK;
    /// a binary search over SORTED in a plan without it; r itself where keys are in record
    /// order). A scan of r starts there.
    pub fn rank(&self, record: u64) -> u64 {
        let plan = match &self.plan {
            Some(p) if self.has_sorted => p,
            _ => return record,
        };
        if let Some(p) = plan.rank(record) {
            return p;
        }
        let (mut key, mut probe) = (Vec::new(), Vec::new());
        self.key(record, &mut key);
        let (mut lo, mut hi) = (0, self.positions);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            self.key(self.sorted(mid), &mut probe);
            if probe < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    #[inline]
    pub fn value(&self, record: u64, version: u32, out: &mut Vec<u8>) {
        self.values.value(record, version as u64, out)
    }

    /// The fields version `version` of record `record` changes, serialised as a record.
    #[inline]
    pub fn changed_fields(&self, record: u64, version: u32, out: &mut Vec<u8>) {
        self.values.changed_fields(record, version as u64, out)
    }

    /// The one field version `version` of record `record` writes, when it writes one.
    pub fn field_written(&self, record: u64, version: u32) -> Option<u64> {
        self.values.field_written(record, version as u64)
    }

    /// What a read of version v of c must return, derived before the call; its bytes are
    /// fetched into the cache while the engine works, so the check after it does not miss.
    #[inline]
    pub fn expected(&self, record: u64, version: u32) -> Expected<'_> {
        let e = self.values.expected(record, version as u64);
        e.each_source(prefetch);
        e
    }

    /// `expected` for a check more than a few gets away (a block's): not fetched now, since
    /// the lines would be gone from the cache by the time of the call.
    #[inline]
    pub fn expected_later(&self, record: u64, version: u32) -> Expected<'_> {
        self.values.expected(record, version as u64)
    }

    /// Whether `found` is version `version` of `record`, its bytes fetched first: a check
    /// without an expectation derived ahead (beside other writers, a scan's) would otherwise
    /// miss on one slice of the pool after another.
    #[inline]
    pub fn matches(&self, record: u64, version: u32, found: &[u8]) -> bool {
        self.values.expected(record, version as u64).matches_fetched(found, prefetch)
    }
}

/// Ask the CPU to fetch the cache lines `b` spans, the first four at most (a hint; nothing is
/// read). A short value seldom starts on a line boundary: it often touches one line more than
/// its length suggests.
#[inline]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(last) = bytes.len().checked_sub(1) {
        let first = bytes.as_ptr() as usize & !63;
        let end = (bytes.as_ptr() as usize + last).min(first + 3 * 64);
        for line in (first..=end).step_by(64) {
            // SAFETY: a prefetch is a hint and never faults; the lines hold bytes of `bytes`.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line as *const i8) };
        }
    }
}
