//! `rocksdb`: RocksDB through the `rocksdb` crate, linked against the system librocksdb (see
//! `.cargo/config.toml`; never the crate's bundled build).
//!
//! One database in the job directory, default column family. Each write batch is one
//! `WriteBatch` (a load batch built in place, [`RocksWriter`]); `sync` maps to
//! `WriteOptions::set_sync`. Multi-get is RocksDB's batched
//! `MultiGet` (one call for all keys). Opens read-write, read-only, or as a secondary instance
//! (a follower with its own directory `secondary/` inside the job directory, caught up with the
//! primary at open). With `write = "optimistic-transaction"` the store is an
//! `OptimisticTransactionDB` and each write batch one optimistic transaction (a snapshot taken
//! at its start, its keys tracked and checked at commit), as redb's harness writes RocksDB.

use std::collections::BTreeMap;

use kvbench_model::engine::*;
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType, OptimisticTransactionDB,
    OptimisticTransactionOptions, WriteBatch, WriteOptions, DB, DEFAULT_COLUMN_FAMILY_NAME,
};

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "rocksdb",
    "RocksDB (system librocksdb via the rust-rocksdb crate): LSM tree",
    Capabilities { multi_get: true, secondary_open: true, ..crate::ORDERED_STORE },
    &[
        OptionSpec::one_of("compression", &["none", "snappy", "lz4", "zstd"], "snappy", "block compression of SST files"),
        OptionSpec::int("block_cache", "", "LRU block cache capacity in bytes (default: the library's own block cache)"),
        OptionSpec::int("bloom_bits", "0", "bloom filter bits per key (0 = no filter)"),
        OptionSpec::int("write_buffer", "", "memtable size in bytes (default: the library's, 64 MiB)"),
        OptionSpec::bool("direct_reads", "false", "use_direct_reads: read SST files with O_DIRECT, past the page cache"),
        OptionSpec::bool("direct_io_for_flush_and_compaction", "false", "use_direct_io_for_flush_and_compaction: flushes and compactions read and write with O_DIRECT"),
        OptionSpec::bool("wal", "true", "write the WAL (false: WriteOptions.disableWAL, db_bench's --disable_wal; writes since the last flush are lost in a crash)"),
        OptionSpec::bool("pipelined_write", "false", "enable_pipelined_write: the WAL and memtable writes of successive write groups overlap (db_bench's default is true)"),
        OptionSpec::one_of("write", &["batch", "optimistic-transaction"], "batch", "how a write batch is applied: one WriteBatch, or one optimistic transaction of an OptimisticTransactionDB (a snapshot at its start, its keys checked at commit: redb's harness); read-write only"),
        OptionSpec::bool("statistics", "true", "Options.statistics: keep RocksDB's tickers (compaction, flush, WAL and user bytes written) for the row's internals"),
        OptionSpec::int("block_size", "", "BlockBasedTableOptions.block_size in bytes (default: the library's, 4 KiB; benchmark.sh 8 KiB)"),
        OptionSpec::bool("cache_index_and_filter_blocks", "false", "BlockBasedTableOptions.cache_index_and_filter_blocks: index and filter blocks in the block cache"),
        OptionSpec::bool("pin_l0_filter_and_index_blocks_in_cache", "false", "BlockBasedTableOptions.pin_l0_filter_and_index_blocks_in_cache (benchmark.sh: true)"),
        OptionSpec::one_of("memtable", &["skip_list", "vector"], "skip_list", "memtable representation (benchmark.sh's fillseq: vector, which sorts at flush)"),
        OptionSpec::bool("allow_concurrent_memtable_write", "true", "allow_concurrent_memtable_write (benchmark.sh's fillseq: false; vector needs false)"),
        OptionSpec::int("max_background_jobs", "", "max_background_jobs: flush and compaction threads (library default 2; benchmark.sh 16)"),
        OptionSpec::int("max_write_buffer_number", "", "max_write_buffer_number: memtables held before writes stall (library default 2; benchmark.sh 8)"),
        OptionSpec::int("target_file_size_base", "", "target_file_size_base in bytes: SST file size at level 1 (library default 64 MiB; benchmark.sh 128 MiB)"),
        OptionSpec::int("max_bytes_for_level_base", "", "max_bytes_for_level_base in bytes: level 1's size (library default 256 MiB; benchmark.sh 1 GiB)"),
        OptionSpec::int("max_bytes_for_level_multiplier", "", "max_bytes_for_level_multiplier: each level's size over the one above (library default 10; benchmark.sh 8)"),
        OptionSpec::int("num_levels", "", "num_levels (library default 7; benchmark.sh 8)"),
        OptionSpec::int("level0_file_num_compaction_trigger", "", "level0_file_num_compaction_trigger: L0 files that start a compaction (library default 4; benchmark.sh 4)"),
        OptionSpec::int("level0_slowdown_writes_trigger", "", "level0_slowdown_writes_trigger: L0 files that slow writes (library default 20; benchmark.sh 20)"),
        OptionSpec::int("level0_stop_writes_trigger", "", "level0_stop_writes_trigger: L0 files that stop writes (library default 36; benchmark.sh 30)"),
        OptionSpec::int("bytes_per_sync", "", "bytes_per_sync: SST bytes written between background range syncs (library default 0, off; benchmark.sh 8 MiB)"),
        OptionSpec::int("max_open_files", "", "max_open_files (-1 keeps every SST open: benchmark.sh's --open_files=-1; library default -1)"),
        OptionSpec::int("delete_obsolete_files_period_micros", "", "delete_obsolete_files_period_micros (library default 6 h; benchmark.sh 60 Mi microseconds)"),
        OptionSpec::int("max_subcompactions", "", "max_subcompactions (library default 1; benchmark.sh 1)"),
        OptionSpec::bool("level_compaction_dynamic_level_bytes", "false", "level_compaction_dynamic_level_bytes (the library's default in 7.x is false; benchmark.sh: true)"),
    ],
    version,
    open,
);

