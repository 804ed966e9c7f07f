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
    OPTIONS,
    || env!("KVB_CRATE_VERSION_FJALL").into(),
    open,
);

/// The options of both fjall rows (fjall and fjall2: the same choices under each version's names).
pub(crate) static OPTIONS: &[OptionSpec] = &[
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
          transaction (write_tx, commit), then the store persisted, as redb's benchmark harness does",
    ),
    OptionSpec::one_of(
        "read",
        &["latest", "snapshot"],
        "latest",
        "latest: each read sees the latest data; snapshot: reads go through a read transaction \
          (read_tx) taken when the reader opens and again after writes, as redb's benchmark harness reads",
    ),
    OptionSpec::one_of(
        "compaction",
        &["major", "none"],
        "major",
        "what settle does: major: flush the memtable and compact every table (fjall 2: segment) into the last level; none: \
          persist the journal only, as redb's benchmark harness's fjall `compact` (which does nothing)",
    ),
];

/// The options' choices, read once for either version.
pub(crate) struct Choice {
    pub cache_size: Option<u64>,
    /// Durable commits flush with fdatasync (`persist_mode = "sync-data"`), else fsync.
    pub sync_data: bool,
    /// Writes go through a single-writer transaction (`write = "transaction"`).
    pub transaction: bool,
    /// Settle compacts (`compaction = "major"`), or only persists (`"none"`: redb's harness).
    pub compact: bool,
    /// Readers read through a read transaction (`read = "snapshot"`).
    pub snapshot: bool,
}

impl Choice {
    pub(crate) fn of(args: &OpenArgs<'_>, engine: &str) -> Result<Choice> {
        if args.mode != OpenMode::ReadWrite {
            return Err(EngineError::Unsupported(format!("{engine} has no {:?} open", args.mode)));
        }
        let o = args.options;
        let cache_size = match o.int("cache_size") {
            Some(n) if n > 0 => Some(n as u64),
            Some(n) => return Err(EngineError::Option(format!("{engine} cache_size must be positive bytes, got {n}"))),
            None => None,
        };
        Ok(Choice {
            cache_size,
            sync_data: o.text("persist_mode").as_deref() == Some("sync-data"),
            transaction: o.text("write").as_deref() == Some("transaction"),
            compact: o.text("compaction").as_deref() != Some("none"),
            snapshot: o.text("read").as_deref() == Some("snapshot"),
        })
    }

    /// The row's settings: `sync` as the version words it, the rest from the choices.
    pub(crate) fn settings(&self, sync: String, store: &str) -> BTreeMap<String, String> {
        let cache = self.cache_size.map(|n| format!("{n} bytes")).unwrap_or_else(|| "library default (32 MiB)".into());
        let write = if self.transaction {
            "one single-writer transaction per batch (write_tx, commit, then persist: redb's harness)"
        } else {
            "one atomic write batch per batch"
        };
        let settle = if self.compact {
            "flush the memtable, then a major compaction"
        } else {
            "persist only, no compaction (redb's harness's fjall compact does nothing)"
        };
        let reader = if self.snapshot {
            "reads through a read transaction (read_tx), taken anew after writes (redb's harness)".to_string()
        } else {
            format!("reads the {store}'s latest data (no snapshot held)")
        };
        BTreeMap::from([
            ("sync".into(), sync),
            ("cache_size".into(), cache),
            ("write_batch".into(), write.into()),
            ("compaction".into(), settle.into()),
            ("reader".into(), reader),
        ])
    }
}

/// The sync setting's words for a persist mode named `mode` (Buffer: no durable commits).
pub(crate) fn sync_words(mode: &str) -> String {
    if mode == "Buffer" {
        return "PersistMode::Buffer (journal written to the OS at each commit, no fsync; persist(SyncAll) at close)"
            .into();
    }
    format!("PersistMode::{mode} at every commit (journal fsynced before the commit returns)")
}

fn err(error: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("fjall: {error}"))
}

pub struct Fjall {
    db: SingleWriterTxDatabase,
    ks: SingleWriterTxKeyspace,
    choice: Choice,
    /// The persist mode of each commit: `Buffer` (the library's default, write to the OS) when
    /// the scenario does not ask for durable commits.
    persist: PersistMode,
    sync: SyncMode,
    wrote: AtomicBool,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let choice = Choice::of(args, "fjall")?;
    let persist = match (args.sync, choice.sync_data) {
        (SyncMode::None, _) => PersistMode::Buffer,
        (_, true) => PersistMode::SyncData,
        _ => PersistMode::SyncAll,
    };
    let mut b = SingleWriterTxDatabase::builder(args.dir);
    if let Some(n) = choice.cache_size {
        b = b.cache_size(n);
    }
    let db = b.open().map_err(err)?;
    let ks = db.keyspace(KEYSPACE, KeyspaceCreateOptions::default).map_err(err)?;
    Ok(Box::new(Fjall { db, ks, choice, persist, sync: args.sync, wrote: AtomicBool::new(false) }))
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
        if self.choice.transaction {
            self.write_transaction(batch)
        } else {
            self.write_batch(batch)
        }
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let snapshot = self.choice.snapshot.then(|| (&self.db, self.db.read_tx()));
        Ok(Box::new(FjallReader { ks: self.ks.inner().clone(), snapshot }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        if self.sync == SyncMode::None && self.wrote.load(Ordering::Relaxed) {
            self.db.persist(PersistMode::SyncAll).map_err(err)?;
        }
        Ok(())
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut s = self.choice.settings(sync_words(&format!("{:?}", self.persist)), "keyspace");
        s.insert("keyspace".into(), format!("`{KEYSPACE}`, default create options (lz4, 64 MiB memtable)"));
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
        if !self.choice.compact {
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
