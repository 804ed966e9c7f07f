//! The engine of a C store whose handle is not thread-safe (Berkeley DB opened without
//! DB_THREAD, GDBM, QDBM): one handle behind a mutex, which writes and reads take in turn. An
//! adapter writes only the store's calls ([`OneAtATime`]); [`Locked`] is its engine and readers.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use kvbench_model::engine::{Engine, EngineError, Reader, Result, WriteOp};

/// A store's calls on its open handle, made while the caller holds the handle's lock.
pub trait OneAtATime: Send + 'static {
    /// Apply the writes as one batch, with the durability the store was opened with.
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()>;
    /// The value of `key` into `out` (cleared first); false when there is none.
    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;
    /// An ordered scan, for the stores whose capabilities have one.
    fn scan(&self, _start: Option<&[u8]>, _limit: usize, _visit: crate::Visit<'_>) -> Result<usize> {
        Err(EngineError::Unsupported("ordered scan".into()))
    }
    /// Close the handle, with the library's error if it has one.
    fn close(self) -> Result<()>;
}

/// The engine over one such store, and the settings it reports.
pub struct Locked<S> {
    db: Mutex<S>,
    settings: BTreeMap<String, String>,
}

impl<S: OneAtATime> Locked<S> {
    /// The engine over `db`; its settings say that threads take turns, and `why`.
    pub fn engine(db: S, mut settings: BTreeMap<String, String>, why: &str) -> Box<dyn Engine> {
        settings.insert("threads".into(), format!("one handle behind a mutex ({why})"));
        Box::new(Locked { db: Mutex::new(db), settings })
    }

    fn lock(&self) -> Result<MutexGuard<'_, S>> {
        self.db.lock().map_err(|_| EngineError::store("lock poisoned"))
    }
}

impl<S: OneAtATime> Engine for Locked<S> {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.lock()?.write(batch)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(LockedReader(self)))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.into_inner().map_err(|_| EngineError::store("lock poisoned"))?.close()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }
}

/// A reader takes the engine's lock for each call.
struct LockedReader<'a, S>(&'a Locked<S>);

impl<S: OneAtATime> Reader for LockedReader<'_, S> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.0.lock()?.get(key, out)
    }

    /// The lock is held for the whole scan (a cursor lives in the handle).
    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        self.0.lock()?.scan(start, limit, visit)
    }
}