/// The crate has no runtime version call, so this is the Debian package build.rs linked against.
fn version() -> String {
    let v = env!("KVB_PKG_VERSION_ROCKSDB");
    if v.is_empty() {
        "unknown (system librocksdb)".into()
    } else {
        v.to_string()
    }
}

thread_local! {
    /// This thread has turned RocksDB's perf context off (see [`perf_context_off`]).
    static PERF_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// RocksDB counts perf-context events (every memtable key comparison, every block read) on each
/// thread unless that thread sets its perf level lower; the library's default counts. kvbench
/// never reads them, and db_bench turns them off (`--perf_level=1`): counting cost 7 % of a
/// fillrandom's CPU here (docs/methodology.md, "db_bench beside kvbench"). The level is per
/// thread, so each thread that calls RocksDB sets it once.
fn perf_context_off() {
    PERF_OFF.with(|off| {
        if !off.get() {
            rocksdb::perf::set_perf_stats(rocksdb::perf::PerfStatsLevel::Disable);
            off.set(true);
        }
    });
}

fn err(error: rocksdb::Error) -> EngineError {
    EngineError::Store(format!("rocksdb: {error}"))
}

/// The database the row opened: a plain DB, or an OptimisticTransactionDB whose writes are
/// transactions. Everything else is the same calls on either (`on_db!`).
enum Handle {
    Plain(DB),
    Optimistic(OptimisticTransactionDB),
}

/// `$body` with `$d` bound to the handle's database, whichever kind it is.
macro_rules! on_db {
    ($handle:expr, $d:ident => $body:expr) => {
        match $handle {
            Handle::Plain($d) => $body,
            Handle::Optimistic($d) => $body,
        }
    };
}

pub struct Rocks {
    db: Handle,
    /// The options the database was opened with: they hold its statistics object.
    opts: rocksdb::Options,
    mode: OpenMode,
    write_opts: WriteOptions,
    sync: SyncMode,
    settings: BTreeMap<String, String>,
    /// Something was written since open: only then does close force data to disk (an
    /// open-per-operation read must not pay an fsync at every close).
    wrote: std::sync::atomic::AtomicBool,
}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    let o = args.options;
    let mut settings = BTreeMap::new();
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(args.mode == OpenMode::ReadWrite);

    let compression = o.text("compression").unwrap_or_else(|| "snappy".into());
    opts.set_compression_type(match compression.as_str() {
        "none" => DBCompressionType::None,
        "snappy" => DBCompressionType::Snappy,
        "lz4" => DBCompressionType::Lz4,
        "zstd" => DBCompressionType::Zstd,
        other => return Err(EngineError::Option(format!("rocksdb compression `{other}`"))),
    });
    settings.insert("compression".into(), compression);

    let mut table = BlockBasedOptions::default();
    match o.int("block_cache") {
        Some(n) if n > 0 => {
            let cache = Cache::new_lru_cache(n as usize).map_err(err)?;
            table.set_block_cache(&cache);
            settings.insert("block_cache".into(), format!("{n} bytes LRU"));
        }
        Some(0) => {
            table.disable_cache();
            settings.insert("block_cache".into(), "disabled".into());
        }
        Some(n) => return Err(EngineError::Option(format!("rocksdb block_cache must be >= 0, got {n}"))),
        None => {
            settings.insert("block_cache".into(), "library default".into());
        }
    }
    match o.int("bloom_bits").unwrap_or(0) {
        0 => {
            settings.insert("bloom_filter".into(), "off".into());
        }
        n if n > 0 => {
            table.set_bloom_filter(n as f64, false);
            settings.insert("bloom_filter".into(), format!("{n} bits/key (full filter)"));
        }
        n => return Err(EngineError::Option(format!("rocksdb bloom_bits must be >= 0, got {n}"))),
    }
    table_tuning(&mut table, o, &mut settings)?;
    opts.set_block_based_table_factory(&table);
    tuning(&mut opts, o, &mut settings)?;
    direct_io(&mut opts, o, &mut settings);
    opts.set_enable_pipelined_write(o.bool("pipelined_write"));
    settings.insert("pipelined_write".into(), o.bool("pipelined_write").to_string());
    if o.bool("statistics") {
        opts.enable_statistics();
        settings.insert("statistics".into(), "on (tickers; the library's default stats level)".into());
    } else {
        settings.insert("statistics".into(), "off (no cumulative bytes in internals)".into());
    }
    match o.int("write_buffer") {
        Some(n) if n > 0 => {
            opts.set_write_buffer_size(n as usize);
            settings.insert("write_buffer".into(), format!("{n} bytes"));
        }
        Some(n) => return Err(EngineError::Option(format!("rocksdb write_buffer must be positive, got {n}"))),
        None => {
            settings.insert("write_buffer".into(), "library default (64 MiB)".into());
        }
    }

    // The default column family is named at open, with the same options, so that its handle
    // exists: the batched MultiGet takes one (DB::open gives none).
    let cfs = || [ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, opts.clone())];
    let optimistic = o.text("write").as_deref() == Some("optimistic-transaction");
    if optimistic && args.mode != OpenMode::ReadWrite {
        return Err(EngineError::Option(format!(
            "rocksdb write = \"optimistic-transaction\" opens read-write only (asked: {:?})",
            args.mode
        )));
    }
    let db = match args.mode {
        OpenMode::ReadWrite if optimistic => {
            Handle::Optimistic(OptimisticTransactionDB::open_cf_descriptors(&opts, args.dir, cfs()).map_err(err)?)
        }
        OpenMode::ReadWrite => Handle::Plain(DB::open_cf_descriptors(&opts, args.dir, cfs()).map_err(err)?),
        OpenMode::ReadOnly => {
            Handle::Plain(DB::open_cf_descriptors_read_only(&opts, args.dir, cfs(), false).map_err(err)?)
        }
        OpenMode::Secondary => {
            let secondary = args.file("secondary");
            std::fs::create_dir_all(&secondary)?;
            // A secondary instance must keep every table file open (RocksDB requires -1).
            opts.set_max_open_files(-1);
            let cfs = [ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, opts.clone())];
            let db = DB::open_cf_descriptors_as_secondary(&opts, args.dir, &secondary, cfs).map_err(err)?;
            db.try_catch_up_with_primary().map_err(err)?;
            Handle::Plain(db)
        }
    };
    settings.insert(
        "open_mode".into(),
        match args.mode {
            OpenMode::ReadWrite => "read-write",
            OpenMode::ReadOnly => "read-only (DB::open_for_read_only)",
            OpenMode::Secondary => "secondary (DB::open_as_secondary, caught up at open)",
        }
        .into(),
    );

    let mut write_opts = WriteOptions::default();
    let sync = args.sync;
    write_opts.set_sync(sync != SyncMode::None);
    if !o.bool("wal") && sync != SyncMode::None {
        return Err(EngineError::Option(format!(
            "rocksdb wal = false needs sync = \"none\" (got {sync:?}): RocksDB makes a write durable by syncing its WAL"
        )));
    }
    write_opts.disable_wal(!o.bool("wal"));
    settings.insert("wal".into(), if o.bool("wal") { "on" } else { "off (WriteOptions.disableWAL)" }.into());
    settings.insert(
        "sync".into(),
        match sync {
            SyncMode::None => "WriteOptions.sync=false (WAL fsynced only at close)",
            SyncMode::Commit | SyncMode::Always => "WriteOptions.sync=true (WAL fsync per write batch)",
        }
        .into(),
    );
    let batches = if optimistic {
        "one optimistic transaction per batch (OptimisticTransactionDB::transaction_opt with set_snapshot(true), put/delete, commit)"
    } else {
        "one WriteBatch per batch; a load batch built in place in the WriteBatch format and handed over with WriteBatch::from_data"
    };
    settings.insert("write_batch".into(), batches.into());
    settings.insert("multi_get".into(), "DB::batched_multi_get_cf (RocksDB batched MultiGet)".into());
    settings.insert("binding".into(), "rust-rocksdb 0.20.1".into());
    settings.insert("perf_context".into(), "off (PerfLevel::kDisable on each calling thread, as db_bench)".into());
    Ok(Box::new(Rocks { db, opts, mode: args.mode, write_opts, sync, settings, wrote: Default::default() }))
}

