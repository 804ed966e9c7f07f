//! `leveldb`: Google LevelDB through its C API (`leveldb/c.h`), declared by hand in [`ffi`].
//!
//! One database in the job directory. Each write batch is one `leveldb_writebatch_t`; `sync`
//! maps to `leveldb_writeoptions_set_sync`. Reads use default read options (no snapshot), so
//! they always see the latest writes; a scan is one iterator, seeked to its start key.
//! The C API returns every value of `leveldb_get` in a fresh malloc()ed buffer, freed here with
//! `leveldb_free` after copying: that allocation is part of what LevelDB's C API costs.

use std::collections::BTreeMap;
use std::ptr;

use kvbench_model::engine::*;
use libc::{c_char, c_int, size_t};

/// The leveldb C API declarations kvbench uses, transcribed from `leveldb/c.h` (1.2x).
#[allow(non_camel_case_types)]
pub mod ffi {
    use libc::{c_char, c_int, c_void, size_t};

    macro_rules! opaque {
        ($($name:ident),*) => {$(
            #[repr(C)]
            pub struct $name {
                _opaque: [u8; 0],
            }
        )*};
    }
    opaque!(
        leveldb_t,
        leveldb_cache_t,
        leveldb_filterpolicy_t,
        leveldb_iterator_t,
        leveldb_options_t,
        leveldb_readoptions_t,
        leveldb_writebatch_t,
        leveldb_writeoptions_t
    );

    pub const LEVELDB_NO_COMPRESSION: c_int = 0;
    pub const LEVELDB_SNAPPY_COMPRESSION: c_int = 1;

