//! `sqlite`: SQLite (the system libsqlite3, through rusqlite) used as a key-value store: one
//! table `kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID` in `kv.sqlite` in the job directory.
//!
//! Writes go through one connection behind a mutex, one `BEGIN IMMEDIATE` transaction per
//! batch with cached prepared statements. Every reader opens its own read-only connection, so
//! reader threads run in parallel (in WAL mode they never wait for the writer). Readers hold no
//! transaction between statements: each statement reads the latest committed data.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use kvbench_model::engine::*;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

const FILE: &str = "kv.sqlite";
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "sqlite",
    "SQLite (system libsqlite3 via rusqlite): one WITHOUT ROWID table as a key-value store",
    crate::ORDERED_STORE,
    &[
        OptionSpec::one_of("journal_mode", &["wal", "delete"], "wal", "PRAGMA journal_mode (WAL lets readers run beside the writer)"),
        OptionSpec::int("cache_size", "", "page cache per connection in bytes, e.g. 64m (set as PRAGMA cache_size=-KiB; default: the library's, 2000 KiB)"),
        OptionSpec::int("mmap_size", "", "PRAGMA mmap_size in bytes per connection (default: the library's, normally 0 = off)"),
    ],
    || rusqlite::version().to_string(),
    open,
);

fn err(error: rusqlite::Error) -> EngineError {
    EngineError::Store(format!("sqlite: {error}"))
}

pub struct Sqlite {
    /// The writing connection; `None` when opened read-only.
    writer: Option<Mutex<Connection>>,
    path: PathBuf,
    cache_kib: Option<i64>,
    mmap_size: Option<i64>,
    sync: SyncMode,
    settings: BTreeMap<String, String>,
    /// Something was written since open: only then does close force data to disk (an
    /// open-per-operation read must not pay an fsync at every close).
    wrote: std::sync::atomic::AtomicBool,
}

/// Per-connection settings shared by the writer and every reader.
fn configure(conn: &Connection, cache_kib: Option<i64>, mmap_size: Option<i64>) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    if let Some(kib) = cache_kib {
        conn.pragma_update(None, "cache_size", -kib).map_err(err)?;
    }
    if let Some(n) = mmap_size {
        // mmap_size answers with the new value: read it back rather than ignore a row.
        conn.pragma_update_and_check(None, "mmap_size", n, |r| r.get::<_, i64>(0)).map_err(err)?;
    }
    Ok(())
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let o = args.options;
    if args.mode == OpenMode::Secondary {
        return Err(EngineError::Unsupported("sqlite has no secondary open".into()));
    }
    // Given in bytes like every other engine's cache option (so `64m` means 64 MiB); SQLite
    // takes a negative cache_size as KiB.
    let cache_kib = match o.int("cache_size") {
        Some(n) if n > 0 => Some((n as u64).div_ceil(1024) as i64),
        Some(n) => return Err(EngineError::Option(format!("sqlite cache_size must be positive bytes, got {n}"))),
        None => None,
    };
    let mmap_size = match o.int("mmap_size") {
        Some(n) if n >= 0 => Some(n),
        Some(n) => return Err(EngineError::Option(format!("sqlite mmap_size must be >= 0, got {n}"))),
        None => None,
    };
    let path = args.file(FILE);
    let mut settings = BTreeMap::new();
    let writer = if args.mode == OpenMode::ReadWrite {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let c = Connection::open_with_flags(&path, flags).map_err(err)?;
        configure(&c, cache_kib, mmap_size)?;
        let want = o.text("journal_mode").unwrap_or_else(|| "wal".into());
        let got: String = c
            .pragma_update_and_check(None, "journal_mode", &want, |r| r.get::<_, String>(0))
            .map_err(err)?
            .to_lowercase();
        if got != want {
            return Err(EngineError::store(format!("sqlite: asked journal_mode={want}, got {got}")));
        }
        let (level, text) = match args.sync {
            SyncMode::None => ("OFF", "synchronous=OFF (no fsync while running; database file fsynced at close)"),
            SyncMode::Commit => ("FULL", "synchronous=FULL (fsync at every commit)"),
            SyncMode::Always => ("FULL", "synchronous=FULL (fsync at every commit; a batch is one transaction)"),
        };
        c.pragma_update(None, "synchronous", level).map_err(err)?;
        settings.insert("sync".into(), text.into());
        c.execute_batch("CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID").map_err(err)?;
        settings.insert("journal_mode".into(), got);
        Some(Mutex::new(c))
    } else {
        // Probe now so a bad read-only open fails at open, not at the first reader.
        let c = read_connection(&path, cache_kib, mmap_size)?;
        let mode: String = c.pragma_query_value(None, "journal_mode", |r| r.get(0)).map_err(err)?;
        settings.insert("journal_mode".into(), mode.to_lowercase());
        settings.insert("sync".into(), "read-only connections (SQLITE_OPEN_READ_ONLY)".into());
        None
    };
    settings.insert(
        "cache_size".into(),
        cache_kib.map(|k| format!("{k} KiB per connection")).unwrap_or_else(|| "library default".into()),
    );
    settings.insert(
        "mmap_size".into(),
        mmap_size.map(|n| format!("{n} bytes")).unwrap_or_else(|| "library default".into()),
    );
    settings
        .insert("write_batch".into(), "one BEGIN IMMEDIATE transaction per batch (INSERT OR REPLACE / DELETE)".into());
    settings.insert("reader".into(), "one read-only connection per reader, autocommit statements".into());
    Ok(Box::new(Sqlite { writer, path, cache_kib, mmap_size, sync: args.sync, settings, wrote: Default::default() }))
}