/// An integer option within `lo..=hi`, or None when the row leaves it to the library; said in
/// `settings` either way.
fn int_in(
    options: &Options,
    name: &str,
    (lo, hi): (i64, i64),
    settings: &mut BTreeMap<String, String>,
) -> Result<Option<i64>> {
    match options.int(name) {
        Some(n) if (lo..=hi).contains(&n) => {
            settings.insert(name.into(), n.to_string());
            Ok(Some(n))
        }
        Some(n) => Err(EngineError::Option(format!("rocksdb {name} = {n} is out of range (allowed: {lo} to {hi})"))),
        None => {
            settings.insert(name.into(), "library default".into());
            Ok(None)
        }
    }
}

/// A boolean option, said in `settings`.
fn flag(options: &Options, name: &str, settings: &mut BTreeMap<String, String>) -> bool {
    let on = options.bool(name);
    settings.insert(name.into(), on.to_string());
    on
}

const GIB: i64 = 1 << 30;

/// The block-based table's layout options (RocksDB's tools/benchmark.sh sets each).
fn table_tuning(
    table: &mut BlockBasedOptions,
    options: &Options,
    settings: &mut BTreeMap<String, String>,
) -> Result<()> {
    if let Some(n) = int_in(options, "block_size", (256, GIB), settings)? {
        table.set_block_size(n as usize);
    }
    table.set_cache_index_and_filter_blocks(flag(options, "cache_index_and_filter_blocks", settings));
    table.set_pin_l0_filter_and_index_blocks_in_cache(flag(
        options,
        "pin_l0_filter_and_index_blocks_in_cache",
        settings,
    ));
    Ok(())
}

