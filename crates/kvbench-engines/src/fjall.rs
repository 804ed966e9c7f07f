//! `fjall`: the pure-Rust LSM-tree store (crate `fjall`): one database in the job directory
//! with one keyspace `kv` (fjall 3 renamed 2.x's keyspace and partition to database and
//! keyspace).
//!
//! Each write batch is one fjall write batch (atomic across the batch), committed with the
//! persist mode the scenario's sync asks for; or (`write = "transaction"`) one single-writer
//! transaction committed and then persisted, as redb's benchmark harness writes fjall. The
//! database is always opened through fjall's single-writer transactional wrapper, which opens
//! the same database: only the write path differs. Readers read the keyspace's latest data (no
//! snapshot held), like RocksDB's default reads; or (`read = "snapshot"`) through a read
//! transaction held until the worker refreshes the reader, as redb's benchmark harness reads.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use ::fjall::{KeyspaceCreateOptions, PersistMode, Readable, SingleWriterTxDatabase, SingleWriterTxKeyspace, Snapshot};
use kvbench_model::engine::*;

const KEYSPACE: &str = "kv";

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "fjall",
    "fjall (pure Rust): LSM-tree with a shared journal, one keyspace",
    Capabilities { read_only_open: false, ..crate::ORDERED_STORE },
    &[
        OptionSpec::int("cache_size", "", "block cache in bytes, e.g. 64m (default: the library's, 32 MiB)"),
        OptionSpec::one_of(
            "persist_mode",
            &["sync-all", "sync-data"],
            "sync-all",
            "how a durable commit (sync commit or always) flushes the journal: fsync (SyncAll) or fdatasync (SyncData)",
        ),
        OptionSpec::one_of(
            "write",
            &["batch", "transaction"],
            "batch",
            "batch: one write batch per kvbench batch, persisted at commit; transaction: one single-writer \
                  transaction (write_tx, commit), then the database persisted, as redb's benchmark harness does",
        ),
        OptionSpec::one_of(
            "read",
            &["latest", "snapshot"],
            "latest",
            "latest: each read sees the keyspace's latest data; snapshot: reads go through a read transaction \
                  (read_tx) taken when the reader opens and again after writes, as redb's benchmark harness reads",
        ),
        OptionSpec::one_of(
            "compaction",
            &["major", "none"],
            "major",
            "what settle does: major: flush the memtable and compact every table into the last level; none: \
                  persist the journal only, as redb's benchmark harness's fjall `compact` (which does nothing)",
        ),
    ],
    || env!("KVB_CRATE_VERSION_FJALL").into(),
    open,
);

fn err(error: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("fjall: {error}"))
}

pub struct Fjall {
    db: SingleWriterTxDatabase,
    ks: SingleWriterTxKeyspace,
    /// Writes go through a single-writer transaction (`write = "transaction"`).
    transaction: bool,
    /// Settle compacts (`compaction = "major"`), or only persists (`"none"`: redb's harness).
    compact: bool,
    /// Readers read through a read transaction (`read = "snapshot"`).
    snapshot: bool,
    /// The persist mode of each commit: `Buffer` (the library's default, write to the OS) when
    /// the scenario does not ask for durable commits.
    persist: PersistMode,
    sync: SyncMode,
    cache_size: Option<u64>,
    wrote: AtomicBool,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    if args.mode != OpenMode::ReadWrite {
        return Err(EngineError::Unsupported(format!("fjall has no {:?} open", args.mode)));
    }
    let o = args.options;
    let cache_size = match o.int("cache_size") {
        Some(n) if n > 0 => Some(n as u64),
        Some(n) => return Err(EngineError::Option(format!("fjall cache_size must be positive bytes, got {n}"))),
        None => None,
    };
    let durable = match o.text("persist_mode").as_deref() {
        Some("sync-data") => PersistMode::SyncData,
        _ => PersistMode::SyncAll,
    };
    let persist = if args.sync == SyncMode::None { PersistMode::Buffer } else { durable };
    let mut b = SingleWriterTxDatabase::builder(args.dir);
    if let Some(n) = cache_size {
        b = b.cache_size(n);
    }
    let db = b.open().map_err(err)?;
    let ks = db.keyspace(KEYSPACE, KeyspaceCreateOptions::default).map_err(err)?;
    let transaction = o.text("write").as_deref() == Some("transaction");
    let compact = o.text("compaction").as_deref() != Some("none");
    let snapshot = o.text("read").as_deref() == Some("snapshot");
    let wrote = AtomicBool::new(false);
    Ok(Box::new(Fjall { db, ks, transaction, compact, snapshot, persist, sync: args.sync, cache_size, wrote }))
}

impl Fjall {
    /// One write batch, persisted as the commit's durability asks.
    fn write_batch(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let ks = self.ks.inner();
        let mut b = self.db.inner().batch().durability(Some(self.persist));
        for w in batch {
            match w.value {
                Some(v) => b.insert(ks, w.key, v),
                None => b.remove(ks, w.key),
            }
        }
        b.commit().map_err(err)
    }

