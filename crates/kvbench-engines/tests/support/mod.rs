//! What the in-test engines of several test files share: a map to write batches into and an
//! engine over it whose own state makes the readers, the capabilities and descriptor of such an
//! engine, and running a scenario's get phase in this process (through `in_process`, which
//! each test file that declares `support` declares too).

use std::collections::BTreeMap;
use std::sync::Mutex;

use kvbench_model::engine::{Capabilities, Engine, EngineDescriptor, Reader, Result, WriteOp};
use kvbench_model::result::PhaseResult;
use kvbench_model::scenario::Scenario;

pub type Map = Mutex<BTreeMap<Vec<u8>, Vec<u8>>>;

/// Apply a write batch to `map`: a value puts, none deletes.
pub fn write(map: &Map, batch: &[WriteOp<'_>]) {
    let mut m = map.lock().unwrap();
    for w in batch {
        match w.value {
            Some(v) => m.insert(w.key.to_vec(), v.to_vec()),
            None => m.remove(w.key),
        };
    }
}

/// An in-test engine: batches go to `map`; its own state `T` makes the readers.
#[derive(Default)]
pub struct MapEngine<T> {
    pub map: Map,
    pub state: T,
}

/// How an in-test map engine's readers read.
pub trait MapReaders: Sized + Send + Sync {
    fn reader(engine: &MapEngine<Self>) -> Result<Box<dyn Reader + '_>>;
}

impl<T: MapReaders> Engine for MapEngine<T> {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        write(&self.map, batch);
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        T::reader(self)
    }
}

/// An in-memory map: batches and deletes, nothing else.
pub const MAP_CAPS: Capabilities =
    Capabilities { ordered_scan: false, read_only_open: false, persistent: false, ..kvbench_engines::ORDERED_STORE };

/// The descriptor of an in-test engine over a map: [`MAP_CAPS`], no options, opened by `open`.
pub const fn map_engine(
    name: &'static str,
    description: &'static str,
    open: kvbench_engines::OpenFn,
) -> EngineDescriptor {
    kvbench_engines::embedded(name, description, MAP_CAPS, &[], || "test".into(), open)
}

/// Run scenario `text` on `desc` in this process and return its get phase.
pub fn get_phase(desc: &EngineDescriptor, text: &str) -> PhaseResult {
    let s: Scenario = toml::from_str(text).unwrap();
    s.check().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let v = s.all_variants()[0].clone();
    let phases = crate::in_process::run_in_process(&s, &v, desc, tmp.path(), None, None).unwrap();
    phases.into_iter().find(|p| p.kind == "get").unwrap()
}