/// The LSM tree's shape, background work and memtable options (RocksDB's tools/benchmark.sh
/// sets each; docs/engines/rocksdb.md). An option the row leaves unset keeps the library's value.
fn tuning(db_options: &mut rocksdb::Options, options: &Options, settings: &mut BTreeMap<String, String>) -> Result<()> {
    const BIG: i64 = 1 << 50;
    let mut int = |name: &str, range: (i64, i64)| int_in(options, name, range, settings);
    if let Some(n) = int("max_background_jobs", (1, 1024))? {
        db_options.set_max_background_jobs(n as i32);
    }
    if let Some(n) = int("max_write_buffer_number", (2, 1024))? {
        db_options.set_max_write_buffer_number(n as i32);
    }
    if let Some(n) = int("target_file_size_base", (64 << 10, BIG))? {
        db_options.set_target_file_size_base(n as u64);
    }
    if let Some(n) = int("max_bytes_for_level_base", (64 << 10, BIG))? {
        db_options.set_max_bytes_for_level_base(n as u64);
    }
    if let Some(n) = int("max_bytes_for_level_multiplier", (2, 1000))? {
        db_options.set_max_bytes_for_level_multiplier(n as f64);
    }
    if let Some(n) = int("num_levels", (2, 64))? {
        db_options.set_num_levels(n as i32);
    }
    if let Some(n) = int("level0_file_num_compaction_trigger", (1, GIB))? {
        db_options.set_level_zero_file_num_compaction_trigger(n as i32);
    }
    if let Some(n) = int("level0_slowdown_writes_trigger", (1, GIB))? {
        db_options.set_level_zero_slowdown_writes_trigger(n as i32);
    }
    if let Some(n) = int("level0_stop_writes_trigger", (1, GIB))? {
        db_options.set_level_zero_stop_writes_trigger(n as i32);
    }
    if let Some(n) = int("bytes_per_sync", (0, BIG))? {
        db_options.set_bytes_per_sync(n as u64);
    }
    if let Some(n) = int("max_open_files", (-1, i32::MAX as i64))? {
        db_options.set_max_open_files(n as i32);
    }
    if let Some(n) = int("delete_obsolete_files_period_micros", (0, BIG))? {
        db_options.set_delete_obsolete_files_period_micros(n as u64);
    }
    if let Some(n) = int("max_subcompactions", (1, 1024))? {
        db_options.set_max_subcompactions(n as u32);
    }
    db_options.set_level_compaction_dynamic_level_bytes(flag(
        options,
        "level_compaction_dynamic_level_bytes",
        settings,
    ));
    let concurrent = flag(options, "allow_concurrent_memtable_write", settings);
    let memtable = options.text("memtable").unwrap_or_else(|| "skip_list".into());
    if memtable == "vector" {
        if concurrent {
            // RocksDB refuses the pair at open with a less direct message.
            return Err(EngineError::Option(
                "rocksdb memtable = \"vector\" needs allow_concurrent_memtable_write = false (only the skip list takes concurrent writes)".into(),
            ));
        }
        db_options.set_memtable_factory(rocksdb::MemtableFactory::Vector);
    }
    db_options.set_allow_concurrent_memtable_write(concurrent);
    settings.insert("memtable".into(), memtable);
    Ok(())
}

