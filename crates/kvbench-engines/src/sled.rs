//! `sled`: the pure-Rust embedded store (crate `sled`, its last stable release), its default
//! tree in the job directory. **Unmaintained**: no stable release since 2021, and upstream has
//! open advisories; measured because users still pick it, and said in `list` and settings.
//!
//! Each write batch is one `apply_batch` (atomic); a durable commit adds `flush`, which writes
//! and fsyncs sled's log. Readers share the tree (sled reads need no transaction).

use std::collections::BTreeMap;

use kvbench_model::engine::*;

const UNMAINTAINED: &str = "unmaintained upstream (last stable release 2021, open advisories); measured anyway";

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "sled",
    "sled (pure Rust, UNMAINTAINED since 2021): lock-free B-link tree over a log-structured store",
    Capabilities { read_only_open: false, ..crate::ORDERED_STORE },
    &[
        OptionSpec::int("cache_capacity", "", "sled's page cache in bytes, e.g. 64m (default: the library's, 1 GiB)"),
        OptionSpec::int("flush_every_ms", "500", "sled's background flush period in ms, 0 = off (sled's default: 500)"),
    ],
    || format!("{} (unmaintained)", env!("KVB_CRATE_VERSION_SLED")),
    open,
);

fn err(error: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("sled: {error}"))
}

pub struct Sled {
    db: ::sled::Db,
    dir: std::path::PathBuf,
    sync: SyncMode,
    settings: BTreeMap<String, String>,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    if args.mode != OpenMode::ReadWrite {
        return Err(EngineError::Unsupported(format!("sled has no {:?} open", args.mode)));
    }
    let o = args.options;
    let mut cfg = ::sled::Config::new().path(args.dir);
    let mut settings = BTreeMap::new();
    match o.int("cache_capacity") {
        Some(n) if n > 0 => {
            cfg = cfg.cache_capacity(n as u64);
            settings.insert("cache_capacity".into(), format!("{n} bytes"));
        }
        Some(n) => {
            return Err(EngineError::Option(format!("sled cache_capacity must be positive bytes, got {n}")));
        }
        None => {
            settings.insert("cache_capacity".into(), "library default (1 GiB)".into());
        }
    }
    let every = match o.int("flush_every_ms").unwrap_or(500) {
        n if n < 0 => return Err(EngineError::Option(format!("sled flush_every_ms must be >= 0, got {n}"))),
        0 => None,
        n => Some(n as u64),
    };
    cfg = cfg.flush_every_ms(every);
    let db = cfg.open().map_err(err)?;
    let sync = match args.sync {
        SyncMode::None => "no flush at commit (sled's background flush only; flush at close)",
        _ => "flush() after every batch (sled's log written and fsynced before the write returns)",
    };
    settings.insert("sync".into(), sync.into());
    let every = every.map(|n| format!("{n} ms")).unwrap_or_else(|| "off".into());
    settings.insert("flush_every_ms".into(), every);
    settings.insert("write_batch".into(), "one atomic apply_batch per batch".into());
    settings.insert("close".into(), "flush, then wait until sled's background threads release the file lock".into());
    settings.insert("reader".into(), "shares the tree; each read sees the latest data".into());
    settings.insert("maintenance".into(), UNMAINTAINED.into());
    Ok(Box::new(Sled { db, dir: args.dir.to_path_buf(), sync: args.sync, settings }))
}

/// How long a close waits for sled's background threads to let go of the file lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Wait until `file`'s exclusive lock (sled's, taken with flock) can be taken, then let it go.
fn wait_unlocked(file: &std::path::Path, limit: std::time::Duration) -> Result<()> {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(file) else { return Ok(()) };
    let start = std::time::Instant::now();
    loop {
        // SAFETY: flock on a descriptor this function owns; it is released when `f` is dropped.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        if start.elapsed() > limit {
            let why = format!("sled: {} still locked {} s after close", file.display(), limit.as_secs());
            return Err(EngineError::store(why));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

impl Engine for Sled {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut b = ::sled::Batch::default();
        for w in batch {
            match w.value {
                Some(v) => b.insert(w.key, v),
                None => b.remove(w.key),
            }
        }
        self.db.apply_batch(b).map_err(err)?;
        if self.sync != SyncMode::None {
            self.db.flush().map_err(err)?;
        }
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(SledReader { tree: &self.db }))
    }

    /// Flushes, then returns once the database's file lock is free: sled's background threads
    /// hold it for a while after the last handle is dropped, and a reopen before then fails.
    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush().map_err(err)?;
        let file = self.dir.join("db");
        drop(self);
        wait_unlocked(&file, LOCK_WAIT)
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn internals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        if let Ok(n) = self.db.size_on_disk() {
            out.insert("sled.size_on_disk".into(), n as f64);
        }
        out
    }
}

struct SledReader<'a> {
    tree: &'a ::sled::Tree,
}

impl Reader for SledReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        Ok(crate::copy_found(self.tree.get(key).map_err(err)?, out))
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let iter = match start {
            Some(s) => self.tree.range::<&[u8], _>(s..),
            None => self.tree.iter(),
        };
        crate::visit_pairs(iter.map(|item| item.map_err(err)), limit, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store closed and opened again at once, as a phase with `cache = "reopen"` does: sled's
    /// background threads held the file lock past the close and the reopen failed now and then.
    #[test]
    fn regression_a_closed_sled_reopens_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let options = Options::parse("sled", DESCRIPTOR.options, &BTreeMap::new()).unwrap();
        let args = OpenArgs::new(tmp.path(), &options);
        let value = [7u8; 1000];
        for round in 0..20u32 {
            let e = open(&args).unwrap_or_else(|e| panic!("open {round}: {e}"));
            let keys: Vec<[u8; 8]> = (0..2000u64).map(|k| (u64::from(round) << 32 | k).to_be_bytes()).collect();
            let batch: Vec<WriteOp<'_>> = keys.iter().map(|k| WriteOp { key: k, value: Some(&value) }).collect();
            batch.chunks(100).for_each(|b| e.write(b).unwrap());
            e.close().unwrap();
        }
    }
}
