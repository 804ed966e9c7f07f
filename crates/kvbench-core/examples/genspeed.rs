//! How fast the dataset generators make records, without the plan file around them:
//! `cargo run --release -p kvbench-core --example genspeed -- RECORDS VALUE_SIZE [printable|random]`.
//! The plan build adds the kernel's cost of writing the file (page-cache allocation and copy),
//! which `kvbench run` reports separately when it builds a plan.

use std::time::Instant;

use kvbench_core::gen::{source_for, RecordSource};
use kvbench_core::spec::{DatasetSpec, ValueContent, ValueSpec};

fn main() {
    let mut args = std::env::args().skip(1);
    let records: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let size: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let content = match args.next().as_deref() {
        Some("random") => ValueContent::Random,
        _ => ValueContent::Printable,
    };
    let spec = DatasetSpec {
        records,
        value: ValueSpec { size: Some(size), min: None, max: None, content },
        ..Default::default()
    };
    let mut src: Box<dyn RecordSource> = source_for(42, &spec).expect("valid spec");
    let (mut k, mut v) = (Vec::new(), Vec::new());
    let mut bytes = 0u64;
    let t = Instant::now();
    for i in 0..records {
        src.record(i, &mut k, &mut v).expect("synthetic records never fail");
        bytes += v.len() as u64;
        std::hint::black_box((&k, &v));
    }
    let s = t.elapsed().as_secs_f64();
    println!("{records} records x {size} B ({content:?}): {:.2} GB/s of values ({:.2} s)", bytes as f64 / s / 1e9, s);
}