    /// One transaction, committed, then the database persisted (redb's harness: `commit`, then
    /// `persist(SyncAll)` when sync is on, `Buffer` when off).
    fn write_transaction(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut tx = self.db.write_tx();
        for w in batch {
            match w.value {
                Some(v) => tx.insert(&self.ks, w.key, v),
                None => tx.remove(&self.ks, w.key),
            }
        }
        tx.commit().map_err(err)?;
        self.db.persist(self.persist).map_err(err)
    }
}

impl Engine for Fjall {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.wrote.store(true, Ordering::Relaxed);
        if self.transaction {
            self.write_transaction(batch)
        } else {
            self.write_batch(batch)
        }
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let snapshot = self.snapshot.then(|| (&self.db, self.db.read_tx()));
        Ok(Box::new(FjallReader { ks: self.ks.inner().clone(), snapshot }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        if self.sync == SyncMode::None && self.wrote.load(Ordering::Relaxed) {
            self.db.persist(PersistMode::SyncAll).map_err(err)?;
        }
        Ok(())
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        let sync = match self.persist {
            PersistMode::Buffer => {
                "PersistMode::Buffer (journal written to the OS at each commit, no fsync; persist(SyncAll) at close)"
                    .to_string()
            }
            mode => format!("PersistMode::{mode:?} at every commit (journal fsynced before the commit returns)"),
        };
        s.insert("sync".into(), sync);
        let cache = self.cache_size.map(|n| format!("{n} bytes")).unwrap_or_else(|| "library default (32 MiB)".into());
        s.insert("cache_size".into(), cache);
        s.insert("keyspace".into(), format!("`{KEYSPACE}`, default create options (lz4, 64 MiB memtable)"));
        let write = if self.transaction {
            "one single-writer transaction per batch (write_tx, commit, then persist: redb's harness)"
        } else {
            "one atomic write batch per batch"
        };
        s.insert("write_batch".into(), write.into());
        let settle = if self.compact {
            "flush the memtable, then a major compaction"
        } else {
            "persist only, no compaction (redb's harness's fjall compact does nothing)"
        };
        s.insert("compaction".into(), settle.into());
        let reader = if self.snapshot {
            "reads through a read transaction (read_tx), taken anew after writes (redb's harness)"
        } else {
            "reads the keyspace's latest data (no snapshot held)"
        };
        s.insert("reader".into(), reader.into());
        s
    }

    fn internals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let (db, ks) = (self.db.inner(), self.ks.inner());
        out.insert("fjall.tables".into(), ks.table_count() as f64);
        out.insert("fjall.l0_tables".into(), ks.l0_table_count() as f64);
        out.insert("fjall.disk_space".into(), ks.disk_space() as f64);
        out.insert("fjall.write_buffer_size".into(), db.write_buffer_size() as f64);
        out.insert("fjall.journal_count".into(), db.journal_count() as f64);
        out.insert("fjall.compactions_completed".into(), db.compactions_completed() as f64);
        out
    }

    /// Flushes the memtable to a table and compacts every table into the last level (fjall's
    /// `rotate_memtable_and_wait` and `major_compact`, both marked hidden in its docs); with
    /// `compaction = "none"` only persists the journal, as redb's harness leaves fjall.
    fn settle(&mut self) -> Result<String> {
        self.db.persist(PersistMode::SyncAll).map_err(err)?;
        let ks = self.ks.inner();
        if !self.compact {
            return Ok(format!("persisted the journal, no compaction ({} tables)", ks.table_count()));
        }
        ks.rotate_memtable_and_wait().map_err(err)?;
        ks.major_compact().map_err(err)?;
        Ok(format!("flushed the memtable and ran a major compaction ({} tables left)", ks.table_count()))
    }
}

struct FjallReader<'a> {
    ks: ::fjall::Keyspace,
    /// `read = "snapshot"`: the read transaction reads go through, taken anew at a refresh.
    snapshot: Option<(&'a SingleWriterTxDatabase, Snapshot)>,
}

impl Reader for FjallReader<'_> {
    fn refresh(&mut self) -> Result<()> {
        if let Some((db, snapshot)) = &mut self.snapshot {
            *snapshot = db.read_tx();
        }
        Ok(())
    }

    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let found = match &self.snapshot {
            Some((_, snapshot)) => snapshot.get(&self.ks, key),
            None => self.ks.get(key),
        };
        Ok(crate::copy_found(found.map_err(err)?, out))
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let iter = match (&self.snapshot, start) {
            (Some((_, snapshot)), Some(s)) => snapshot.range::<&[u8], _>(&self.ks, s..),
            (Some((_, snapshot)), None) => snapshot.iter(&self.ks),
            (None, Some(s)) => self.ks.range::<&[u8], _>(s..),
            (None, None) => self.ks.iter(),
        };
        crate::visit_pairs(iter.map(|guard| guard.into_inner().map_err(err)), limit, visit)
    }
}
