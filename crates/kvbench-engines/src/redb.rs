//! `redb`: the pure-Rust embedded B-tree store (crate `redb`): one file `kv.redb` in the job
//! directory holding one table `kv` of byte-string keys and values.
//!
//! Each write batch is one write transaction; each reader holds one read transaction (and its
//! table) for its life, renewed by `refresh`. redb allows one writer at a time and readers
//! beside it, like LMDB.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use ::redb::{
    Database, Durability, ReadOnlyDatabase, ReadOnlyTable, ReadTransaction, ReadableDatabase, TableDefinition,
};
use kvbench_model::engine::*;

const FILE: &str = "kv.redb";
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

/// The table as a read transaction opens it.
type Table = ReadOnlyTable<&'static [u8], &'static [u8]>;

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "redb",
    "redb (pure Rust): copy-on-write B-tree in one file, MVCC read transactions",
    crate::ORDERED_STORE,
    OPTIONS,
    || env!("KVB_CRATE_VERSION_REDB").into(),
    open,
);

/// The options of both redb rows (redb and redb2).
pub(crate) static OPTIONS: &[OptionSpec] = &[
    OptionSpec::int("cache_size", "", "redb's page cache in bytes, e.g. 64m (default: the library's, 1 GiB)"),
    OptionSpec::one_of(
        "compaction",
        &["full", "once"],
        "full",
        "what settle does: full: Database::compact until it reports nothing left to do; once: one call, \
              as redb's benchmark harness compacts",
    ),
];

/// `cache_size`, checked (None: the library's default).
pub(crate) fn cache_size(args: &OpenArgs<'_>, engine: &str) -> Result<Option<usize>> {
    match args.options.int("cache_size") {
        Some(n) if n > 0 => Ok(Some(n as usize)),
        Some(n) => Err(EngineError::Option(format!("{engine} cache_size must be positive bytes, got {n}"))),
        None => Ok(None),
    }
}

/// The settings both rows share, beside `sync`.
pub(crate) fn settings(sync: &str, cache_size: Option<usize>, compact_once: bool) -> BTreeMap<String, String> {
    let cache = cache_size.map(|n| format!("{n} bytes")).unwrap_or_else(|| "library default (1 GiB)".into());
    let settle = if compact_once { "Database::compact once (redb's harness)" } else { "Database::compact until done" };
    BTreeMap::from([
        ("sync".into(), sync.into()),
        ("cache_size".into(), cache),
        ("write_batch".into(), "one write transaction per batch".into()),
        ("reader".into(), "one read transaction per reader, renewed on refresh".into()),
        ("compaction".into(), settle.into()),
    ])
}

/// Settle's compaction: `compact` (one `Database::compact`) until it reports nothing left to
/// do, or once; what was done.
pub(crate) fn compact(mut compact: impl FnMut() -> Result<bool>, once: bool) -> Result<String> {
    let mut rounds = 0;
    while compact()? {
        rounds += 1;
        if once {
            break;
        }
    }
    let how = if once { "called once".to_string() } else { format!("{rounds} rounds") };
    Ok(format!("committed durably and compacted the file (Database::compact, {how})"))
}

fn err(error: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("redb: {error}"))
}

/// The database, opened for writing or read-only (two types in redb).
enum Db {
    Write(Database),
    Read(ReadOnlyDatabase),
}

pub struct Redb {
    db: Db,
    sync: SyncMode,
    cache_size: Option<usize>,
    /// Settle calls compact once (`compaction = "once"`: redb's harness), not until done.
    compact_once: bool,
    /// Something was written since open: only then does close make it durable.
    wrote: AtomicBool,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    if args.mode == OpenMode::Secondary {
        return Err(EngineError::Unsupported("redb has no secondary open".into()));
    }
    let cache_size = cache_size(args, "redb")?;
    let mut b = Database::builder();
    if let Some(n) = cache_size {
        b.set_cache_size(n);
    }
    let path = args.file(FILE);
    let db = if args.mode == OpenMode::ReadOnly {
        Db::Read(b.open_read_only(&path).map_err(err)?)
    } else {
        let db = b.create(&path).map_err(err)?;
        // The table exists from the start, so a reader of an empty database finds it.
        let txn = db.begin_write().map_err(err)?;
        txn.open_table(TABLE).map_err(err)?;
        txn.commit().map_err(err)?;
        Db::Write(db)
    };
    let compact_once = args.options.text("compaction").as_deref() == Some("once");
    Ok(Box::new(Redb { db, sync: args.sync, cache_size, compact_once, wrote: AtomicBool::new(false) }))
}

impl Redb {
    fn begin_read(&self) -> Result<(ReadTransaction, Table)> {
        let txn = match &self.db {
            Db::Write(d) => d.begin_read(),
            Db::Read(d) => d.begin_read(),
        }
        .map_err(err)?;
        let table = txn.open_table(TABLE).map_err(err)?;
        Ok((txn, table))
    }

    /// An empty commit with immediate durability: makes every earlier non-durable commit
    /// durable (redb's way to flush after `Durability::None`).
    fn persist(db: &Database) -> Result<()> {
        let txn = db.begin_write().map_err(err)?;
        txn.commit().map_err(err)
    }
}

impl Engine for Redb {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let Db::Write(db) = &self.db else {
            return Err(EngineError::store("redb: opened read-only"));
        };
        self.wrote.store(true, Ordering::Relaxed);
        let mut txn = db.begin_write().map_err(err)?;
        if self.sync == SyncMode::None {
            txn.set_durability(Durability::None).map_err(err)?;
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
        Ok(Box::new(RedbReader { db: self, _txn: txn, table }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        match self.db {
            Db::Write(db) => {
                if self.sync == SyncMode::None && self.wrote.load(Ordering::Relaxed) {
                    Redb::persist(&db)?;
                }
                db.close().map_err(err)
            }
            Db::Read(db) => db.close().map_err(err),
        }
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let sync = match (&self.db, self.sync) {
            (Db::Read(_), _) => "read-only database (ReadOnlyDatabase)",
            (_, SyncMode::None) => {
                "Durability::None (commits kept in memory; one Durability::Immediate commit at close)"
            }
            _ => "Durability::Immediate (fsync at every commit; one-phase commit, redb's default)",
        };
        settings(sync, self.cache_size, self.compact_once)
    }

    /// Compacts the file (redb's `Database::compact`, until it reports nothing left to do, or
    /// once) after making earlier commits durable.
    fn settle(&mut self) -> Result<String> {
        let Db::Write(db) = &mut self.db else {
            return Ok("read-only database: nothing to compact".into());
        };
        Redb::persist(db)?;
        compact(|| db.compact().map_err(err), self.compact_once)
    }
}

/// One read transaction and its open table for the reader's life.
struct RedbReader<'a> {
    db: &'a Redb,
    _txn: ReadTransaction,
    table: Table,
}

impl Reader for RedbReader<'_> {
    fn refresh(&mut self) -> Result<()> {
        let (txn, table) = self.db.begin_read()?;
        self.table = table;
        self._txn = txn;
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
