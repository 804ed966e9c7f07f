//! `memory`: a BTreeMap behind a lock. The reference engine: the conformance suite checks
//! every other engine against it, and tests run the whole harness on it. Not persistent.
//!
//! Option `corrupt_every = N` makes every N-th get (counted over all readers) return a wrong
//! value, so tests can prove that verification catches a mismatch and counts it exactly.
//! Option `delay_ns = N` spins N ns in every get and write call: a known slowdown that
//! `bench/verdicts.sh` asks `compare` to detect.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use kvbench_model::engine::*;

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "memory",
    "in-memory BTreeMap (reference oracle for tests; not a real store)",
    Capabilities { read_only_open: false, persistent: false, ..crate::ORDERED_STORE },
    &[
        OptionSpec::int("corrupt_every", "0", "test aid: every N-th get returns a wrong value (0: never)"),
        OptionSpec::int("delay_ns", "0", "test aid: every get and write call spins this many nanoseconds (0: none)"),
    ],
    || env!("CARGO_PKG_VERSION").to_string(),
    open,
);

#[derive(Default)]
pub struct Memory {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
    corrupt: Corrupt,
    delay: Delay,
}

/// A fixed busy wait per call: spinning, not sleeping, so the cost is the same at any length
/// and on any scheduler.
#[derive(Default, Clone, Copy)]
struct Delay(std::time::Duration);

impl Delay {
    fn apply(self) {
        if self.0.is_zero() {
            return;
        }
        let t = std::time::Instant::now();
        while t.elapsed() < self.0 {
            std::hint::spin_loop();
        }
    }
}

/// Every `every`-th get (0: none) returns a wrong value.
#[derive(Default)]
struct Corrupt {
    every: u64,
    gets: AtomicU64,
}

impl Corrupt {
    /// Count a get of `value`; spoil it when its turn comes.
    fn apply(&self, value: &mut Vec<u8>) {
        if self.every == 0 {
            return;
        }
        let n = self.gets.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(self.every) {
            match value.first_mut() {
                Some(b) => *b ^= 0xff,
                None => value.push(b'!'),
            }
        }
    }
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let every = args.options.int("corrupt_every").unwrap_or(0);
    let every =
        u64::try_from(every).map_err(|_| EngineError::Option(format!("corrupt_every = {every}: use 0 or more")))?;
    let delay = args.options.int("delay_ns").unwrap_or(0);
    let delay = u64::try_from(delay).map_err(|_| EngineError::Option(format!("delay_ns = {delay}: use 0 or more")))?;
    Ok(Box::new(Memory {
        map: RwLock::default(),
        corrupt: Corrupt { every, gets: AtomicU64::new(0) },
        delay: Delay(std::time::Duration::from_nanos(delay)),
    }))
}

impl Engine for Memory {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.delay.apply();
        let mut m = self.map.write().map_err(|_| EngineError::store("lock poisoned"))?;
        for w in batch {
            match w.value {
                Some(v) => {
                    m.insert(w.key.to_vec(), v.to_vec());
                }
                None => {
                    m.remove(w.key);
                }
            }
        }
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(MemoryReader { map: &self.map, corrupt: &self.corrupt, delay: self.delay }))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        if self.corrupt.every > 0 {
            s.insert(
                "corrupt_every".into(),
                format!("every {}th get returns a wrong value (test aid)", self.corrupt.every),
            );
        }
        if !self.delay.0.is_zero() {
            s.insert(
                "delay_ns".into(),
                format!("{} ns spun in every get and write call (test aid)", self.delay.0.as_nanos()),
            );
        }
        s
    }
}

struct MemoryReader<'a> {
    map: &'a RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
    corrupt: &'a Corrupt,
    delay: Delay,
}

impl Reader for MemoryReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.delay.apply();
        let m = self.map.read().map_err(|_| EngineError::store("lock poisoned"))?;
        out.clear();
        match m.get(key) {
            Some(v) => {
                out.extend_from_slice(v);
                self.corrupt.apply(out);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let m = self.map.read().map_err(|_| EngineError::store("lock poisoned"))?;
        let lo = start.map(|s| std::ops::Bound::Included(s.to_vec())).unwrap_or(std::ops::Bound::Unbounded);
        crate::visit_pairs(m.range((lo, std::ops::Bound::Unbounded)).map(Ok), limit, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth_get_is_wrong() {
        let c = Corrupt { every: 3, gets: AtomicU64::new(0) };
        let mut wrong = 0;
        for _ in 0..30 {
            let mut v = b"abc".to_vec();
            c.apply(&mut v);
            wrong += usize::from(v != b"abc");
        }
        assert_eq!(wrong, 10);
        let mut empty = Vec::new();
        let c = Corrupt { every: 1, gets: AtomicU64::new(0) };
        c.apply(&mut empty);
        assert_eq!(empty, b"!", "an empty value is spoilt too");
    }

    #[test]
    fn a_delay_spins_at_least_its_length() {
        let t = std::time::Instant::now();
        for _ in 0..100 {
            Delay(std::time::Duration::from_micros(20)).apply();
        }
        assert!(t.elapsed() >= std::time::Duration::from_millis(2));
    }
}