    extern "C" {
        pub fn leveldb_open(
            options: *const leveldb_options_t,
            name: *const c_char,
            errptr: *mut *mut c_char,
        ) -> *mut leveldb_t;
        pub fn leveldb_close(db: *mut leveldb_t);
        pub fn leveldb_write(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            batch: *mut leveldb_writebatch_t,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_get(
            db: *mut leveldb_t,
            options: *const leveldb_readoptions_t,
            key: *const c_char,
            keylen: size_t,
            vallen: *mut size_t,
            errptr: *mut *mut c_char,
        ) -> *mut c_char;
        pub fn leveldb_create_iterator(
            db: *mut leveldb_t,
            options: *const leveldb_readoptions_t,
        ) -> *mut leveldb_iterator_t;

        pub fn leveldb_iter_destroy(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8;
        pub fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_seek(it: *mut leveldb_iterator_t, key: *const c_char, klen: size_t);
        pub fn leveldb_iter_next(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_key(it: *const leveldb_iterator_t, klen: *mut size_t) -> *const c_char;
        pub fn leveldb_iter_value(it: *const leveldb_iterator_t, vlen: *mut size_t) -> *const c_char;
        pub fn leveldb_iter_get_error(it: *const leveldb_iterator_t, errptr: *mut *mut c_char);

        pub fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t;
        pub fn leveldb_writebatch_destroy(batch: *mut leveldb_writebatch_t);
        pub fn leveldb_writebatch_put(
            batch: *mut leveldb_writebatch_t,
            key: *const c_char,
            klen: size_t,
            val: *const c_char,
            vlen: size_t,
        );
        pub fn leveldb_writebatch_delete(batch: *mut leveldb_writebatch_t, key: *const c_char, klen: size_t);

        pub fn leveldb_options_create() -> *mut leveldb_options_t;
        pub fn leveldb_options_destroy(options: *mut leveldb_options_t);
        pub fn leveldb_options_set_create_if_missing(options: *mut leveldb_options_t, value: u8);
        pub fn leveldb_options_set_filter_policy(options: *mut leveldb_options_t, policy: *mut leveldb_filterpolicy_t);
        pub fn leveldb_options_set_cache(options: *mut leveldb_options_t, cache: *mut leveldb_cache_t);
        pub fn leveldb_options_set_compression(options: *mut leveldb_options_t, compression: c_int);

        pub fn leveldb_filterpolicy_create_bloom(bits_per_key: c_int) -> *mut leveldb_filterpolicy_t;
        pub fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t);
        pub fn leveldb_cache_create_lru(capacity: size_t) -> *mut leveldb_cache_t;
        pub fn leveldb_cache_destroy(cache: *mut leveldb_cache_t);

        pub fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
        pub fn leveldb_readoptions_destroy(options: *mut leveldb_readoptions_t);
        pub fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
        pub fn leveldb_writeoptions_destroy(options: *mut leveldb_writeoptions_t);
        pub fn leveldb_writeoptions_set_sync(options: *mut leveldb_writeoptions_t, value: u8);

        pub fn leveldb_property_value(db: *mut leveldb_t, propname: *const c_char) -> *mut c_char;
        pub fn leveldb_approximate_sizes(
            db: *mut leveldb_t,
            num_ranges: c_int,
            range_start_key: *const *const c_char,
            range_start_key_len: *const size_t,
            range_limit_key: *const *const c_char,
            range_limit_key_len: *const size_t,
            sizes: *mut u64,
        );
        pub fn leveldb_compact_range(
            db: *mut leveldb_t,
            start_key: *const c_char,
            start_key_len: size_t,
            limit_key: *const c_char,
            limit_key_len: size_t,
        );
        pub fn leveldb_free(ptr: *mut c_void);
        pub fn leveldb_major_version() -> c_int;
        pub fn leveldb_minor_version() -> c_int;
    }
}

use ffi::*;

pub static DESCRIPTOR: EngineDescriptor = crate::embedded(
    "leveldb",
    "LevelDB (libleveldb, C API): LSM tree",
    Capabilities { read_only_open: false, ..crate::ORDERED_STORE },
    &[
        OptionSpec::one_of("compression", &["none", "snappy"], "snappy", "block compression of table files"),
        OptionSpec::int(
            "block_cache",
            "",
            "LRU block cache capacity in bytes (default: the library's own 8 MiB cache)",
        ),
        OptionSpec::int("bloom_bits", "0", "bloom filter bits per key (0 = no filter)"),
    ],
    version,
    open,
);

fn version() -> String {
    // SAFETY: plain getters without arguments.
    let (major, minor) = unsafe { (leveldb_major_version(), leveldb_minor_version()) };
    format!("{major}.{minor}")
}

/// The one place a LevelDB error string becomes an error: `err` is the `errptr` a call filled
/// (null on success); it is freed here.
fn check(err: *mut c_char, call: &str) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB sets errptr to a malloc()ed NUL-terminated message, which we own.
    let msg = unsafe { crate::c_str(err) };
    // SAFETY: as above; freed once.
    unsafe { leveldb_free(err.cast()) };
    Err(EngineError::Store(format!("leveldb {call}: {msg}")))
}

/// An open database plus the objects it points into (cache, filter policy), which must outlive
/// it; everything is released in `close` or Drop, the database first.
pub struct LevelDb {
    db: *mut leveldb_t,
    options: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
    filter: *mut leveldb_filterpolicy_t,
    read_opts: *mut leveldb_readoptions_t,
    write_opts: *mut leveldb_writeoptions_t,
    sync: SyncMode,
    settings: BTreeMap<String, String>,
    /// Something was written since open: only then does close force data to disk (an
    /// open-per-operation read must not pay an fsync at every close).
    wrote: std::sync::atomic::AtomicBool,
}

// SAFETY: a leveldb_t is thread-safe (LevelDB's DB serialises writers internally). The option
// objects are only read after open, and LevelDB takes them as `const`.
unsafe impl Send for LevelDb {}
// SAFETY: see Send.
unsafe impl Sync for LevelDb {}

fn open(args: &OpenArgs<'_>) -> Result<Box<dyn Engine>> {
    if args.mode != OpenMode::ReadWrite {
        return Err(EngineError::Unsupported(format!("leveldb has no {:?} open", args.mode)));
    }
    let o = args.options;
    let mut settings = BTreeMap::new();
    // SAFETY: constructors without arguments; each result is owned by `db` below at once, so
    // Drop frees it whatever fails next.
    let mut db = unsafe {
        LevelDb {
            db: ptr::null_mut(),
            options: leveldb_options_create(),
            cache: ptr::null_mut(),
            filter: ptr::null_mut(),
            read_opts: leveldb_readoptions_create(),
            write_opts: leveldb_writeoptions_create(),
            sync: args.sync,
            settings: BTreeMap::new(),
            wrote: Default::default(),
        }
    };
    let compression = o.text("compression").unwrap_or_else(|| "snappy".into());
    let c = match compression.as_str() {
        "none" => LEVELDB_NO_COMPRESSION,
        "snappy" => LEVELDB_SNAPPY_COMPRESSION,
        other => return Err(EngineError::Option(format!("leveldb compression `{other}`"))),
    };
    // SAFETY: `db.options` is a live options object (this block and the setters below).
    unsafe {
        leveldb_options_set_create_if_missing(db.options, 1);
        leveldb_options_set_compression(db.options, c);
    }
    settings.insert("compression".into(), compression);
    match o.int("block_cache") {
        Some(n) if n > 0 => {
            // SAFETY: the cache lives in `db` until after the database is closed.
            unsafe {
                db.cache = leveldb_cache_create_lru(n as size_t);
                leveldb_options_set_cache(db.options, db.cache);
            }
            settings.insert("block_cache".into(), format!("{n} bytes LRU"));
        }
        Some(n) => return Err(EngineError::Option(format!("leveldb block_cache must be positive, got {n}"))),
        None => {
            settings.insert("block_cache".into(), "library default (8 MiB LRU)".into());
        }
    }
    match o.int("bloom_bits").unwrap_or(0) {
        0 => {
            settings.insert("bloom_filter".into(), "off".into());
        }
        n if n > 0 && n <= c_int::MAX as i64 => {
            // SAFETY: the policy lives in `db` until after the database is closed.
            unsafe {
                db.filter = leveldb_filterpolicy_create_bloom(n as c_int);
                leveldb_options_set_filter_policy(db.options, db.filter);
            }
            settings.insert("bloom_filter".into(), format!("{n} bits/key"));
        }
        n => return Err(EngineError::Option(format!("leveldb bloom_bits out of range: {n}"))),
    }
    let sync = args.sync != SyncMode::None;
    // SAFETY: a live write-options object.
    unsafe { leveldb_writeoptions_set_sync(db.write_opts, sync as u8) };
    settings.insert(
        "sync".into(),
        if sync {
            "leveldb_writeoptions_set_sync(1): log fsynced per write batch"
        } else {
            "sync=0: log not fsynced while running; one synced empty batch at close"
        }
        .into(),
    );
    settings.insert("write_batch".into(), "one leveldb_writebatch_t per batch".into());

    let path = crate::c_path(args.dir);
    let mut err = ptr::null_mut();
    // SAFETY: live options; `path` is NUL-terminated and outlives the call.
    db.db = unsafe { leveldb_open(db.options, path.as_ptr(), &mut err) };
    check(err, "leveldb_open")?;
    if db.db.is_null() {
        return Err(EngineError::store("leveldb_open returned no database and no error"));
    }
    db.settings = settings;
    Ok(Box::new(db))
}

impl LevelDb {
    fn shut(&mut self) -> Result<()> {
        let mut r = Ok(());
        if !self.db.is_null() {
            if self.sync == SyncMode::None && self.wrote.load(std::sync::atomic::Ordering::Relaxed) {
                // LevelDB has no flush call: a synced (empty) write fsyncs the log, making every
                // earlier unsynced write durable.
                // SAFETY: live objects; the batch is destroyed right after.
                unsafe {
                    let b = leveldb_writebatch_create();
                    leveldb_writeoptions_set_sync(self.write_opts, 1);
                    let mut err = ptr::null_mut();
                    leveldb_write(self.db, self.write_opts, b, &mut err);
                    leveldb_writebatch_destroy(b);
                    r = check(err, "leveldb_write (sync at close)");
                }
            }
            // SAFETY: every Reader borrows `self`, so no iterator is alive here.
            unsafe { leveldb_close(self.db) };
            self.db = ptr::null_mut();
        }
        /// Free a live-or-null pointer once, then null it.
        macro_rules! free {
            ($field:expr, $destroy:ident) => {
                if !$field.is_null() {
                    // SAFETY: live (created by the matching constructor) and freed only here;
                    // the database that used the cache and filter policy is closed above.
                    unsafe { $destroy($field) };
                    $field = ptr::null_mut();
                }
            };
        }
        free!(self.options, leveldb_options_destroy);
        free!(self.read_opts, leveldb_readoptions_destroy);
        free!(self.write_opts, leveldb_writeoptions_destroy);
        free!(self.cache, leveldb_cache_destroy);
        free!(self.filter, leveldb_filterpolicy_destroy);
        r
    }
}

/// LevelDB's levels (config::kNumLevels).
const LEVELS: usize = 7;

impl LevelDb {
    /// A property's text, or None when LevelDB does not know the name.
    fn property(&self, name: &str) -> Option<String> {
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: live database; the result is null or a malloc()ed string we own and free.
        unsafe {
            let p = leveldb_property_value(self.db, name.as_ptr());
            if p.is_null() {
                return None;
            }
            let text = crate::c_str(p);
            leveldb_free(p.cast());
            Some(text)
        }
    }

