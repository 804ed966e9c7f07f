//! kvbench.h states the ABI's numbers for C readers (and the Go worker, through cgo); the Rust
//! constants in kvbench-worker's `abi` module are their one source. These tests fail when the
//! header's copy and the source disagree, or when one names a constant the other lacks.

use std::collections::BTreeMap;

use kvbench_worker::abi::ALL;

/// Every `KVB_NAME = N` enum entry and `#define KVB_NAME (N)` of the header.
fn header_constants() -> BTreeMap<String, i64> {
    let text = include_str!("../kvbench.h");
    let mut found = BTreeMap::new();
    for part in text.split([',', '{', '}', '\n']) {
        let part = part.split("/*").next().unwrap_or("").trim();
        let (name, value) = if let Some(def) = part.strip_prefix("#define ") {
            match def.split_once(' ') {
                Some((n, v)) => (n, v),
                None => continue,
            }
        } else if let Some((n, v)) = part.split_once('=') {
            (n.trim_start_matches("enum").trim(), v)
        } else {
            continue;
        };
        let value = value.trim().trim_start_matches('(').trim_end_matches([')', ';']).trim();
        if name.starts_with("KVB_") {
            let v = value.parse().unwrap_or_else(|_| panic!("kvbench.h: {name} = {value:?} is not a number"));
            assert!(found.insert(name.to_string(), v).is_none(), "kvbench.h: {name} defined twice");
        }
    }
    found
}

#[test]
fn header_constants_equal_the_rust_source() {
    let header = header_constants();
    for (name, value) in ALL {
        assert_eq!(header.get(*name), Some(value), "kvbench.h {name} against kvbench_worker::abi");
    }
}

#[test]
fn header_has_no_constant_the_rust_source_lacks() {
    let source: Vec<&str> = ALL.iter().map(|(n, _)| *n).collect();
    let extra: Vec<String> = header_constants().into_keys().filter(|n| !source.contains(&n.as_str())).collect();
    assert!(extra.is_empty(), "kvbench.h constants missing from kvbench_worker::abi::ALL: {extra:?}");
}

#[test]
fn ffi_matched_is_the_rust_source() {
    assert_eq!(kvbench_ffi::KVB_MATCHED, kvbench_worker::abi::MATCHED);
}
