//! The random-get loop of a kvbench `get` phase on LMDB, written the way one would by hand:
//! no harness, no derivation, no verification, no trait objects — just liblmdb calls (through
//! the raw declarations of `kvbench_engines::lmdb::ffi`) and a clock read around each get, as a
//! careful hand-written benchmark would have. It creates an LMDB with RECORDS records (keys:
//! 16-digit zero-padded decimal, kvbench's default; values: VALUE_SIZE bytes, default 100)
//! loaded in a random order, makes a random permutation of the keys before the clock starts,
//! then reads every record once in one read transaction and prints wall-clock ops/s.
//! `scripts/bench-harness.sh` runs it beside `kvbench run --workload readrandom --engines
//! lmdb` and prints the ratio (docs/methodology.md).
//! Run: `cargo run --release -p kvbench-engines --example lmdb_minimal -- 1000000 100`.

#[cfg(kvb_lmdb)]
fn main() {
    use kvbench_engines::lmdb::ffi::*;
    use std::ptr::null_mut;
    use std::time::Instant;

    let mut args = std::env::args().skip(1);
    let records: u64 = args.next().map(|a| a.parse().expect("RECORDS: an integer")).unwrap_or(1_000_000);
    let value_size: usize = args.next().map(|a| a.parse().expect("VALUE_SIZE: an integer")).unwrap_or(100);
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = kvbench_engines::c_path(dir.path());
    let ok = |rc: i32, what: &str| assert!(rc == 0, "{what} failed: {rc}");
    let key = |i: u64| format!("{i:016}").into_bytes();
    let value: Vec<u8> = (0..value_size).map(|i| b'a' + (i % 26) as u8).collect();

    // SAFETY: a straight-line use of the LMDB C API: every handle is created before use and
    // closed once; values read are used only while their read transaction is open.
    unsafe {
        let mut env = null_mut();
        ok(mdb_env_create(&mut env), "mdb_env_create");
        let map = (1u64 << 30).max(records * (value_size as u64 + 16) * 4);
        ok(mdb_env_set_mapsize(env, map as usize), "mdb_env_set_mapsize");
        ok(mdb_env_open(env, path.as_ptr(), MDB_NOSYNC, 0o644), "mdb_env_open");

        // A random order of the records (Fisher-Yates with splitmix64), for the load and again
        // (another one) for the reads: each record exactly once, as kvbench's `shuffle`.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut shuffled = |n: u64| {
            let mut v: Vec<u64> = (0..n).collect();
            for i in (1..v.len()).rev() {
                v.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            v
        };
        let load_order = shuffled(records);

        // Load in write transactions of 1000 records (kvbench's default batch).
        let mut dbi = 0;
        let mut i = 0;
        while i < records {
            let mut txn = null_mut();
            ok(mdb_txn_begin(env, null_mut(), 0, &mut txn), "mdb_txn_begin");
            if i == 0 {
                ok(mdb_dbi_open(txn, std::ptr::null(), 0, &mut dbi), "mdb_dbi_open");
            }
            for &j in &load_order[i as usize..(i + 1000).min(records) as usize] {
                let k = key(j);
                let (mut kv, mut vv) = (MDB_val::of(&k), MDB_val::of(&value));
                ok(mdb_put(txn, dbi, &mut kv, &mut vv, 0), "mdb_put");
            }
            ok(mdb_txn_commit(txn), "mdb_txn_commit");
            i += 1000;
        }
        drop(load_order);
        // The keys to read, made before the clock starts (16 bytes each, read in order).
        let keys: Vec<[u8; 16]> = shuffled(records)
            .into_iter()
            .map(|r| {
                let mut k = [0u8; 16];
                k.copy_from_slice(&key(r));
                k
            })
            .collect();

        let mut txn = null_mut();
        ok(mdb_txn_begin(env, null_mut(), MDB_RDONLY, &mut txn), "mdb_txn_begin (read)");
        let mut touched = 0u64;
        let mut busy = 0u128;
        let cpu0 = kvbench_worker::sys::Usage::now();
        let t0 = Instant::now();
        for k in &keys {
            let (mut kv, mut vv) = (MDB_val::of(&k[..]), MDB_val::empty());
            let t = Instant::now();
            let rc = mdb_get(txn, dbi, &mut kv, &mut vv);
            busy += t.elapsed().as_nanos();
            ok(rc, "mdb_get");
            // Touch the value so the read is real.
            touched += vv.mv_size as u64;
            if vv.mv_size > 0 {
                touched += *(vv.mv_data as *const u8) as u64;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        let cpu1 = kvbench_worker::sys::Usage::now();
        let cpu = (cpu1.user_ns + cpu1.sys_ns - cpu0.user_ns - cpu0.sys_ns) as f64;
        mdb_txn_abort(txn);
        mdb_env_close(env);
        std::hint::black_box(touched);
        println!(
            "lmdb_minimal: {records} records, {value_size}-byte values, every record read once in random order \
             in one read txn: {:.3} s, {:.0} ops/s (mean get {:.0} ns, CPU {:.0} ns/op)",
            secs,
            records as f64 / secs,
            busy as f64 / records as f64,
            cpu / records as f64
        );
    }
}

#[cfg(not(kvb_lmdb))]
fn main() {
    eprintln!("lmdb_minimal: built without LMDB (liblmdb-dev was not installed)");
    std::process::exit(1);
}