    /// LevelDB's estimate of the file bytes of every key: a range from the empty key to a key
    /// above any key kvbench writes (keys are shorter than 256 bytes of 0xff).
    fn approximate_bytes(&self) -> u64 {
        let top = [0xffu8; 256];
        let (start, limit): (*const c_char, *const c_char) = (b"".as_ptr().cast(), top.as_ptr().cast());
        let (start_len, limit_len): (size_t, size_t) = (0, top.len());
        let mut size = 0u64;
        // SAFETY: live database; one range whose keys outlive the call; one output slot.
        unsafe { leveldb_approximate_sizes(self.db, 1, &start, &start_len, &limit, &limit_len, &mut size) };
        size
    }
}

/// The per-level rows of `leveldb.stats` ("level files size-MB time-s read-MB write-MB"),
/// summed: (table bytes, compaction bytes read, compaction bytes written, flushes included).
fn parse_stats(text: &str) -> (f64, f64, f64) {
    const MIB: f64 = 1048576.0;
    let mut sums = (0.0, 0.0, 0.0);
    for line in text.lines() {
        let cols: Vec<f64> = line.split_whitespace().filter_map(|c| c.parse().ok()).collect();
        if cols.len() == 6 {
            sums.0 += cols[2] * MIB;
            sums.1 += cols[4] * MIB;
            sums.2 += cols[5] * MIB;
        }
    }
    sums
}

impl Drop for LevelDb {
    fn drop(&mut self) {
        let _ = self.shut();
    }
}

/// A write batch, destroyed on Drop.
struct Batch(*mut leveldb_writebatch_t);

impl Drop for Batch {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_writebatch_create, destroyed once.
        unsafe { leveldb_writebatch_destroy(self.0) };
    }
}

