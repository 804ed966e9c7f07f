//! `source = "dir:PATH"`: a directory of files named `<integer>.json`, one record per file, the
//! way article 000 loaded its documents. Record i is the file with the i-th smallest number; its
//! key is that number shaped by the dataset's key spec (`u32be` gives the article's 4-byte
//! big-endian keys), its value the file's bytes as they are.
//!
//! Every entry of the directory must be such a file: anything else is an error naming it, so a
//! stray file never silently becomes a record or goes missing.

use std::path::{Path, PathBuf};

use super::{make_key, RecordSource};
use crate::spec::{DatasetSpec, KeyKind};

pub struct DirSource {
    /// (number, path) sorted by number.
    files: Vec<(u64, PathBuf)>,
    key_kind: KeyKind,
    key_width: usize,
}

impl DirSource {
    pub fn new(dir: &str, spec: &DatasetSpec) -> Result<DirSource, String> {
        let root = Path::new(dir);
        let what = |e: std::io::Error| format!("dataset source `dir:{dir}`: {e}");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(root).map_err(what)? {
            let entry = entry.map_err(what)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let number = name
                .strip_suffix(".json")
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<u64>().ok());
            let Some(number) = number else {
                return Err(format!(
                    "dataset source `dir:{dir}`: `{name}` is not named <integer>.json (every entry must be)"
                ));
            };
            if !entry.file_type().map_err(what)?.is_file() {
                return Err(format!("dataset source `dir:{dir}`: `{name}` is not a regular file"));
            }
            if spec.key.kind == KeyKind::U32be && number > u32::MAX as u64 {
                return Err(format!("dataset source `dir:{dir}`: `{name}`: {number} does not fit a u32be key"));
            }
            files.push((number, entry.path()));
        }
        files.sort();
        for w in files.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(format!(
                    "dataset source `dir:{dir}`: `{}` and `{}` both name record {}",
                    w[0].1.file_name().unwrap_or_default().to_string_lossy(),
                    w[1].1.file_name().unwrap_or_default().to_string_lossy(),
                    w[0].0
                ));
            }
        }
        Ok(DirSource { files, key_kind: spec.key.kind, key_width: spec.key.width as usize })
    }

    fn read(&self, record: u64, value: &mut Vec<u8>) -> anyhow::Result<()> {
        let path = &self.files[record as usize].1;
        value.clear();
        let limit = u64::from(crate::spec::limits::VALUE_SIZE);
        value.extend_from_slice(&crate::input::read_regular(path, "dataset value", limit).map_err(anyhow::Error::msg)?);
        Ok(())
    }
}

impl RecordSource for DirSource {
    fn len(&self) -> u64 {
        self.files.len() as u64
    }

    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        make_key(self.key_kind, self.key_width, self.files[record as usize].0, key);
        self.read(record, value)
    }

    /// A directory has no second version of a document: the `version`-th update of `record`
    /// writes the document of record (`record` + `version`) mod n, real data of the same kind.
    fn update_value(&mut self, record: u64, version: u64, value: &mut Vec<u8>) {
        let n = self.len();
        let j = (record + version) % n;
        if self.read(j, value).is_err() {
            // The file vanished since the load was generated: keep the update deterministic.
            value.clear();
            value.extend_from_slice(format!("{{\"missing\": {j}}}").as_bytes());
        }
    }

    fn key(&mut self, record: u64, key: &mut Vec<u8>) {
        make_key(self.key_kind, self.key_width, self.files[record as usize].0, key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::KeySpec;

    fn spec() -> DatasetSpec {
        DatasetSpec { key: KeySpec { kind: KeyKind::U32be, width: 0 }, ..Default::default() }
    }

    #[test]
    fn files_load_in_numeric_order_with_their_numbers_as_keys() {
        let dir = tempfile::tempdir().unwrap();
        for (n, body) in [(10, "{\"a\":10}"), (2, "{\"a\":2}"), (123456, "{}")] {
            std::fs::write(dir.path().join(format!("{n}.json")), body).unwrap();
        }
        let mut s = DirSource::new(dir.path().to_str().unwrap(), &spec()).unwrap();
        assert_eq!(s.len(), 3);
        let (mut k, mut v) = (vec![], vec![]);
        s.record(0, &mut k, &mut v).unwrap();
        assert_eq!((k.as_slice(), v.as_slice()), (&[0, 0, 0, 2][..], &b"{\"a\":2}"[..]));
        s.record(2, &mut k, &mut v).unwrap();
        assert_eq!(k, 123456u32.to_be_bytes());
        s.update_value(0, 1, &mut v);
        assert_eq!(v, b"{\"a\":10}");
    }

    #[test]
    fn a_bad_name_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("1.json"), "{}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let err = DirSource::new(dir.path().to_str().unwrap(), &spec()).err().unwrap();
        assert!(err.contains("`notes.txt` is not named <integer>.json"), "{err}");

        std::fs::remove_file(dir.path().join("notes.txt")).unwrap();
        std::fs::write(dir.path().join("01.json"), "{}").unwrap();
        let err = DirSource::new(dir.path().to_str().unwrap(), &spec()).err().unwrap();
        assert!(err.contains("both name record 1"), "{err}");

        std::fs::remove_file(dir.path().join("01.json")).unwrap();
        std::fs::write(dir.path().join("4294967296.json"), "{}").unwrap();
        let err = DirSource::new(dir.path().to_str().unwrap(), &spec()).err().unwrap();
        assert!(err.contains("does not fit a u32be key"), "{err}");

        let err = DirSource::new("/nonexistent/kvbench", &spec()).err().unwrap();
        assert!(err.contains("dir:/nonexistent/kvbench"), "{err}");
    }

    #[test]
    fn a_plan_builds_from_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir(&docs).unwrap();
        for n in 0..20 {
            std::fs::write(docs.join(format!("{n}.json")), format!("{{\"text\": \"doc {n}\"}}")).unwrap();
        }
        let mut s = spec();
        s.source = Some(format!("dir:{}", docs.display()));
        let mut source = DirSource::new(docs.to_str().unwrap(), &s).unwrap();
        let path = dir.path().join("p.kvbplan");
        let id = crate::planfile::PlanId { seed: 1, spec_hash: 1, spec_json: b"{}" };
        crate::planfile::build_stored(&path, id, &mut source, crate::planfile::LoadOrder::Sequential).unwrap();
        let plan = crate::planfile::PlanFile::open(&path).unwrap();
        assert_eq!(plan.header().records, 20);
        assert_eq!(plan.key(7), 7u32.to_be_bytes());
        assert_eq!(plan.value(7), b"{\"text\": \"doc 7\"}");
    }
}
