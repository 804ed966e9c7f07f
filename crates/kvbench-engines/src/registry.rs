//! Every engine kvbench knows, one line each. An engine that was not built (feature off or
//! library missing at build time) still has its line, saying why and how to get it.

use kvbench_core::engine::{EngineDescriptor, StartServer};

pub enum Entry {
    Ready(&'static EngineDescriptor),
    Missing { name: &'static str, why: String },
}

impl Entry {
    pub fn name(&self) -> &'static str {
        match self {
            Entry::Ready(d) => d.name,
            Entry::Missing { name, .. } => name,
        }
    }
}

/// `entry!(name, "feature", cfg_flag, module)`: the engine's descriptor when it was built,
/// otherwise the reason build.rs recorded. `module` may be a path (`tokyocabinet::hash`) when
/// one module holds several engines of a library.
macro_rules! entry {
    ($name:literal, $feat:literal, $cfg:ident, $($module:ident)::+) => {{
        #[cfg(all(feature = $feat, $cfg))]
        let e = Entry::Ready(&crate::$($module)::+::DESCRIPTOR);
        #[cfg(not(feature = $feat))]
        let e = Entry::Missing { name: $name, why: concat!("built without cargo feature `", $feat, "`").into() };
        #[cfg(all(feature = $feat, not($cfg)))]
        let e = Entry::Missing {
            name: $name,
            why: option_env!(concat!("KVB_MISSING_", $feat)).unwrap_or("library not found at build time").into(),
        };
        e
    }};
}

/// `server!(name, "feature", module)`: a server engine (its client is Rust code, its server a
/// system binary started at run time), built whenever its feature is on.
macro_rules! server {
    ($name:literal, $feat:literal, $module:ident) => {{
        #[cfg(feature = $feat)]
        let e = Entry::Ready(&crate::$module::DESCRIPTOR);
        #[cfg(not(feature = $feat))]
        let e = Entry::Missing { name: $name, why: concat!("built without cargo feature `", $feat, "`").into() };
        e
    }};
}

pub fn entries() -> Vec<Entry> {
    vec![
        Entry::Ready(&crate::memory::DESCRIPTOR),
        entry!("lmdb", "lmdb", kvb_lmdb, lmdb),
        entry!("rocksdb", "rocksdb", kvb_rocksdb, rocksdb),
        entry!("leveldb", "leveldb", kvb_leveldb, leveldb),
        entry!("sqlite", "sqlite", kvb_sqlite, sqlite),
        entry!("tokyocabinet-hash", "tokyocabinet", kvb_tokyocabinet, tokyocabinet::hash),
        entry!("tokyocabinet-btree", "tokyocabinet", kvb_tokyocabinet, tokyocabinet::btree),
        entry!("kyotocabinet-hash", "kyotocabinet", kvb_kyotocabinet, kyotocabinet::hash),
        entry!("kyotocabinet-tree", "kyotocabinet", kvb_kyotocabinet, kyotocabinet::tree),
        server!("memcached", "memcached", memcached),
        server!("redis", "redis", redis),
        server!("redis-cluster", "redis-cluster", rediscluster),
        server!("postgres", "postgres", postgres),
        entry!("qdbm-depot", "qdbm", kvb_qdbm, qdbm::depot),
        entry!("qdbm-curia", "qdbm", kvb_qdbm, qdbm::curia),
        entry!("qdbm-villa", "qdbm", kvb_qdbm, qdbm::villa),
        entry!("tinycdb", "tinycdb", kvb_tinycdb, tinycdb),
        entry!("gdbm", "gdbm", kvb_gdbm, gdbm),
        entry!("bdb-btree", "bdb", kvb_bdb, bdb::btree),
        entry!("bdb-hash", "bdb", kvb_bdb, bdb::hash),
        entry!("tkrzw-hash", "tkrzw", kvb_tkrzw, tkrzw::hash),
        entry!("tkrzw-tree", "tkrzw", kvb_tkrzw, tkrzw::tree),
        entry!("http-rocksdb", "rocksdb", kvb_rocksdb, http::rocksdb),
        entry!("http-lmdb", "lmdb", kvb_lmdb, http::lmdb),
    ]
}

pub fn find(name: &str) -> Option<Entry> {
    entries().into_iter().find(|e| e.name() == name)
}

/// The server an engine of another runtime needs (its client lives in the Go or Python worker,
/// its server is started from Rust): start it once per run like a Rust server engine's and give
/// the job its `url` and `token`. None: the engine needs no server kvbench starts.
pub fn server_for(engine: &str) -> Option<StartServer> {
    match engine {
        "go-etcd" => Some(crate::etcdcluster::start_server),
        _ => None,
    }
}
