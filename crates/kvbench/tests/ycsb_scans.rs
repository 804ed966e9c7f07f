//! YCSB workload E's scans as YCSB's CoreWorkload makes them (issue 32): a scan starts at the
//! key of a record drawn by the request distribution, never at a record not yet inserted, and
//! the start records are as skewed as YCSB's ScrambledZipfian makes them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kvbench_model::job::Dist;
use kvbench_plan::derive::{rnd, unit, ycsbhash, zipf, zipfian_dist};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn kvbench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvbench"))
        .current_dir(dir)
        .env_remove("KVBENCH_FAULT")
        .args(args)
        .output()
        .unwrap()
}

/// The mixed phase of `kvbench plan --dump`: each scan's start record, and whether it was
/// inserted (loaded, or inserted by an op before it) when the scan starts.
fn dumped_scan_starts(dump: &str, loaded: u64) -> Vec<(u64, bool)> {
    let mut newest = loaded - 1;
    let run = dump.split("# phase run").nth(1).expect("a phase named run");
    let mut starts = Vec::new();
    for line in run.lines().skip(1) {
        let mut f = line.split(' ');
        match (f.next(), f.next().map(|r| r.parse::<u64>().unwrap())) {
            (Some("insert"), Some(r)) => newest = newest.max(r),
            (Some("scan"), Some(r)) => starts.push((r, r <= newest)),
            _ => panic!("unexpected dump line {line:?}"),
        }
    }
    starts
}

/// Share of the draws taken by the most drawn 1% of `records` records.
fn top_1pc_share(draws: impl Iterator<Item = u64>, records: u64) -> f64 {
    let mut hits: HashMap<u64, u64> = HashMap::new();
    let mut n = 0u64;
    for r in draws {
        *hits.entry(r).or_default() += 1;
        n += 1;
    }
    let mut counts: Vec<u64> = hits.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    counts.iter().take((records / 100) as usize).sum::<u64>() as f64 / n as f64
}

/// YCSB's CoreWorkload on workload E, written from its code: `ops` operations, inserts with
/// probability `insert`, every other op a scan starting at `nextKeynum()` — a draw of
/// ScrambledZipfian over `loaded + 2 * expected inserts + 1` records, drawn again while above
/// the newest inserted record. Its own random numbers (not kvbench's seeds).
fn ycsb_e_scan_starts(loaded: u64, ops: u64, insert: f64) -> Vec<u64> {
    let n = loaded + (ops as f64 * insert * 2.0) as u64 + 1;
    let Dist::Zipfian { items, zetan, eta, theta, alpha, .. } = zipfian_dist(n, 0.99).unwrap() else { panic!() };
    let mut x = 0u64;
    let mut next = || {
        x += 1;
        unit(rnd(0x5eed_1234, x))
    };
    let (mut newest, mut starts) = (loaded - 1, Vec::new());
    for _ in 0..ops {
        if next() < insert {
            newest += 1;
            continue;
        }
        let start = loop {
            let r = ycsbhash(zipf(next(), items, zetan, eta, theta, alpha)) as u64 % n;
            if r <= newest {
                break r;
            }
        };
        starts.push(start);
    }
    starts
}

#[test]
fn ycsb_e_scans_start_at_inserted_records_with_ycsbs_skew() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = root().join("scenarios/ycsb-e.toml");
    let o = kvbench(tmp.path(), &["plan", scenario.to_str().unwrap(), "--dump", "--plan-dir", "plans"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let loaded = 100_000;
    let starts = dumped_scan_starts(&String::from_utf8(o.stdout).unwrap(), loaded);
    assert!(starts.len() > 90_000, "{} scans", starts.len());
    let early: Vec<_> = starts.iter().filter(|s| !s.1).take(5).collect();
    assert!(early.is_empty(), "scans start at records not inserted yet: {early:?}");
    let ours = top_1pc_share(starts.iter().map(|s| s.0), loaded);
    let ycsb = top_1pc_share(ycsb_e_scan_starts(loaded, 100_000, 0.05).into_iter(), loaded);
    assert!((ours - ycsb).abs() < 0.01, "top-1% start share: kvbench {ours:.4}, YCSB's generator {ycsb:.4}");
}

#[test]
fn the_plan_summary_shows_the_scan_start_skew() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = root().join("scenarios/ycsb-e.toml");
    let o = kvbench(tmp.path(), &["plan", scenario.to_str().unwrap(), "--plan-dir", "plans"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let line = out.lines().find(|l| l.contains("scan start records")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("top-1%") && line.ends_with(" start past the newest record"), "{line}");
    assert!(line.contains(" 0 of "), "{line}");
}

/// Hashed keys put a record's key anywhere in key order: every scan, started at its record's
/// key, must return exactly the records from there on (the memory engine, every read checked).
#[test]
fn scans_of_hashed_keys_start_at_their_records_key_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("e.toml");
    std::fs::write(
        &scenario,
        "name = \"e-small\"\nseed = 7\nengines = [\"memory\"]\n\
         [dataset]\nrecords = 3000\nkey = { kind = \"ycsb\" }\nvalue = { size = 40 }\n\
         [[phase]]\nkind = \"load\"\ndistribution = \"sequential\"\n\
         [[phase]]\nname = \"run\"\nkind = \"mixed\"\ncount = 3000\ndistribution = \"zipfian\"\n\
         length = 20\nmin_length = 1\nmix = { scan = 90, insert = 10 }\n",
    )
    .unwrap();
    let args = ["run", scenario.to_str().unwrap(), "--no-progress", "--format", "json", "--out", "out"];
    let o = kvbench(tmp.path(), &[&args[..], &["--data-dir", "data", "--plan-dir", "plans"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file = std::fs::read_dir(tmp.path().join("out")).unwrap().next().unwrap().unwrap().path();
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let run = r["engines"][0]["phases"].as_array().unwrap().iter().find(|p| p["name"] == "run").unwrap().clone();
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(run["mismatches"], 0, "{run}");
    assert_eq!(run["missing"], 0, "{run}");
    assert!(run["ops"].as_u64().unwrap() > 3000, "{run}");
}
