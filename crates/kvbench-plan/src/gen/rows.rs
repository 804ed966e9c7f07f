//! `generator = "rows"`: article 002's table rows (an integer, a short text, a double) as a
//! key-value record. The key follows the dataset's `key` spec (decimal record numbers by
//! default); the value is the row in PostgreSQL's COPY text form, columns separated by tabs:
//! `<int>\t<text>\t<double>`, e.g. `42\tkqe\t0.734`. The integer is the record number + 1 (the
//! article inserted 1..n); the text is 3 lower-case letters and the double has 3 decimals, drawn
//! per record, so rows are about as small as the article's (`i`, "def", 0.143). `value` does
//! not apply.

use std::io::Write;

use rand::Rng;

use super::{make_key, record_rng, RecordSource};
use crate::spec::{DatasetSpec, KeyKind};

pub struct Rows {
    seed: u64,
    records: u64,
    key_kind: KeyKind,
    key_width: usize,
}

impl Rows {
    pub fn new(seed: u64, spec: &DatasetSpec) -> Result<Rows, String> {
        if spec.key.kind == KeyKind::U32be && spec.records > u32::MAX as u64 {
            return Err("key kind u32be holds at most 4294967295 records".into());
        }
        Ok(Rows { seed, records: spec.records, key_kind: spec.key.kind, key_width: spec.key.width as usize })
    }

    fn row(&self, stream: u64, record: u64, value: &mut Vec<u8>) {
        let mut rng = record_rng(self.seed, stream, record);
        value.clear();
        let _ = write!(value, "{}\t", record + 1);
        for _ in 0..3 {
            value.push(b'a' + rng.gen_range(0..26u8));
        }
        let _ = write!(value, "\t0.{:03}", rng.gen_range(0..1000u32));
    }
}

impl RecordSource for Rows {
    fn len(&self) -> u64 {
        self.records
    }

    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        make_key(self.key_kind, self.key_width, record, key);
        self.row(1, record, value);
        Ok(())
    }

    fn update_value(&mut self, record: u64, version: u64, value: &mut Vec<u8>) {
        self.row(1 + version, record, value);
    }

    fn key(&mut self, record: u64, key: &mut Vec<u8>) {
        make_key(self.key_kind, self.key_width, record, key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_int_text_double() {
        let spec = DatasetSpec { generator: Some("rows".into()), records: 100, ..Default::default() };
        let mut g = Rows::new(1, &spec).unwrap();
        let (mut k, mut v) = (vec![], vec![]);
        for i in 0..100 {
            g.record(i, &mut k, &mut v).unwrap();
            let text = String::from_utf8(v.clone()).unwrap();
            let cols: Vec<&str> = text.split('\t').collect();
            assert_eq!(cols.len(), 3, "{text}");
            assert_eq!(cols[0].parse::<u64>().unwrap(), i + 1);
            assert_eq!(cols[1].len(), 3);
            assert!(cols[1].bytes().all(|b| b.is_ascii_lowercase()));
            let d: f64 = cols[2].parse().unwrap();
            assert!((0.0..1.0).contains(&d));
        }
        let mut u = Vec::new();
        g.update_value(5, 1, &mut u);
        assert!(u.starts_with(b"6\t"));
    }
}