/// O_DIRECT for user reads and for flush/compaction I/O, each as the row states it.
fn direct_io(db_options: &mut rocksdb::Options, options: &Options, settings: &mut BTreeMap<String, String>) {
    let on_off = |on: bool| if on { "on (O_DIRECT)" } else { "off (buffered)" }.to_string();
    let reads = options.bool("direct_reads");
    let background = options.bool("direct_io_for_flush_and_compaction");
    db_options.set_use_direct_reads(reads);
    db_options.set_use_direct_io_for_flush_and_compaction(background);
    settings.insert("direct_reads".into(), on_off(reads));
    settings.insert("direct_io_for_flush_and_compaction".into(), on_off(background));
}

/// Integer properties, read once per sample: (RocksDB's property, the name kvbench emits).
const INT_PROPERTIES: &[(&str, &str)] = &[
    ("rocksdb.estimate-pending-compaction-bytes", "rocksdb.compaction.pending_bytes"),
    ("rocksdb.num-running-compactions", "rocksdb.compaction.running"),
    ("rocksdb.num-running-flushes", "rocksdb.flush.running"),
    ("rocksdb.is-write-stopped", "rocksdb.write.stopped"),
    ("rocksdb.actual-delayed-write-rate", "rocksdb.write.delayed_rate"),
    ("rocksdb.cur-size-all-mem-tables", "rocksdb.memtable.bytes"),
    ("rocksdb.live-sst-files-size", "rocksdb.sst.live_bytes"),
    ("rocksdb.total-sst-files-size", "rocksdb.sst.total_bytes"),
    ("rocksdb.background-errors", "rocksdb.background_errors"),
];

/// Cumulative tickers of Options.statistics (since open): (ticker, the name kvbench emits).
const TICKERS: &[(&str, &str)] = &[
    ("rocksdb.compact.write.bytes", "rocksdb.compaction.bytes_written"),
    ("rocksdb.compact.read.bytes", "rocksdb.compaction.bytes_read"),
    ("rocksdb.flush.write.bytes", "rocksdb.flush.bytes_written"),
    ("rocksdb.wal.bytes", "rocksdb.wal.bytes_written"),
    ("rocksdb.wal.synced", "rocksdb.wal.syncs"),
    ("rocksdb.bytes.written", "rocksdb.user.bytes_written"),
    ("rocksdb.stall.micros", "rocksdb.write.stall_micros"),
];

/// The tickers of a statistics dump (`NAME COUNT : N` lines; histograms have no COUNT field).
fn parse_tickers(dump: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in dump.lines() {
        let Some((name, count)) = line.split_once(" COUNT : ") else { continue };
        if let Some((_, emit)) = TICKERS.iter().find(|(t, _)| *t == name.trim()) {
            if let Ok(n) = count.trim().parse::<f64>() {
                out.insert(emit.to_string(), n);
            }
        }
    }
    out
}

/// How long `settle` waits for background compactions after its manual one.
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

impl Rocks {
    /// A batch as one optimistic transaction, as redb's harness writes: a snapshot at its
    /// start, each key tracked, the keys checked for conflicts at commit.
    fn transaction(&self, db: &OptimisticTransactionDB, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut txn_opts = OptimisticTransactionOptions::default();
        txn_opts.set_snapshot(true);
        let txn = db.transaction_opt(&self.write_opts, &txn_opts);
        for w in batch {
            match w.value {
                Some(v) => txn.put(w.key, v),
                None => txn.delete(w.key),
            }
            .map_err(err)?;
        }
        txn.commit().map_err(err)
    }
}