fn read_connection(path: &std::path::Path, cache_kib: Option<i64>, mmap_size: Option<i64>) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(path, flags).map_err(err)?;
    configure(&c, cache_kib, mmap_size)?;
    Ok(c)
}

impl Engine for Sqlite {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let Some(w) = &self.writer else {
            return Err(EngineError::store("sqlite: opened read-only"));
        };
        self.wrote.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut c = w.lock().map_err(|_| EngineError::store("sqlite: writer lock poisoned"))?;
        let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
        {
            let mut put = tx.prepare_cached("INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)").map_err(err)?;
            let mut del = tx.prepare_cached("DELETE FROM kv WHERE k = ?1").map_err(err)?;
            for op in batch {
                match op.value {
                    Some(v) => put.execute((op.key, v)).map_err(err)?,
                    None => del.execute([op.key]).map_err(err)?,
                };
            }
        }
        tx.commit().map_err(err)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(SqliteReader { conn: read_connection(&self.path, self.cache_kib, self.mmap_size)? }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        let Sqlite { writer, path, sync, wrote, .. } = *self;
        if let Some(w) = writer {
            let c = w.into_inner().map_err(|_| EngineError::store("sqlite: writer lock poisoned"))?;
            c.close().map_err(|(_, e)| err(e))?;
            if sync == SyncMode::None && wrote.into_inner() {
                // synchronous=OFF never fsyncs; closing the last connection checkpointed the WAL
                // into the database file, which is made durable here.
                std::fs::File::open(&path)?.sync_all()?;
            }
        }
        Ok(())
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    /// Page counts of the database file (the writer's connection, or a fresh read-only one)
    /// and the size of the WAL file beside it.
    fn internals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let pages = |c: &Connection| -> Option<[(&'static str, f64); 3]> {
            let get = |p: &str| c.pragma_query_value(None, p, |r| r.get::<_, i64>(0)).ok().map(|n| n as f64);
            Some([
                ("sqlite.page_size", get("page_size")?),
                ("sqlite.page_count", get("page_count")?),
                ("sqlite.freelist_count", get("freelist_count")?),
            ])
        };
        let found = match &self.writer {
            Some(w) => w.lock().ok().and_then(|c| pages(&c)),
            None => read_connection(&self.path, None, None).ok().and_then(|c| pages(&c)),
        };
        for (name, n) in found.into_iter().flatten() {
            out.insert(name.to_string(), n);
        }
        if let Ok(m) = std::fs::metadata(wal_path(&self.path)) {
            out.insert("sqlite.wal_bytes".into(), m.len() as f64);
        }
        out
    }

    /// WAL mode: checkpoint every frame into the database file and truncate the WAL. Other
    /// journal modes write the database file at each commit: nothing is left to settle.
    fn settle(&mut self) -> Result<String> {
        let mode = self.settings.get("journal_mode").cloned().unwrap_or_default();
        let Some(w) = &self.writer else {
            return Ok(format!("read-only connections (journal_mode={mode}): nothing to checkpoint"));
        };
        if mode != "wal" {
            return Ok(format!("journal_mode={mode} writes the database file at each commit: nothing to checkpoint"));
        }
        let c = w.lock().map_err(|_| EngineError::store("sqlite: writer lock poisoned"))?;
        let (busy, log, done): (i64, i64, i64) = c
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(err)?;
        if busy != 0 {
            return Err(EngineError::store(format!(
                "sqlite: wal_checkpoint(TRUNCATE) was blocked by a reader ({done} of {log} frames checkpointed)"
            )));
        }
        Ok(format!("checkpointed {done} WAL frames into the database file and truncated the WAL (PRAGMA wal_checkpoint(TRUNCATE))"))
    }
}

/// SQLite's WAL file: the database path with `-wal` appended.
fn wal_path(db: &std::path::Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

/// A connection of its own; every statement is its own read transaction, so `refresh` has
/// nothing to do.
struct SqliteReader {
    conn: Connection,
}

impl Reader for SqliteReader {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut stmt = self.conn.prepare_cached("SELECT v FROM kv WHERE k = ?1").map_err(err)?;
        let mut rows = stmt.query([key]).map_err(err)?;
        match rows.next().map_err(err)? {
            Some(row) => {
                copy_value(row.get_ref(0).map_err(err)?, out)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        if limit == 0 {
            return Ok(0);
        }
        let limit_sql = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt;
        let mut rows = match start {
            Some(s) => {
                stmt =
                    self.conn.prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2").map_err(err)?;
                stmt.query((s, limit_sql)).map_err(err)?
            }
            None => {
                stmt = self.conn.prepare_cached("SELECT k, v FROM kv ORDER BY k LIMIT ?1").map_err(err)?;
                stmt.query([limit_sql]).map_err(err)?
            }
        };
        let mut n = 0;
        while let Some(row) = rows.next().map_err(err)? {
            let k = blob(row.get_ref(0).map_err(err)?)?;
            let v = blob(row.get_ref(1).map_err(err)?)?;
            n += 1;
            if !visit(k, v) {
                break;
            }
        }
        Ok(n)
    }
}

/// A stored key or value: always a BLOB (an empty one may come back as a zero-length BLOB).
fn blob(value: ValueRef<'_>) -> Result<&[u8]> {
    match value {
        ValueRef::Blob(b) => Ok(b),
        ValueRef::Null => Ok(&[]),
        other => Err(EngineError::store(format!("sqlite: expected a BLOB, found {:?}", other.data_type()))),
    }
}

fn copy_value(value: ValueRef<'_>, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(blob(value)?);
    Ok(())
}
