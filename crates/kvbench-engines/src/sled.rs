//! `sled`: the pure-Rust embedded store (crate `sled`, its last stable release), its default
//! tree in the job directory. **Unmaintained**: no stable release since 2021, and upstream has
//! open advisories; measured because users still pick it, and said in `list` and settings.
//!
//! Each write batch is one `apply_batch` (atomic); a durable commit adds `flush`, which writes
//! and fsyncs sled's log. Readers share the tree (sled reads need no transaction).

use std::collections::BTreeMap;

use kvbench_core::engine::*;

const UNMAINTAINED: &str = "unmaintained upstream (last stable release 2021, open advisories); measured anyway";

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "sled",
    "sled (pure Rust, UNMAINTAINED since 2021): lock-free B-link tree over a log-structured store",
    Capabilities { read_only_open: false, ..crate::ORDERED_STORE },
    &[
        OptionSpec {
            name: "cache_capacity",
            kind: OptionKind::Int,
            default: "",
            doc: "sled's page cache in bytes, e.g. 64m (default: the library's, 1 GiB)",
        },
        OptionSpec {
            name: "flush_every_ms",
            kind: OptionKind::Int,
            default: "500",
            doc: "sled's background flush period in ms, 0 = off (sled's default: 500)",
        },
    ],
    || format!("{} (unmaintained)", env!("KVB_CRATE_VERSION_SLED")),
    open,
);

fn err(e: impl std::fmt::Display) -> EngineError {
    EngineError::Store(format!("sled: {e}"))
}

pub struct Sled {
    db: ::sled::Db,
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
    settings.insert("reader".into(), "shares the tree; each read sees the latest data".into());
    settings.insert("maintenance".into(), UNMAINTAINED.into());
    Ok(Box::new(Sled { db, sync: args.sync, settings }))
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

    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush().map_err(err)?;
        Ok(())
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