impl Engine for LevelDb {
    fn write(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.wrote.store(true, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: constructor without arguments; owned by the guard.
        let b = Batch(unsafe { leveldb_writebatch_create() });
        for w in batch {
            // SAFETY: a live batch; LevelDB copies key and value into it.
            unsafe {
                match w.value {
                    Some(v) => {
                        leveldb_writebatch_put(b.0, w.key.as_ptr().cast(), w.key.len(), v.as_ptr().cast(), v.len())
                    }
                    None => leveldb_writebatch_delete(b.0, w.key.as_ptr().cast(), w.key.len()),
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: live database, options and batch.
        unsafe { leveldb_write(self.db, self.write_opts, b.0, &mut err) };
        check(err, "leveldb_write")
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(LevelReader { db: self }))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.shut()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn internals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for level in 0..LEVELS {
            if let Some(n) = self.property(&format!("leveldb.num-files-at-level{level}")) {
                if let Ok(n) = n.trim().parse::<f64>() {
                    out.insert(format!("leveldb.l{level}.files"), n);
                }
            }
        }
        if let Some(stats) = self.property("leveldb.stats") {
            let (tables, read, written) = parse_stats(&stats);
            out.insert("leveldb.sst.bytes".into(), tables);
            out.insert("leveldb.compaction.bytes_read".into(), read);
            out.insert("leveldb.compaction.bytes_written".into(), written);
        }
        if let Some(n) = self.property("leveldb.approximate-memory-usage") {
            if let Ok(n) = n.trim().parse::<f64>() {
                out.insert("leveldb.memory.bytes".into(), n);
            }
        }
        out.insert("leveldb.approximate_bytes".into(), self.approximate_bytes() as f64);
        out
    }

    fn settle(&mut self) -> Result<String> {
        let start = std::time::Instant::now();
        // SAFETY: live database; null bounds mean before the first and after the last key.
        // LevelDB flushes the memtable first and returns when the range is compacted.
        unsafe { leveldb_compact_range(self.db, ptr::null(), 0, ptr::null(), 0) };
        let files: Vec<String> = (0..LEVELS)
            .filter_map(|l| self.property(&format!("leveldb.num-files-at-level{l}")))
            .map(|n| n.trim().to_string())
            .collect();
        Ok(format!(
            "flushed the memtable and compacted the whole key range (leveldb_compact_range) in {:.1} s; files per level: {}",
            start.elapsed().as_secs_f64(),
            files.join("/")
        ))
    }
}

/// Reads without a snapshot see the latest writes, so `refresh` has nothing to do.
struct LevelReader<'a> {
    db: &'a LevelDb,
}

/// An iterator, destroyed on Drop.
struct Iter(*mut leveldb_iterator_t);

impl Drop for Iter {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_create_iterator, destroyed once, before the database closes
        // (the reader that owns it borrows the database).
        unsafe { leveldb_iter_destroy(self.0) };
    }
}

impl Reader for LevelReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut len: size_t = 0;
        let mut err = ptr::null_mut();
        // SAFETY: live database and read options; the key slice outlives the call.
        let v =
            unsafe { leveldb_get(self.db.db, self.db.read_opts, key.as_ptr().cast(), key.len(), &mut len, &mut err) };
        check(err, "leveldb_get")?;
        if v.is_null() {
            return Ok(false);
        }
        // SAFETY: `v` is a malloc()ed buffer of `len` bytes that we own; copied, then freed once.
        unsafe {
            out.extend_from_slice(std::slice::from_raw_parts(v as *const u8, len));
            leveldb_free(v.cast());
        }
        Ok(true)
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        if limit == 0 {
            return Ok(0);
        }
        // SAFETY: live database and read options; the guard destroys the iterator.
        let it = Iter(unsafe { leveldb_create_iterator(self.db.db, self.db.read_opts) });
        // SAFETY: a live iterator; the start key outlives the call.
        unsafe {
            match start {
                Some(s) => leveldb_iter_seek(it.0, s.as_ptr().cast(), s.len()),
                None => leveldb_iter_seek_to_first(it.0),
            }
        }
        let mut n = 0;
        // SAFETY: a live iterator.
        while unsafe { leveldb_iter_valid(it.0) } != 0 {
            let (mut kl, mut vl): (size_t, size_t) = (0, 0);
            // SAFETY: the iterator is valid; key and value point into it until it moves.
            let (k, v) = unsafe {
                let k = leveldb_iter_key(it.0, &mut kl);
                let v = leveldb_iter_value(it.0, &mut vl);
                (bytes(k, kl), bytes(v, vl))
            };
            n += 1;
            if !visit(k, v) || n >= limit {
                return Ok(n);
            }
            // SAFETY: a live, valid iterator.
            unsafe { leveldb_iter_next(it.0) };
        }
        let mut err = ptr::null_mut();
        // SAFETY: a live iterator.
        unsafe { leveldb_iter_get_error(it.0, &mut err) };
        check(err, "iterator")?;
        Ok(n)
    }
}

/// # Safety
/// `ptr` must point to `len` readable bytes for the returned lifetime (or `len` be 0).
unsafe fn bytes<'a>(ptr: *const c_char, len: size_t) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        return &[];
    }
    std::slice::from_raw_parts(ptr as *const u8, len)
}
