//! Regression (issue 32, item 5): a load batch the rocksdb writer streams (`Writer::write_rows`:
//! each row derived into a WriteBatch built by hand in RocksDB's format) stores exactly the
//! rows derived, read back from the real engine, batches of one and of many alike.

use std::collections::BTreeMap;

use kvbench_engines::{find, Entry};
use kvbench_model::engine::{OpenArgs, Options, WriteOp};

mod read_back;

/// Row i: a key of 8 digits and a value whose length crosses the one-byte varint (0..400).
fn row(i: usize, k: &mut Vec<u8>, v: &mut Vec<u8>) {
    k.clear();
    k.extend_from_slice(format!("{i:08}").as_bytes());
    v.clear();
    v.extend((0..(i * 7) % 400).map(|j| (i + j) as u8));
}

#[test]
fn regression_streamed_batches_read_back_every_record() {
    let Some(Entry::Ready(d)) = find("rocksdb") else { panic!("engine rocksdb was not built") };
    let dir = tempfile::tempdir().unwrap();
    let options = Options::parse("rocksdb", d.options, &BTreeMap::new()).unwrap();
    let args = OpenArgs { expected_records: 3001, ..OpenArgs::new(dir.path(), &options) };
    let e = (d.open)(&args).unwrap();
    {
        let mut w = e.writer().unwrap().expect("rocksdb has writers per thread");
        assert!(w.streams_rows(), "a read-write rocksdb streams its load batches");
        w.write_rows(1000, &mut row).unwrap();
        let mut shifted = |i: usize, k: &mut Vec<u8>, v: &mut Vec<u8>| row(i + 1000, k, v);
        w.write_rows(2000, &mut shifted).unwrap();
        let mut last = |_: usize, k: &mut Vec<u8>, v: &mut Vec<u8>| row(3000, k, v);
        w.write_rows(1, &mut last).unwrap();
    }
    assert_eq!(read_back::read_back(e.as_ref(), row, "rocksdb"), 3001, "records read back");
    e.write(&[WriteOp { key: b"00000000", value: None }]).unwrap();
    e.close().unwrap();
}
