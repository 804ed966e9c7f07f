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

use crate::fjall::{sync_words, Choice};

const PARTITION: &str = "kv";

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "fjall2",
    "fjall 2 (pure Rust): LSM-tree with a shared journal, one partition (the version redb's published harness measures)",
    Capabilities { read_only_open: false, ..crate::ORDERED_STORE },
    crate::fjall::OPTIONS,
    || env!("KVB_CRATE_VERSION_FJALL2").into(),
    open,
);

fn err(error: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("fjall2: {error}"))
}

pub struct Fjall2 {
    ks: TxKeyspace,
    part: TxPartitionHandle,
    choice: Choice,
    /// `Buffer` (write to the OS) when the scenario does not ask for durable commits.
    persist: PersistMode,
    sync: SyncMode,
    wrote: AtomicBool,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let choice = Choice::of(args, "fjall2")?;
    let persist = match (args.sync, choice.sync_data) {
        (SyncMode::None, _) => PersistMode::Buffer,
        (_, true) => PersistMode::SyncData,
        _ => PersistMode::SyncAll,
    };
    let mut config = Config::new(args.dir);
    if let Some(n) = choice.cache_size {
        config = config.cache_size(n);
    }
    let ks = config.open_transactional().map_err(err)?;
    let part = ks.open_partition(PARTITION, PartitionCreateOptions::default()).map_err(err)?;
    Ok(Box::new(Fjall2 { ks, part, choice, persist, sync: args.sync, wrote: AtomicBool::new(false) }))
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
        if self.choice.transaction {
            self.write_transaction(batch)
        } else {
            self.write_batch(batch)
        }
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let snapshot = self.choice.snapshot.then(|| self.ks.read_tx());
        Ok(Box::new(Fjall2Reader { db: self, snapshot }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        if self.sync == SyncMode::None && self.wrote.load(Ordering::Relaxed) {
            self.ks.persist(PersistMode::SyncAll).map_err(err)?;
        }
        Ok(())
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut s = self.choice.settings(sync_words(&format!("{:?}", self.persist)), "partition");
        s.insert("partition".into(), format!("`{PARTITION}`, default create options"));
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
        if !self.choice.compact {
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
