//! The ABI's numbers have one source, kvbench-worker's `abi` module: `kvbench_abi.h` is generated
//! from it and checked in, kvbench.h includes it and states none of its own, and the library hands
//! the same table to the Python worker. These tests fail when any of them drifts.

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};

use kvbench_ffi::header::{abi_header, abi_header_path, REGENERATE};
use kvbench_worker::abi::ALL;

/// Every `KVB_NAME = N` enum entry and `#define KVB_NAME (N)` of a header's text.
fn header_constants(file: &str, text: &str) -> BTreeMap<String, i64> {
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
            let v = value.parse().unwrap_or_else(|_| panic!("{file}: {name} = {value:?} is not a number"));
            assert!(found.insert(name.to_string(), v).is_none(), "{file}: {name} defined twice");
        }
    }
    found
}

fn source() -> BTreeMap<String, i64> {
    ALL.iter().map(|c| (c.name.to_str().unwrap().to_string(), c.value)).collect()
}

#[test]
fn kvbench_abi_h_is_what_the_generator_writes() {
    let path = abi_header_path();
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == abi_header(),
        "{} differs from what kvbench-worker's abi.rs generates: run `{REGENERATE}` and commit the file",
        path.display()
    );
}

#[test]
fn the_generated_header_states_every_constant_of_the_source() {
    assert_eq!(header_constants("kvbench_abi.h", &abi_header()), source());
}

#[test]
fn kvbench_h_includes_the_generated_header_and_states_no_number_itself() {
    let text = include_str!("../kvbench.h");
    assert!(text.contains("#include \"kvbench_abi.h\""), "kvbench.h does not include kvbench_abi.h");
    let own = header_constants("kvbench.h", text);
    assert!(own.is_empty(), "kvbench.h states ABI numbers of its own (they belong in abi.rs): {own:?}");
}

#[test]
fn kvb_abi_constant_hands_out_the_source_table_then_ends() {
    let mut found = BTreeMap::new();
    let (mut name, mut value): (*const c_char, i64) = (std::ptr::null(), 0);
    // SAFETY: both out-pointers are valid for one write.
    while unsafe { kvbench_ffi::kvb_abi_constant(found.len(), &mut name, &mut value) } == 1 {
        // SAFETY: the library's names are static NUL-terminated strings.
        let n = unsafe { CStr::from_ptr(name) }.to_str().unwrap().to_string();
        found.insert(n, value);
    }
    assert_eq!(found, source());
    // SAFETY: NULL out-pointers are allowed.
    assert_eq!(unsafe { kvbench_ffi::kvb_abi_constant(0, std::ptr::null_mut(), std::ptr::null_mut()) }, 1);
}

#[test]
fn ffi_matched_is_the_rust_source() {
    assert_eq!(kvbench_ffi::KVB_MATCHED, kvbench_worker::abi::MATCHED);
}
