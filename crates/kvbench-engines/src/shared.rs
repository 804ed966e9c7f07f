//! The engine of a C store whose handle is thread-safe (Kyoto Cabinet, Tkrzw: they lock
//! inside): one handle that every thread writes and reads through. An adapter writes only the
//! store's calls ([`ThreadSafe`]); [`Shared`] is its engine and readers.

use std::collections::BTreeMap;

use kvbench_model::engine::{Engine, EngineError, Reader, Result, WriteOp};

/// A store's calls on its open handle, made from any thread.
pub trait ThreadSafe: Send + Sync + 'static {
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
    /// [`Engine::internals`].
    fn internals(&self) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }
    /// [`Engine::settle`].
    fn settle(&mut self) -> Result<String> {
        Err(EngineError::Unsupported("this engine has no settle (flush and compact) step".into()))
    }
}

/// The engine over one such store, and the settings it reports.
pub struct Shared<S> {
    db: S,
    settings: BTreeMap<String, String>,
}

impl<S: ThreadSafe> Shared<S> {
    /// The engine over `db`; its settings say that threads share the handle, and `how`.
    pub fn engine(db: S, mut settings: BTreeMap<String, String>, how: &str) -> Box<dyn Engine> {
        settings.insert("threads".into(), format!("one shared handle ({how})"));
        Box::new(Shared { db, settings })
    }
}

impl<S: ThreadSafe> Engine for Shared<S> {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.db.write(batch)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(SharedReader(&self.db)))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn internals(&self) -> BTreeMap<String, f64> {
        self.db.internals()
    }

    fn settle(&mut self) -> Result<String> {
        self.db.settle()
    }
}

/// A reader calls the shared handle directly.
struct SharedReader<'a, S>(&'a S);

impl<S: ThreadSafe> Reader for SharedReader<'_, S> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.0.get(key, out)
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        self.0.scan(start, limit, visit)
    }
}
