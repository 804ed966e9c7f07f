//! `fjall2`: fjall 2 (crate `fjall` 2.x, the version redb's published benchmark harness
//! measures): one keyspace in the job directory with one partition `kv`, opened through the
//! single-writer transactional keyspace as that harness opens it.
//!
//! The same choices as the `fjall` row (fjall 3) under fjall 2's names (keyspace and
//! partition for 3's database and keyspace): each write batch is one atomic write batch, or
//! (`write = "transaction"`) one transaction committed then persisted; readers read the
//! partition's latest data, or (`read = "snapshot"`) through a read transaction renewed at a
//! refresh; settle compacts, or (`compaction = "none"`) only persists.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use ::fjall2::{Config, PartitionCreateOptions, PersistMode, ReadTransaction, TxKeyspace, TxPartitionHandle};
use kvbench_model::engine::*;

const PARTITION: &str = "kv";

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "fjall2",
    "fjall 2 (pure Rust): LSM-tree with a shared journal, one partition (the version redb's published harness measures)",
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
                  transaction (write_tx, commit), then the keyspace persisted, as redb's benchmark harness does",
        ),
        OptionSpec::one_of(
            "read",
            &["latest", "snapshot"],
            "latest",
            "latest: each read sees the partition's latest data; snapshot: reads go through a read transaction \
                  (read_tx) taken when the reader opens and again after writes, as redb's benchmark harness reads",
        ),
        OptionSpec::one_of(
            "compaction",
            &["major", "none"],
            "major",
            "what settle does: major: flush the memtable and compact every segment into the last level; none: \
                  persist the journal only, as redb's benchmark harness's fjall `compact` (which does nothing)",
        ),
    ],
    || env!("KVB_CRATE_VERSION_FJALL2").into(),
    open,
);

fn err(error: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("fjall2: {error}"))
}

pub struct Fjall2 {
    ks: TxKeyspace,
    part: TxPartitionHandle,
    transaction: bool,
    compact: bool,
    snapshot: bool,
    /// `Buffer` (write to the OS) when the scenario does not ask for durable commits.
    persist: PersistMode,
    sync: SyncMode,
    cache_size: Option<u64>,
    wrote: AtomicBool,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    if args.mode != OpenMode::ReadWrite {
        return Err(EngineError::Unsupported(format!("fjall2 has no {:?} open", args.mode)));
    }
    let o = args.options;
    let cache_size = match o.int("cache_size") {
        Some(n) if n > 0 => Some(n as u64),
        Some(n) => return Err(EngineError::Option(format!("fjall2 cache_size must be positive bytes, got {n}"))),
        None => None,
    };
    let durable = match o.text("persist_mode").as_deref() {
        Some("sync-data") => PersistMode::SyncData,
        _ => PersistMode::SyncAll,
    };
    let persist = if args.sync == SyncMode::None { PersistMode::Buffer } else { durable };
    let mut config = Config::new(args.dir);
    if let Some(n) = cache_size {
        config = config.cache_size(n);
    }
    let ks = config.open_transactional().map_err(err)?;
    let part = ks.open_partition(PARTITION, PartitionCreateOptions::default()).map_err(err)?;
    Ok(Box::new(Fjall2 {
        ks,
        part,
        transaction: o.text("write").as_deref() == Some("transaction"),
        compact: o.text("compaction").as_deref() != Some("none"),
        snapshot: o.text("read").as_deref() == Some("snapshot"),
        persist,
        sync: args.sync,
        cache_size,
        wrote: AtomicBool::new(false),
    }))
}

impl Fjall2 {
    fn write_batch(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let part = self.part.inner();
        let mut b = self.ks.inner().batch().durability(Some(self.persist));
        for w in batch {
            match w.value {
                Some(v) => b.insert(part, w.key, v),
                None => b.remove(part, w.key),
            }
        }
        b.commit().map_err(err)
    }

    /// redb's harness: `commit`, then `persist(SyncAll)` (`Buffer` without sync).
    fn write_transaction(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut tx = self.ks.write_tx();
        for w in batch {
            match w.value {
                Some(v) => tx.insert(&self.part, w.key, v),
                None => tx.remove(&self.part, w.key),
            }
        }
        tx.commit().map_err(err)?;
        self.ks.persist(self.persist).map_err(err)
    }
}

impl Engine for Fjall2 {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.wrote.store(true, Ordering::Relaxed);
        if self.transaction {
            self.write_transaction(batch)
        } else {
            self.write_batch(batch)
        }
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let snapshot = self.snapshot.then(|| self.ks.read_tx());
        Ok(Box::new(Fjall2Reader { db: self, snapshot }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        if self.sync == SyncMode::None && self.wrote.load(Ordering::Relaxed) {
            self.ks.persist(PersistMode::SyncAll).map_err(err)?;
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
        s.insert("partition".into(), format!("`{PARTITION}`, default create options"));
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
            "reads the partition's latest data (no snapshot held)"
        };
        s.insert("reader".into(), reader.into());
        s
    }

    fn internals(&self) -> BTreeMap<String, f64> {
        let (ks, part) = (self.ks.inner(), self.part.inner());
        BTreeMap::from([
            ("fjall.segments".into(), part.segment_count() as f64),
            ("fjall.disk_space".into(), part.disk_space() as f64),
            ("fjall.write_buffer_size".into(), ks.write_buffer_size() as f64),
            ("fjall.journal_count".into(), ks.journal_count() as f64),
        ])
    }

    /// Flushes the memtable and compacts every segment into the last level (`compaction =
    /// "none"`: only persists the journal, as redb's harness leaves fjall).
    fn settle(&mut self) -> Result<String> {
        self.ks.persist(PersistMode::SyncAll).map_err(err)?;
        let part = self.part.inner();
        if !self.compact {
            return Ok(format!("persisted the journal, no compaction ({} segments)", part.segment_count()));
        }
        part.rotate_memtable_and_wait().map_err(err)?;
        part.major_compact().map_err(err)?;
        Ok(format!("flushed the memtable and ran a major compaction ({} segments left)", part.segment_count()))
    }
}

struct Fjall2Reader<'a> {
    db: &'a Fjall2,
    /// `read = "snapshot"`: the read transaction reads go through, taken anew at a refresh.
    snapshot: Option<ReadTransaction>,
}

impl Reader for Fjall2Reader<'_> {
    fn refresh(&mut self) -> Result<()> {
        if let Some(snapshot) = &mut self.snapshot {
            *snapshot = self.db.ks.read_tx();
        }
        Ok(())
    }

    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let found = match &self.snapshot {
            Some(snapshot) => snapshot.get(&self.db.part, key),
            None => self.db.part.inner().get(key),
        };
        Ok(crate::copy_found(found.map_err(err)?, out))
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let (part, inner) = (&self.db.part, self.db.part.inner());
        let iter: Box<dyn Iterator<Item = ::fjall2::Result<::fjall2::KvPair>>> = match (&self.snapshot, start) {
            (Some(snapshot), Some(s)) => Box::new(snapshot.range::<&[u8], _>(part, s..)),
            (Some(snapshot), None) => Box::new(snapshot.iter(part)),
            (None, Some(s)) => Box::new(inner.range::<&[u8], _>(s..)),
            (None, None) => Box::new(inner.iter()),
        };
        crate::visit_pairs(iter.map(|pair| pair.map_err(err)), limit, visit)
    }
}