impl Engine for Rocks {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        if self.mode != OpenMode::ReadWrite {
            return Err(EngineError::store(format!("rocksdb: opened {:?}, cannot write", self.mode)));
        }
        self.wrote.store(true, std::sync::atomic::Ordering::Relaxed);
        perf_context_off();
        let db = match &self.db {
            Handle::Plain(db) => db,
            Handle::Optimistic(db) => return self.transaction(db, batch),
        };
        // One write: RocksDB's Put/Delete, which builds its batch of one on the stack in one
        // allocation, as db_bench's reused batch costs none; a WriteBatch here costs two
        // allocations and a regrowth per write.
        if let [w] = batch {
            return match w.value {
                Some(v) => db.put_opt(w.key, v, &self.write_opts),
                None => db.delete_opt(w.key, &self.write_opts),
            }
            .map_err(err);
        }
        let mut wb = WriteBatch::default();
        for w in batch {
            match w.value {
                Some(v) => wb.put(w.key, v),
                None => wb.delete(w.key),
            }
        }
        db.write_opt(wb, &self.write_opts).map_err(err)
    }

    fn writer(&self) -> Result<Option<Box<dyn Writer + '_>>> {
        let w = RocksWriter { rocks: self, rep: Vec::new(), key: Vec::new(), value: Vec::new() };
        Ok(Some(Box::new(w)))
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(RocksReader { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        if self.mode == OpenMode::ReadWrite
            && self.sync == SyncMode::None
            && self.wrote.load(std::sync::atomic::Ordering::Relaxed)
        {
            // Without per-write sync the WAL sits in the page cache; make it durable now.
            on_db!(&self.db, d => d.flush_wal(true)).map_err(err)?;
        }
        drop(self);
        Ok(())
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn internals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (property, emit) in INT_PROPERTIES {
            if let Ok(Some(n)) = on_db!(&self.db, d => d.property_int_value(*property)) {
                out.insert(emit.to_string(), n as f64);
            }
        }
        // A string property (RocksDB has no integer form of it).
        if let Ok(Some(n)) = on_db!(&self.db, d => d.property_value("rocksdb.num-files-at-level0")) {
            if let Ok(n) = n.trim().parse::<f64>() {
                out.insert("rocksdb.l0.files".into(), n);
            }
        }
        if let Some(dump) = self.opts.get_statistics() {
            out.extend(parse_tickers(&dump));
        }
        out
    }

    fn settle(&mut self) -> Result<String> {
        if self.mode != OpenMode::ReadWrite {
            return Err(EngineError::Unsupported(format!("rocksdb opened {:?}: nothing to settle", self.mode)));
        }
        let start = std::time::Instant::now();
        on_db!(&self.db, d => d.flush()).map_err(err)?;
        on_db!(&self.db, d => d.flush_wal(true)).map_err(err)?;
        // A manual compaction of the whole key range; it returns when that compaction is done.
        on_db!(&self.db, d => d.compact_range::<&[u8], &[u8]>(None, None));
        let compacted = start.elapsed();
        let int = |name: &str| on_db!(&self.db, d => d.property_int_value(name)).ok().flatten();
        let pending = || int("rocksdb.estimate-pending-compaction-bytes");
        let running = || int("rocksdb.num-running-compactions");
        while (pending() != Some(0) || running() != Some(0)) && start.elapsed() < SETTLE_WAIT {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let level0 =
            on_db!(&self.db, d => d.property_value("rocksdb.num-files-at-level0")).ok().flatten().unwrap_or_default();
        let live = int("rocksdb.live-sst-files-size").unwrap_or(0);
        let waited = start.elapsed() - compacted;
        let state = match (pending(), running()) {
            (Some(0), Some(0)) => "no compaction pending".to_string(),
            (p, r) => format!(
                "gave up waiting after {} s: {} bytes of compaction pending, {} running",
                SETTLE_WAIT.as_secs(),
                p.unwrap_or(0),
                r.unwrap_or(0)
            ),
        };
        Ok(format!(
            "flushed the memtables and the WAL, compacted the whole key range in {:.1} s, waited {:.1} s more: {state}; {} L0 files, {live} bytes of live SST files",
            compacted.as_secs_f64(),
            waited.as_secs_f64(),
            level0.trim()
        ))
    }
}

/// RocksDB's WriteBatch representation (`write_batch.cc`): a 12-byte header (fixed64 sequence,
/// set by the write; fixed32 count), then per put the tag 0x1 and the key and value, each
/// prefixed by its varint32 length.
mod rep {
    const HEADER: usize = 12;
    const PUT: u8 = 0x1;

    /// Start a batch in `buf` (cleared first).
    pub fn start(buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(HEADER, 0);
    }

    fn varint32(buf: &mut Vec<u8>, mut value: u32) {
        while value >= 0x80 {
            buf.push(value as u8 | 0x80);
            value >>= 7;
        }
        buf.push(value as u8);
    }

    /// Append one put; None when the key or value is 4 GiB or more (RocksDB's limit).
    pub fn put(buf: &mut Vec<u8>, key: &[u8], value: &[u8]) -> Option<()> {
        let (k, v) = (u32::try_from(key.len()).ok()?, u32::try_from(value.len()).ok()?);
        buf.push(PUT);
        varint32(buf, k);
        buf.extend_from_slice(key);
        varint32(buf, v);
        buf.extend_from_slice(value);
        Some(())
    }

    /// Write the count of records into the header.
    pub fn finish(buf: &mut [u8], count: u32) {
        buf[8..HEADER].copy_from_slice(&count.to_le_bytes());
    }
}

/// One thread's writes. A load batch is streamed: each row is derived and appended to one
/// reused buffer in RocksDB's WriteBatch representation, which RocksDB copies once
/// (`WriteBatch::from_data`), where a `WriteBatch` built by `put` regrows from empty on every
/// write and the rows were derived into buffers of their own first (docs/decisions.md,
/// "Engines one by one").
struct RocksWriter<'a> {
    rocks: &'a Rocks,
    rep: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Writer for RocksWriter<'_> {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.rocks.write(batch)
    }

    /// A transaction's writes go through it: only a plain DB takes a batch built in place.
    fn streams_rows(&self) -> bool {
        self.rocks.mode == OpenMode::ReadWrite && matches!(self.rocks.db, Handle::Plain(_))
    }

    fn write_rows(&mut self, rows: usize, row: &mut RowFn<'_>) -> Result<()> {
        let (k, v) = (&mut self.key, &mut self.value);
        let count =
            u32::try_from(rows).map_err(|_| EngineError::store(format!("rocksdb: a batch of {rows} records")))?;
        rep::start(&mut self.rep);
        for i in 0..rows {
            row(i, k, v);
            rep::put(&mut self.rep, k, v)
                .ok_or_else(|| EngineError::store("rocksdb: a key or value of 4 GiB or more"))?;
        }
        rep::finish(&mut self.rep, count);
        self.rocks.wrote.store(true, std::sync::atomic::Ordering::Relaxed);
        perf_context_off();
        let Handle::Plain(db) = &self.rocks.db else {
            return Err(EngineError::store("rocksdb: a streamed batch needs a plain DB"));
        };
        db.write_opt(WriteBatch::from_data(&self.rep), &self.rocks.write_opts).map_err(err)
    }
}

