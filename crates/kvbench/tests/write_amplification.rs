//! What the disk saw agrees with what the store says it wrote: over a fillrandom and an
//! overwrite, the bytes kvbench counts for RocksDB's process (written to the device, plus
//! those deleted before writeback) match RocksDB's own statistics (compaction + flush + WAL
//! bytes) within 15 %.

use std::process::Command;

use kvbench_model::result::{PhaseResult, RunResult, Status};

const SCENARIO: &str = r#"# RocksDB's write amplification, by kvbench and by RocksDB.
seed = 7
sync = "none"
timeout = 300
[dataset]
records = 300000
value = { size = 100 }
[[phase]]
name = "fillrandom"
kind = "load"
batch = 1
[[phase]]
name = "overwrite"
kind = "update"
distribution = "uniform"
[[engine]]
name = "rocksdb"
options = { write_buffer = "2m", statistics = true }
"#;

#[test]
fn rocksdb_write_amplification_agrees_with_its_own_statistics() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("wa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.toml"), SCENARIO).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(&dir)
        .args(["run", "s.toml", "--no-progress", "--out", "results", "--data-dir", "data", "--plan-dir", "plans"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let entry = std::fs::read_dir(dir.join("results")).unwrap().next().expect("a result file").unwrap();
    let r = RunResult::from_json(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
    let e = &r.engines[0];
    assert_eq!(e.status, Status::Ok, "{:?}", e.error);
    let phase = |n: &str| -> &PhaseResult { e.phases.iter().find(|p| p.name == n).unwrap() };
    let (load, over) = (phase("fillrandom"), phase("overwrite"));
    let disk = |p: &PhaseResult| p.disk.clone().expect("disk figures");
    let written: u64 = [load, over].iter().map(|p| disk(p).write_bytes + disk(p).cancelled_write_bytes).sum();
    let logical: u64 = [load, over].iter().map(|p| disk(p).logical_write_bytes).sum();
    // RocksDB's counters are cumulative since the open: the overwrite's end covers both phases.
    let own = |k: &str| over.internals.get(k).copied().unwrap_or_else(|| panic!("{k} in {:?}", over.internals));
    let rocksdb =
        own("rocksdb.compaction.bytes_written") + own("rocksdb.flush.bytes_written") + own("rocksdb.wal.bytes_written");
    assert!(own("rocksdb.compaction.bytes_written") > 0.0, "the run must compact to test anything");
    let ratio = written as f64 / rocksdb;
    assert!((0.85..=1.15).contains(&ratio), "kvbench {written} B against RocksDB's {rocksdb} B: {ratio:.3}");
    assert!(logical > 0 && disk(over).write_amplification > 1.0, "{:?}", disk(over));
    std::fs::remove_dir_all(&dir).unwrap();
}
