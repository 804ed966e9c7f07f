//! The engines' own counters (`Engine::internals`) and their settle step, on real stores:
//! each counter named in docs/engines must be there and move the way the store moved, and
//! settle must leave the state it says it leaves. Also RocksDB's direct I/O options.
//! An engine missing here fails its test unless KVBENCH_ALLOW_MISSING=1 (as conformance.rs).

use std::collections::BTreeMap;
use std::path::Path;

use kvbench_engines::conformance::engine_or_skip as descriptor;
use kvbench_model::engine::{Engine, EngineDescriptor, OpenArgs, OpenMode, Options, Reader, WriteOp};

fn open(d: &EngineDescriptor, dir: &Path, given: &[(&str, serde_json::Value)]) -> Box<dyn Engine> {
    let given: BTreeMap<String, serde_json::Value> = given.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let options = Options::parse(d.name, d.options, &given).unwrap();
    let args = OpenArgs { expected_records: 50_000, expected_bytes: 50_000 * 116, ..OpenArgs::new(dir, &options) };
    let mut e = (d.open)(&args).unwrap_or_else(|e| panic!("open {}: {e}", d.name));
    e.prepare().unwrap();
    e
}

fn key(i: u32) -> Vec<u8> {
    format!("{:016}", i.wrapping_mul(2_654_435_761) % 1_000_000_007).into_bytes()
}

/// Write records 0..n (value `version` repeated), in batches of 1 000.
fn fill(e: &dyn Engine, n: u32, version: u8) {
    let value = vec![b'a' + version; 100];
    let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    for chunk in keys.chunks(1000) {
        let batch: Vec<WriteOp<'_>> = chunk.iter().map(|k| WriteOp { key: k, value: Some(&value) }).collect();
        e.write(&batch).unwrap();
    }
}

fn get(m: &BTreeMap<String, f64>, name: &str) -> f64 {
    *m.get(name).unwrap_or_else(|| panic!("internals lack `{name}`: {m:?}"))
}

