//! Fuzzing the reports over a read result: a real result (`tests/fuzz-corpus/result`) whose
//! histogram texts are changed (characters replaced, inserted, cut; whole histograms swapped
//! for another's or repeated across repetitions) renders in every format, compares with
//! itself, and writes its hlog files: never a panic. Cases: `KVBENCH_FUZZ_CASES` / 64 (each
//! renders every format; a few in `make test`, many in `bench/fuzz.sh`). A seeded generator, so
//! a failure names its case.

use std::path::PathBuf;

use kvbench_model::result::RunResult;
use kvbench_report::Format;

fn cases() -> u64 {
    let n: u64 = std::env::var("KVBENCH_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    (n / 64).max(1)
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(b.len());
        let c = B64[rng.below(B64.len())];
        match rng.next() % 4 {
            0 if i < b.len() => b[i] = c,
            1 => b.insert(i.min(b.len()), c),
            2 => b.truncate(i),
            _ => b.extend_from_slice(&b.clone()[i..]),
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn corpus() -> RunResult {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-corpus/result/quick-two-rows.json");
    RunResult::from_json(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn reports_of_results_with_changed_histograms_never_panic() {
    let good = corpus();
    let all: Vec<String> = good
        .engines
        .iter()
        .flat_map(|e| &e.phases)
        .flat_map(|p| p.latency.iter().map(|l| l.hdr.clone()).chain(p.intervals.iter().map(|i| i.hdr.clone())))
        .collect();
    for case in 0..cases() {
        let mut rng = Rng(0x51af_d7ed_558c_cd1b ^ (case + 1));
        let mut r = good.clone();
        // Half the cases as repetitions of one row, so pooled histograms are added.
        if case % 2 == 1 {
            let mut second = r.engines[0].clone();
            second.repetition = 1;
            r.engines.push(second);
        }
        for p in r.engines.iter_mut().flat_map(|e| e.phases.iter_mut()) {
            if let Some(l) = p.latency.as_mut() {
                l.hdr = match rng.next() % 3 {
                    0 => mutate(&l.hdr, &mut rng),
                    1 => all[rng.below(all.len())].clone(),
                    _ => l.hdr.clone(),
                };
            }
            for iv in p.intervals.iter_mut() {
                if rng.next().is_multiple_of(2) {
                    iv.hdr = mutate(&iv.hdr, &mut rng);
                }
            }
        }
        for f in [Format::Table, Format::Markdown, Format::Csv, Format::Json, Format::Html, Format::Ycsb] {
            let _ = kvbench_report::render(&r, f);
        }
        let _ = kvbench_report::hlog_files(&r);
        let _ = kvbench_report::compare(&good, &r, &kvbench_report::Method::default());
    }
}