/// Reads go straight to the DB and always see the latest writes, so `refresh` has nothing to do.
struct RocksReader<'a> {
    db: &'a Handle,
}

impl Reader for RocksReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        perf_context_off();
        out.clear();
        match on_db!(self.db, d => d.get_pinned(key)).map_err(err)? {
            Some(v) => {
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// RocksDB's batched MultiGet (one call for all keys, sorted and grouped by file inside
    /// RocksDB), not its per-key vector MultiGet.
    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        perf_context_off();
        out.clear();
        on_db!(self.db, d => {
            let cf = d
                .cf_handle(DEFAULT_COLUMN_FAMILY_NAME)
                .ok_or_else(|| EngineError::store("rocksdb: no default column family handle"))?;
            for r in d.batched_multi_get_cf(cf, keys, false) {
                out.push(r.map_err(err)?.map(|v| v.to_vec()));
            }
        });
        Ok(())
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        if limit == 0 {
            return Ok(0);
        }
        perf_context_off();
        on_db!(self.db, d => {
            let mut it = d.raw_iterator();
            match start {
                Some(s) => it.seek(s),
                None => it.seek_to_first(),
            }
            let mut n = 0;
            while it.valid() {
                let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
                n += 1;
                if !visit(k, v) || n >= limit {
                    return Ok(n);
                }
                it.next();
            }
            it.status().map_err(err)?;
            Ok(n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksdb::perf::{PerfContext, PerfMetric};

    /// Guards the perf-context fix: RocksDB's default perf level counts every key comparison
    /// on the writing thread, a cost db_bench does not pay.
    #[test]
    fn writes_and_reads_leave_rocksdb_perf_context_off() {
        let tmp = tempfile::tempdir().unwrap();
        let options = Options::parse("rocksdb", DESCRIPTOR.options, &BTreeMap::new()).unwrap();
        let args = OpenArgs { expected_records: 1000, expected_bytes: 100_000, ..OpenArgs::new(tmp.path(), &options) };
        let e = open(&args).unwrap();
        let keys: Vec<Vec<u8>> = (0..1000u32).map(|i| (i.wrapping_mul(2_654_435_761)).to_be_bytes().to_vec()).collect();
        let mut perf = PerfContext::default();
        perf.reset();
        for k in &keys {
            e.write(&[WriteOp { key: k, value: Some(b"v") }]).unwrap();
        }
        let mut r = e.reader().unwrap();
        let mut buf = Vec::new();
        assert!(r.get(&keys[7], &mut buf).unwrap());
        assert_eq!(perf.metric(PerfMetric::UserKeyComparisonCount), 0, "perf context still counting");
    }

    /// benchmark.sh's options as a row sets them (text sizes as a scenario gives them).
    fn benchmark_sh_row() -> BTreeMap<String, serde_json::Value> {
        let pairs = [
            ("block_size", serde_json::json!("8k")),
            ("max_background_jobs", 16.into()),
            ("max_write_buffer_number", 8.into()),
            ("target_file_size_base", "128m".into()),
            ("max_bytes_for_level_base", "1g".into()),
            ("max_bytes_for_level_multiplier", 8.into()),
            ("num_levels", 8.into()),
            ("level0_file_num_compaction_trigger", 5.into()),
            ("level0_slowdown_writes_trigger", 21.into()),
            ("level0_stop_writes_trigger", 30.into()),
            ("bytes_per_sync", "8m".into()),
            ("max_open_files", (-1).into()),
            ("delete_obsolete_files_period_micros", 62_914_560.into()),
            ("max_subcompactions", 2.into()),
            ("level_compaction_dynamic_level_bytes", true.into()),
            ("pin_l0_filter_and_index_blocks_in_cache", true.into()),
            ("cache_index_and_filter_blocks", true.into()),
            ("memtable", "vector".into()),
            ("allow_concurrent_memtable_write", false.into()),
        ];
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// `key=value` lines of the newest OPTIONS file RocksDB wrote into `dir` (it writes one at
    /// every open: what the library really applied, after its own sanitizing).
    fn options_file(dir: &std::path::Path) -> BTreeMap<String, String> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
            .collect();
        files.sort();
        let text = std::fs::read_to_string(files.last().expect("an OPTIONS file")).unwrap();
        text.lines().filter_map(|l| l.trim().split_once('=')).map(|(k, v)| (k.into(), v.into())).collect()
    }

    /// Guards issue 40's options: each benchmark.sh setting reaches RocksDB (read back from the
    /// OPTIONS file it writes) and is stated in the row's settings.
    #[test]
    fn benchmark_sh_options_are_applied_and_stated() {
        let tmp = tempfile::tempdir().unwrap();
        let options = Options::parse("rocksdb", DESCRIPTOR.options, &benchmark_sh_row()).unwrap();
        let e = open(&OpenArgs::new(tmp.path(), &options)).unwrap();
        let settings = e.settings();
        e.close().unwrap();
        let got = options_file(tmp.path());
        let want = [
            ("block_size", "8192"),
            ("max_background_jobs", "16"),
            ("max_write_buffer_number", "8"),
            ("target_file_size_base", "134217728"),
            ("max_bytes_for_level_base", "1073741824"),
            ("max_bytes_for_level_multiplier", "8.000000"),
            ("num_levels", "8"),
            ("level0_file_num_compaction_trigger", "5"),
            ("level0_slowdown_writes_trigger", "21"),
            ("level0_stop_writes_trigger", "30"),
            ("bytes_per_sync", "8388608"),
            ("max_open_files", "-1"),
            ("delete_obsolete_files_period_micros", "62914560"),
            ("max_subcompactions", "2"),
            ("level_compaction_dynamic_level_bytes", "true"),
            ("pin_l0_filter_and_index_blocks_in_cache", "true"),
            ("cache_index_and_filter_blocks", "true"),
            ("memtable_factory", "{id=VectorRepFactory;count=0;}"),
            ("allow_concurrent_memtable_write", "false"),
        ];
        for (k, v) in want {
            assert_eq!(got.get(k).map(String::as_str), Some(v), "{k} in the OPTIONS file");
        }
        for k in benchmark_sh_row().keys() {
            assert!(settings.get(k).is_some_and(|s| s != "library default"), "{k} not stated: {settings:?}");
        }
        assert_eq!(settings["block_size"], "8192");
    }

    #[test]
    fn an_out_of_range_tuning_option_is_refused_naming_its_range() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, value, says) in [
            (
                "max_background_jobs",
                serde_json::json!(0),
                "max_background_jobs = 0 is out of range (allowed: 1 to 1024)",
            ),
            ("num_levels", 1.into(), "num_levels = 1 is out of range (allowed: 2 to 64)"),
            ("memtable", "vector".into(), "needs allow_concurrent_memtable_write = false"),
        ] {
            let row = BTreeMap::from([(name.to_string(), value)]);
            let options = Options::parse("rocksdb", DESCRIPTOR.options, &row).unwrap();
            let e = open(&OpenArgs::new(tmp.path(), &options)).err().expect("refused");
            assert!(e.to_string().contains(says), "{name}: {e}");
        }
    }

    /// The hand-built batch is byte for byte the binding's own, lengths of one and two varint
    /// bytes included.
    #[test]
    fn hand_built_write_batch_matches_the_bindings() {
        let records: Vec<(Vec<u8>, Vec<u8>)> = [(0, 0), (1, 100), (16, 127), (127, 128), (200, 300), (3, 20_000)]
            .iter()
            .map(|&(k, v)| (vec![b'k'; k], (0..v).map(|i| i as u8).collect()))
            .collect();
        let mut theirs = WriteBatch::default();
        let mut ours = Vec::new();
        rep::start(&mut ours);
        for (k, v) in &records {
            theirs.put(k, v);
            rep::put(&mut ours, k, v).unwrap();
        }
        rep::finish(&mut ours, records.len() as u32);
        assert_eq!(ours, theirs.data());
        assert_eq!(WriteBatch::from_data(&ours).len(), records.len());
    }
}