#[test]
fn rocksdb_counts_flush_compaction_and_wal_bytes_and_settles_to_no_pending_compaction() {
    let Some(d) = descriptor("rocksdb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 50_000, 0);
    let before = e.internals();
    let user = get(&before, "rocksdb.user.bytes_written");
    assert!(user >= 50_000.0 * 116.0, "user bytes {user}");
    assert!(get(&before, "rocksdb.wal.bytes_written") >= user, "{before:?}");
    assert!(get(&before, "rocksdb.memtable.bytes") > 0.0, "{before:?}");
    assert_eq!(get(&before, "rocksdb.flush.bytes_written"), 0.0, "nothing flushed yet: {before:?}");
    for name in
        ["rocksdb.compaction.pending_bytes", "rocksdb.l0.files", "rocksdb.write.stopped", "rocksdb.sst.live_bytes"]
    {
        get(&before, name);
    }

    e.settle().unwrap();
    fill(e.as_ref(), 50_000, 1);
    let said = e.settle().unwrap();
    assert!(said.contains("no compaction pending"), "{said}");
    let after = e.internals();
    assert!(get(&after, "rocksdb.flush.bytes_written") > 0.0, "{after:?}");
    // The second settle merged the overwrites with the first file: a real compaction.
    assert!(get(&after, "rocksdb.compaction.bytes_written") > 0.0, "{after:?}");
    assert_eq!(get(&after, "rocksdb.compaction.pending_bytes"), 0.0, "{after:?}");
    assert_eq!(get(&after, "rocksdb.l0.files"), 0.0, "{after:?}");
    assert!(get(&after, "rocksdb.sst.live_bytes") > 0.0, "{after:?}");
    e.close().unwrap();
}

#[test]
fn rocksdb_without_statistics_has_no_cumulative_bytes_but_keeps_properties() {
    let Some(d) = descriptor("rocksdb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let e = open(d, tmp.path(), &[("statistics", false.into())]);
    fill(e.as_ref(), 1000, 0);
    let m = e.internals();
    assert!(!m.contains_key("rocksdb.wal.bytes_written"), "{m:?}");
    assert!(get(&m, "rocksdb.memtable.bytes") > 0.0, "{m:?}");
    assert!(e.settings()["statistics"].starts_with("off"));
}

/// Whether `dir`'s file system takes O_DIRECT (tmpfs refuses it with EINVAL).
fn takes_o_direct(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(dir.join("o_direct_probe"))
        .is_ok()
}

#[test]
fn rocksdb_direct_io_options_open_write_compact_and_read_back() {
    let Some(d) = descriptor("rocksdb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    if !takes_o_direct(tmp.path()) {
        eprintln!(
            "skipping: the file system of {} refuses O_DIRECT (tmpfs?); set TMPDIR to a disk",
            tmp.path().display()
        );
        return;
    }
    let on = serde_json::Value::from(true);
    let opts = [("direct_reads", on.clone()), ("direct_io_for_flush_and_compaction", on)];
    let mut e = open(d, tmp.path(), &opts);
    let s = e.settings();
    assert_eq!(s["direct_reads"], "on (O_DIRECT)");
    assert_eq!(s["direct_io_for_flush_and_compaction"], "on (O_DIRECT)");
    fill(e.as_ref(), 20_000, 0);
    e.settle().unwrap();
    e.close().unwrap();

    // Reopened: every read now comes from an SST file read with O_DIRECT.
    let e = open(d, tmp.path(), &opts);
    let mut r = e.reader().unwrap();
    let mut buf = Vec::new();
    for i in [0, 1, 9_999, 19_999] {
        assert!(r.get(&key(i), &mut buf).unwrap(), "record {i} lost");
        assert_eq!(buf, vec![b'a'; 100]);
    }
    assert!(!r.get(b"absent", &mut buf).unwrap());
}

#[test]
fn leveldb_counts_files_per_level_and_settles_with_level0_empty() {
    let Some(d) = descriptor("leveldb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 50_000, 0);
    assert!(get(&e.internals(), "leveldb.memory.bytes") > 0.0);
    let said = e.settle().unwrap();
    assert!(said.contains("compacted the whole key range"), "{said}");
    let m = e.internals();
    assert_eq!(get(&m, "leveldb.l0.files"), 0.0, "{m:?}");
    let files: f64 = (0..7).map(|l| get(&m, &format!("leveldb.l{l}.files"))).sum();
    assert!(files >= 1.0, "{m:?}");
    // leveldb.stats counts in whole MiB: 50 000 x ~116 B is about 5 MiB written.
    assert!(get(&m, "leveldb.compaction.bytes_written") >= 1_048_576.0, "{m:?}");
    assert!(get(&m, "leveldb.approximate_bytes") > 0.0, "{m:?}");
    e.close().unwrap();
}

#[test]
fn lmdb_reports_its_btree_and_settle_says_nothing_to_compact() {
    let Some(d) = descriptor("lmdb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 20_000, 0);
    let m = e.internals();
    assert_eq!(get(&m, "lmdb.entries"), 20_000.0);
    assert!(get(&m, "lmdb.depth") >= 2.0, "{m:?}");
    assert!(get(&m, "lmdb.leaf_pages") > 100.0, "{m:?}");
    assert!(get(&m, "lmdb.last_page") >= get(&m, "lmdb.leaf_pages"), "{m:?}");
    assert!(get(&m, "lmdb.map_size") >= 1_048_576.0, "{m:?}");
    let said = e.settle().unwrap();
    assert!(said.contains("nothing to compact"), "{said}");
    e.close().unwrap();
}

#[test]
fn sqlite_counts_pages_and_settle_truncates_the_wal() {
    let Some(d) = descriptor("sqlite") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 20_000, 0);
    let m = e.internals();
    assert!(get(&m, "sqlite.page_size") >= 512.0, "{m:?}");
    assert!(get(&m, "sqlite.page_count") > 100.0, "{m:?}");
    get(&m, "sqlite.freelist_count");
    assert!(get(&m, "sqlite.wal_bytes") > 0.0, "{m:?}");
    let said = e.settle().unwrap();
    assert!(said.contains("wal_checkpoint(TRUNCATE)"), "{said}");
    assert_eq!(get(&e.internals(), "sqlite.wal_bytes"), 0.0);
    e.close().unwrap();
}

#[test]
fn tkrzw_counts_records_and_settles() {
    let Some(d) = descriptor("tkrzw-tree") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 20_000, 0);
    let m = e.internals();
    assert_eq!(get(&m, "tkrzw.records"), 20_000.0);
    get(&m, "tkrzw.should_be_rebuilt");
    let said = e.settle().unwrap();
    assert!(said.contains("synchronized"), "{said}");
    assert!(get(&e.internals(), "tkrzw.file_bytes") > 0.0);
    e.close().unwrap();
}

/// Deletes records 0..n, in batches of 1 000.
fn remove(e: &dyn Engine, n: u32) {
    let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    for chunk in keys.chunks(1000) {
        let batch: Vec<WriteOp<'_>> = chunk.iter().map(|k| WriteOp { key: k, value: None }).collect();
        e.write(&batch).unwrap();
    }
}

#[test]
fn redb_settle_compacts_the_file_after_half_the_records_are_removed() {
    let Some(d) = descriptor("redb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let size = || std::fs::metadata(tmp.path().join("kv.redb")).unwrap().len();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 10_000, 0);
    remove(e.as_ref(), 5_000);
    let grown = size();
    let said = e.settle().unwrap();
    assert!(said.contains("Database::compact"), "{said}");
    let compacted = size();
    assert!(compacted < grown, "settle left the file at {compacted} bytes, {grown} before");
    // A second settle finds nothing more to give back.
    e.settle().unwrap();
    assert_eq!(size(), compacted);
    e.close().unwrap();
}

/// `compaction = "once"` (redb's harness): settle calls compact once, where the default goes on
/// until compact reports nothing left; the file it leaves is never smaller than the full one's.
#[test]
fn redb_compaction_once_stops_after_one_call() {
    for name in ["redb", "redb2"] {
        redb_compaction_once(name);
    }
}

fn redb_compaction_once(name: &str) {
    let Some(d) = descriptor(name) else { return };
    let sizes: Vec<(String, u64)> = ["once", "full"]
        .iter()
        .map(|mode| {
            let tmp = tempfile::tempdir().unwrap();
            let mut e = open(d, tmp.path(), &[("compaction", (*mode).into())]);
            fill(e.as_ref(), 10_000, 0);
            remove(e.as_ref(), 5_000);
            let said = e.settle().unwrap();
            e.close().unwrap();
            (said, std::fs::metadata(tmp.path().join("kv.redb")).unwrap().len())
        })
        .collect();
    assert!(sizes[0].0.contains("called once") && sizes[1].0.contains("rounds"), "{sizes:?}");
    assert!(sizes[0].1 >= sizes[1].1, "{sizes:?}");
}

#[test]
fn fjall_counts_tables_and_settles_to_one_compacted_level() {
    let Some(d) = descriptor("fjall") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 50_000, 0);
    fill(e.as_ref(), 50_000, 1);
    assert!(get(&e.internals(), "fjall.write_buffer_size") > 0.0);
    let said = e.settle().unwrap();
    assert!(said.contains("major compaction"), "{said}");
    let m = e.internals();
    assert_eq!(get(&m, "fjall.l0_tables"), 0.0, "{m:?}");
    assert!(get(&m, "fjall.tables") >= 1.0, "{m:?}");
    assert!(get(&m, "fjall.disk_space") > 0.0, "{m:?}");
    e.close().unwrap();
}

/// libmdbx answers MDBX_RESULT_TRUE when a sync finds nothing to flush (every commit durable
/// already): a settle then is a success, not error -1.
#[test]
fn libmdbx_settle_succeeds_when_nothing_is_left_to_flush() {
    let Some(d) = descriptor("libmdbx") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[]);
    fill(e.as_ref(), 2_000, 0);
    for round in 0..2 {
        let said = e.settle().unwrap_or_else(|err| panic!("settle {round}: {err}"));
        assert!(said.contains("nothing to compact"), "{said}");
    }
    e.close().unwrap();
}

/// `compaction = "copy"`: the settle is redb's harness's compacting copy. After half the records
/// are deleted the file shrinks (a sync alone leaves it as long), and the reopened store still
/// reads every record that is left and none that was deleted.
#[test]
fn lmdb_compacting_copy_shrinks_the_file_and_keeps_every_record() {
    let Some(d) = descriptor("lmdb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[("compaction", "copy".into())]);
    fill(e.as_ref(), 20_000, 0);
    let gone: Vec<Vec<u8>> = (0..10_000).map(key).collect();
    let dels: Vec<WriteOp<'_>> = gone.iter().map(|k| WriteOp { key: k, value: None }).collect();
    e.write(&dels).unwrap();
    let before = std::fs::metadata(tmp.path().join("data.mdb")).unwrap().len();
    let said = e.settle().unwrap();
    let after = std::fs::metadata(tmp.path().join("data.mdb")).unwrap().len();
    assert!(said.contains("MDB_CP_COMPACT"), "{said}");
    assert!(after < before * 3 / 4, "{before} bytes before the copy, {after} after: {said}");
    let mut r = e.reader().unwrap();
    let mut out = Vec::new();
    assert!(!r.get(&key(5), &mut out).unwrap(), "a deleted record read back after the copy");
    assert!(r.get(&key(15_000), &mut out).unwrap() && out == vec![b'a'; 100]);
    drop(r);
    fill(e.as_ref(), 100, 1);
    e.close().unwrap();
}

/// `write = "transaction"` (redb's harness's fjall): every write of a transaction is read back,
/// deletes included, and the settings say which path wrote.
#[test]
fn fjall_transactions_write_what_batches_write() {
    let Some(d) = descriptor("fjall") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let e = open(d, tmp.path(), &[("write", "transaction".into())]);
    fill(e.as_ref(), 5_000, 0);
    let k = key(7);
    e.write(&[WriteOp { key: &k, value: None }]).unwrap();
    let mut r = e.reader().unwrap();
    let mut out = Vec::new();
    assert!(!r.get(&k, &mut out).unwrap());
    assert!(r.get(&key(4_999), &mut out).unwrap() && out == vec![b'a'; 100]);
    drop(r);
    assert!(e.settings()["write_batch"].contains("transaction"), "{:?}", e.settings());
    e.close().unwrap();
}

/// `write = "optimistic-transaction"` (redb's harness's RocksDB): batches and single writes go
/// through transactions of an OptimisticTransactionDB, deletes included, and are read back,
/// scanned and settled; the settings say so; a read-only open with it is refused by name.
#[test]
fn rocksdb_optimistic_transactions_write_what_batches_write() {
    let Some(d) = descriptor("rocksdb") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut e = open(d, tmp.path(), &[("write", "optimistic-transaction".into())]);
    fill(e.as_ref(), 5_000, 0);
    let k = key(7);
    e.write(&[WriteOp { key: &k, value: None }]).unwrap();
    let one = key(9_999);
    e.write(&[WriteOp { key: &one, value: Some(b"single") }]).unwrap();
    let mut r = e.reader().unwrap();
    let mut out = Vec::new();
    assert!(!r.get(&k, &mut out).unwrap(), "a delete in a transaction");
    assert!(r.get(&key(4_999), &mut out).unwrap() && out == vec![b'a'; 100]);
    assert!(r.get(&one, &mut out).unwrap() && out == b"single");
    let mut seen = 0;
    assert_eq!(
        r.scan(None, 10, &mut |_, _| {
            seen += 1;
            true
        })
        .unwrap(),
        10
    );
    drop(r);
    assert_eq!(seen, 10);
    assert!(e.settle().unwrap().contains("compacted"));
    assert!(e.settings()["write_batch"].contains("optimistic transaction"), "{:?}", e.settings());
    e.close().unwrap();

    let given: BTreeMap<String, serde_json::Value> =
        [("write".to_string(), serde_json::json!("optimistic-transaction"))].into_iter().collect();
    let options = Options::parse(d.name, d.options, &given).unwrap();
    let args = OpenArgs { mode: OpenMode::ReadOnly, ..OpenArgs::new(tmp.path(), &options) };
    let refused = (d.open)(&args).err().expect("a read-only open of an optimistic-transaction row").to_string();
    assert!(refused.contains("optimistic-transaction") && refused.contains("read-write only"), "{refused}");
}

/// `read = "snapshot"` (redb's harness's fjall reads): a reader sees the data as of its read
/// transaction, a write after it only once refreshed, in gets and scans alike.
#[test]
fn fjall_snapshot_readers_see_writes_only_after_a_refresh() {
    for name in ["fjall", "fjall2"] {
        fjall_snapshot_reader(name);
    }
}

fn fjall_snapshot_reader(name: &str) {
    let Some(d) = descriptor(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let e = open(d, tmp.path(), &[("read", "snapshot".into())]);
    fill(e.as_ref(), 100, 0);
    let mut r = e.reader().unwrap();
    let (k, mut out) = (key(100), Vec::new());
    e.write(&[WriteOp { key: &k, value: Some(b"later") }, WriteOp { key: &key(3), value: None }]).unwrap();
    let count = |r: &mut Box<dyn Reader + '_>| r.scan(None, usize::MAX, &mut |_, _| true).unwrap();
    assert!(!r.get(&k, &mut out).unwrap(), "a put after the read transaction");
    assert!(r.get(&key(3), &mut out).unwrap(), "a delete after the read transaction");
    assert_eq!(count(&mut r), 100);
    r.refresh().unwrap();
    assert!(r.get(&k, &mut out).unwrap() && out == b"later");
    assert!(!r.get(&key(3), &mut out).unwrap());
    assert_eq!(count(&mut r), 100);
    drop(r);
    assert!(e.settings()["reader"].contains("read transaction"), "{:?}", e.settings());
    e.close().unwrap();
}

/// `compaction = "none"` (redb's harness's fjall, whose `compact` does nothing): settle leaves
/// the memtable unflushed and no table written, where the default settle flushes and compacts.
#[test]
fn fjall_settle_without_compaction_writes_no_table() {
    let Some(d) = descriptor("fjall") else { return };
    for (compaction, tables) in [("none", 0.0), ("major", 1.0)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut e = open(d, tmp.path(), &[("compaction", compaction.into())]);
        fill(e.as_ref(), 5_000, 0);
        let said = e.settle().unwrap();
        let m = e.internals();
        assert_eq!(get(&m, "fjall.tables"), tables, "compaction = {compaction}: {said}, {m:?}");
        assert_eq!(said.contains("no compaction"), compaction == "none", "{said}");
        assert!(e.settings()["compaction"].starts_with(if compaction == "none" { "persist" } else { "flush" }));
        e.close().unwrap();
    }
}
