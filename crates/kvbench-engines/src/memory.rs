//! `memory`: a BTreeMap behind a lock. The reference engine: the conformance suite checks
//! every other engine against it, and tests run the whole harness on it. Not persistent.

use std::collections::BTreeMap;
use std::sync::RwLock;

use kvbench_core::engine::*;

pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    name: "memory",
    description: "in-memory BTreeMap (reference oracle for tests; not a real store)",
    capabilities: Capabilities {
        ordered_scan: true,
        multi_get: false,
        batch: true,
        read_only_open: false,
        secondary_open: false,
        persistent: false,
        build_once: false,
        delete: true,
    },
    options: &[],
    version: || env!("CARGO_PKG_VERSION").to_string(),
    available: || Ok(()),
    open,
    start_server: None,
};

#[derive(Default)]
pub struct Memory {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
}

fn open(_args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    Ok(Box::new(Memory::default()))
}

impl Engine for Memory {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
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
        Ok(Box::new(MemoryReader { map: &self.map }))
    }
}

struct MemoryReader<'a> {
    map: &'a RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl Reader for MemoryReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let m = self.map.read().map_err(|_| EngineError::store("lock poisoned"))?;
        out.clear();
        match m.get(key) {
            Some(v) => {
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(
        &mut self,
        start: Option<&[u8]>,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let m = self.map.read().map_err(|_| EngineError::store("lock poisoned"))?;
        let mut n = 0;
        let lo = start.map(|s| std::ops::Bound::Included(s.to_vec())).unwrap_or(std::ops::Bound::Unbounded);
        for (k, v) in m.range((lo, std::ops::Bound::Unbounded)).take(limit) {
            n += 1;
            if !visit(k, v) {
                break;
            }
        }
        Ok(n)
    }
}
