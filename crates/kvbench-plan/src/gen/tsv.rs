//! `source = "file:PATH.tsv"`: records a user brings as a tab-separated file, one per line, the
//! key in column `key_column` and the value in column `value_column` (counted from 1, like
//! `cut -f`; default 1 and 2). Empty lines are skipped and a trailing CR is dropped; a line
//! without those columns is an error naming the file and the line. A relative path is taken
//! from the current directory. `records`, `key` and `value` specs do not apply. Update `n` of a
//! record writes its value followed by `#n`, so a read can tell the versions apart.

use std::path::Path;

use super::RecordSource;

pub struct TsvFile {
    text: Vec<u8>,
    /// (key start, key end, value start, value end) byte offsets into `text`, one per record.
    spans: Vec<(usize, usize, usize, usize)>,
}

impl TsvFile {
    pub fn open(path: &str, key_column: Option<usize>, value_column: Option<usize>) -> Result<TsvFile, String> {
        let what = "dataset source file";
        let text = crate::input::read_regular(Path::new(path), what, crate::input::limits::DATASET_BYTES)?;
        TsvFile::parse(path, text, key_column.unwrap_or(1), value_column.unwrap_or(2))
    }

    fn parse(path: &str, text: Vec<u8>, key_column: usize, value_column: usize) -> Result<TsvFile, String> {
        if key_column == 0 || value_column == 0 {
            return Err(format!("dataset source `file:{path}`: key_column and value_column count from 1"));
        }
        if key_column == value_column {
            return Err(format!("dataset source `file:{path}`: key_column and value_column are both {key_column}"));
        }
        let need = key_column.max(value_column);
        let mut spans = Vec::new();
        // Grows with the columns a line has, never with the number asked for.
        let mut cols = Vec::new();
        let mut start = 0;
        let mut line_no = 0;
        while start < text.len() {
            line_no += 1;
            let end = text[start..].iter().position(|&b| b == b'\n').map_or(text.len(), |p| start + p);
            let mut line_end = end;
            if line_end > start && text[line_end - 1] == b'\r' {
                line_end -= 1;
            }
            if line_end > start {
                cols.clear();
                let mut c = start;
                for (j, &b) in text[start..line_end].iter().enumerate() {
                    if b == b'\t' {
                        cols.push((c, start + j));
                        c = start + j + 1;
                    }
                }
                cols.push((c, line_end));
                if cols.len() < need {
                    return Err(format!(
                        "{path} line {line_no}: {} tab-separated column(s), but key_column = {key_column} and \
                         value_column = {value_column}",
                        cols.len()
                    ));
                }
                let (k, v) = (cols[key_column - 1], cols[value_column - 1]);
                spans.push((k.0, k.1, v.0, v.1));
            }
            start = end + 1;
        }
        Ok(TsvFile { text, spans })
    }
}

impl RecordSource for TsvFile {
    fn len(&self) -> u64 {
        self.spans.len() as u64
    }

    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        let (ks, ke, vs, ve) = self.spans[record as usize];
        key.clear();
        key.extend_from_slice(&self.text[ks..ke]);
        value.clear();
        value.extend_from_slice(&self.text[vs..ve]);
        Ok(())
    }

    fn update_value(&mut self, record: u64, version: u64, value: &mut Vec<u8>) {
        use std::io::Write;
        let (_, _, vs, ve) = self.spans[record as usize];
        value.clear();
        value.extend_from_slice(&self.text[vs..ve]);
        let _ = write!(value, "#{version}");
    }

    fn key(&mut self, record: u64, key: &mut Vec<u8>) {
        let (ks, ke, _, _) = self.spans[record as usize];
        key.clear();
        key.extend_from_slice(&self.text[ks..ke]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::source_for;
    use crate::spec::DatasetSpec;

    #[test]
    fn reads_the_chosen_columns() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.tsv");
        std::fs::write(&p, "製造\t0\tヤフー(株)\t35\t6,310,000\r\n\n小売\t1\tテスト商事株式会社\t40\t5,000,000\n")
            .unwrap();
        let spec = DatasetSpec {
            source: Some(format!("file:{}", p.display())),
            key_column: Some(3),
            value_column: Some(5),
            ..Default::default()
        };
        let mut g = source_for(0, &spec).unwrap();
        assert_eq!(g.len(), 2, "the empty line is skipped");
        let (mut k, mut v) = (vec![], vec![]);
        g.record(0, &mut k, &mut v).unwrap();
        assert_eq!(k, "ヤフー(株)".as_bytes());
        assert_eq!(v, b"6,310,000", "the CR is dropped");
        g.record(1, &mut k, &mut v).unwrap();
        assert_eq!(k, "テスト商事株式会社".as_bytes());
        g.update_value(1, 2, &mut v);
        assert_eq!(v, b"5,000,000#2");
    }

    #[test]
    fn a_malformed_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.tsv");
        std::fs::write(&p, "a\t1\nb\t2\nc only\n").unwrap();
        let spec = DatasetSpec { source: Some(format!("file:{}", p.display())), ..Default::default() };
        let err = source_for(0, &spec).err().expect("line 3 has one column");
        assert!(err.contains("bad.tsv line 3"), "{err}");
        let missing = DatasetSpec { source: Some("file:/nonexistent/x.tsv".into()), ..Default::default() };
        assert!(source_for(0, &missing).err().unwrap().contains("/nonexistent/x.tsv"));
    }

    #[test]
    fn regression_a_huge_value_column_is_an_error_not_an_abort() {
        let e = super::TsvFile::parse("d.tsv", b"a\t1\n".to_vec(), 1, 1 << 32).err().unwrap();
        assert!(e.contains("d.tsv line 1: 2 tab-separated column(s)"), "{e}");
    }
}
