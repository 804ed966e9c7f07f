//! Hostile input to the plan-file reader: a real plan file with one byte changed, or cut short,
//! is opened or refused with a message naming it, never a panic (a property test, bounded in
//! cases so it runs in seconds). Here rather than beside the reader (kvbench-plan) because the
//! sample plan is a brought file stored by the policy's dataset resolution.

use std::path::{Path, PathBuf};

use kvbench_model::scenario::Scenario;
use proptest::prelude::*;

fn write(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("s.toml");
    std::fs::write(&p, body).unwrap();
    p
}

/// 1000 cases, or `KVBENCH_FUZZ_CASES` (`bench/fuzz.sh` runs many more).
fn cases() -> u32 {
    std::env::var("KVBENCH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// A real plan file with one byte changed, or cut short, through the plan-file reader:
    /// opened or refused with a message naming it, never a panic.
    #[test]
    fn the_plan_file_reader_never_panics(at in any::<prop::sample::Index>(), b in any::<u8>(), cut in any::<bool>()) {
        let good = sample_plan();
        let tmp = tempfile::tempdir().unwrap();
        let mut bytes = good.clone();
        let i = at.index(bytes.len());
        if cut { bytes.truncate(i) } else { bytes[i] = b }
        let p = tmp.path().join("plan.bin");
        std::fs::write(&p, &bytes).unwrap();
        if let Err(e) = kvbench_plan::planfile::PlanFile::open(&p) {
            prop_assert!(format!("{e:#}").contains("plan.bin"), "{e:#}");
        }
    }
}

/// The bytes of a real plan file: a brought TSV file's records stored by the planner.
fn sample_plan() -> Vec<u8> {
    static PLAN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    PLAN.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let tsv: String = (0..40).map(|i| format!("key{}\tvalue {i}\n", i % 31)).collect();
        std::fs::write(tmp.path().join("d.tsv"), tsv).unwrap();
        let source = tmp.path().join("d.tsv");
        let body = format!(
            "engines = [\"memory\"]\n[dataset]\nsource = \"file:{}\"\n[[phase]]\nkind = \"load\"\n",
            source.display()
        );
        let s = Scenario::from_file(&write(tmp.path(), &body)).unwrap();
        let data = kvbench_policy::dataset::resolve(&s, &tmp.path().join("plans")).unwrap();
        std::fs::read(data.plan.expect("a brought file is stored in a plan")).unwrap()
    })
    .clone()
}
