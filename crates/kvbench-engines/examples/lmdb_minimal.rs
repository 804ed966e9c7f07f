//! The random-get loop of a kvbench `get` phase on LMDB, written the way one would by hand:
//! no harness, no plan file, no per-operation clock, no verification, no trait objects — just
//! liblmdb calls (through the raw declarations of `kvbench_engines::lmdb::ffi`). It creates an
//! LMDB with RECORDS records (keys: 16-digit zero-padded decimal; values: VALUE_SIZE printable
//! bytes, default 100), draws RECORDS uniformly random keys before the clock starts, then does
//! that many `mdb_get`s in one read transaction and prints ops/s. Compare it with
//! `kvbench` running the same get phase on `lmdb` to see what the harness costs (issue 2's
//! closing note: under 5%). Run: `cargo run --release -p kvbench-engines --example
//! lmdb_minimal -- 1000000 100`.

#[cfg(all(feature = "lmdb", kvb_lmdb))]
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

        // Load in write transactions of 10 000 records.
        let mut dbi = 0;
        let mut i = 0;
        while i < records {
            let mut txn = null_mut();
            ok(mdb_txn_begin(env, null_mut(), 0, &mut txn), "mdb_txn_begin");
            if i == 0 {
                ok(mdb_dbi_open(txn, std::ptr::null(), 0, &mut dbi), "mdb_dbi_open");
            }
            for j in i..(i + 10_000).min(records) {
                let k = key(j);
                let (mut kv, mut vv) = (MDB_val::of(&k), MDB_val::of(&value));
                ok(mdb_put(txn, dbi, &mut kv, &mut vv, 0), "mdb_put");
            }
            ok(mdb_txn_commit(txn), "mdb_txn_commit");
            i += 10_000;
        }

        // Random keys drawn before the clock starts (splitmix64), as kvbench's plan does.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let keys: Vec<Vec<u8>> = (0..records)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                key((z ^ (z >> 31)) % records)
            })
            .collect();

        let mut txn = null_mut();
        ok(mdb_txn_begin(env, null_mut(), MDB_RDONLY, &mut txn), "mdb_txn_begin (read)");
        let mut touched = 0u64;
        let t0 = Instant::now();
        for k in &keys {
            let (mut kv, mut vv) = (MDB_val::of(k), MDB_val::empty());
            ok(mdb_get(txn, dbi, &mut kv, &mut vv), "mdb_get");
            // Touch the value so the read is real.
            touched += vv.mv_size as u64;
            if vv.mv_size > 0 {
                touched += *(vv.mv_data as *const u8) as u64;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        mdb_txn_abort(txn);
        mdb_env_close(env);
        std::hint::black_box(touched);
        println!(
            "lmdb_minimal: {records} records, {value_size}-byte values, {records} uniform random gets in one read txn: \
             {:.3} s, {:.0} ops/s",
            secs,
            records as f64 / secs
        );
    }
}

#[cfg(not(all(feature = "lmdb", kvb_lmdb)))]
fn main() {
    eprintln!("lmdb_minimal: built without LMDB (feature `lmdb` off or liblmdb-dev missing)");
    std::process::exit(1);
}
