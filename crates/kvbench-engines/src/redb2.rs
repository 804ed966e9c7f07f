//! `redb2`: redb 2 (crate `redb` 2.x, the version redb's published benchmark harness measures):
//! one file `kv.redb` in the job directory holding one table `kv` of byte-string keys and
//! values, in redb 2's default file format, as that harness creates it.
//!
//! The same choices as the `redb` row (redb 4): each write batch is one write transaction;
//! each reader holds one read transaction (and its table) for its life, renewed by `refresh`;
//! settle compacts until done, or (`compaction = "once"`) calls compact once. No read-only
//! open (redb 2 has no read-only database).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use ::redb2::{Database, Durability, ReadOnlyTable, ReadTransaction, TableDefinition};
use kvbench_model::engine::*;

const FILE: &str = "kv.redb";
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

type Table = ReadOnlyTable<&'static [u8], &'static [u8]>;

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "redb2",
    "redb 2 (pure Rust): copy-on-write B-tree in one file (the version redb's published harness measures)",
    Capabilities { read_only_open: false, ..crate::ORDERED_STORE },
    crate::redb::OPTIONS,
    || env!("KVB_CRATE_VERSION_REDB2").into(),
    open,
);

fn err(error: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("redb2: {error}"))
}

pub struct Redb2 {
    db: Database,
    sync: SyncMode,
    cache_size: Option<usize>,
    compact_once: bool,
    wrote: AtomicBool,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    if args.mode != OpenMode::ReadWrite {
        return Err(EngineError::Unsupported(format!("redb2 has no {:?} open", args.mode)));
    }
    let cache_size = crate::redb::cache_size(args, "redb2")?;
    let mut b = Database::builder();
    if let Some(n) = cache_size {
        b.set_cache_size(n);
    }
    let db = b.create(args.file(FILE)).map_err(err)?;
    // The table exists from the start, so a reader of an empty database finds it.
    let txn = db.begin_write().map_err(err)?;
    txn.open_table(TABLE).map_err(err)?;
    txn.commit().map_err(err)?;
    let compact_once = args.options.text("compaction").as_deref() == Some("once");
    Ok(Box::new(Redb2 { db, sync: args.sync, cache_size, compact_once, wrote: AtomicBool::new(false) }))
}

impl Redb2 {
    fn begin_read(&self) -> Result<(ReadTransaction, Table)> {
        let txn = self.db.begin_read().map_err(err)?;
        let table = txn.open_table(TABLE).map_err(err)?;
        Ok((txn, table))
    }

    /// An empty commit with immediate durability makes every earlier `Durability::None`
    /// commit durable.
    fn persist(&self) -> Result<()> {
        self.db.begin_write().map_err(err)?.commit().map_err(err)
    }
}

impl Engine for Redb2 {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.wrote.store(true, Ordering::Relaxed);
        let mut txn = self.db.begin_write().map_err(err)?;
        if self.sync == SyncMode::None {
            txn.set_durability(Durability::None);
        }
        {
            let mut table = txn.open_table(TABLE).map_err(err)?;
            for w in batch {
                match w.value {
                    Some(v) => drop(table.insert(w.key, v).map_err(err)?),
                    None => drop(table.remove(w.key).map_err(err)?),
                }
            }
        }
        txn.commit().map_err(err)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        let (txn, table) = self.begin_read()?;
        Ok(Box::new(Redb2Reader { db: self, _txn: txn, table }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        if self.sync == SyncMode::None && self.wrote.load(Ordering::Relaxed) {
            self.persist()?;
        }
        Ok(())
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let sync = match self.sync {
            SyncMode::None => "Durability::None (commits kept in memory; one Durability::Immediate commit at close)",
            _ => "Durability::Immediate (fsync at every commit, redb's default)",
        };
        crate::redb::settings(sync, self.cache_size, self.compact_once)
    }

    /// Compacts the file (`Database::compact`, until it reports nothing left to do, or once)
    /// after making earlier commits durable.
    fn settle(&mut self) -> Result<String> {
        self.persist()?;
        let db = &mut self.db;
        crate::redb::compact(|| db.compact().map_err(err), self.compact_once)
    }
}

struct Redb2Reader<'a> {
    db: &'a Redb2,
    _txn: ReadTransaction,
    table: Table,
}

impl Reader for Redb2Reader<'_> {
    fn refresh(&mut self) -> Result<()> {
        (self._txn, self.table) = self.db.begin_read()?;
        Ok(())
    }

    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let found = self.table.get(key).map_err(err)?;
        Ok(crate::copy_found(found.as_ref().map(|v| v.value()), out))
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let range = match start {
            Some(s) => self.table.range::<&[u8]>(s..),
            None => self.table.range::<&[u8]>(..),
        }
        .map_err(err)?;
        let mut n = 0;
        for item in range.take(limit) {
            let (k, v) = item.map_err(err)?;
            n += 1;
            if !visit(k.value(), v.value()) {
                break;
            }
        }
        Ok(n)
    }
}
