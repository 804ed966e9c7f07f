//! The numbers of the worker core's C ABI, written once: kvbench-ffi's `kvbench_abi.h` (which
//! `kvbench.h` includes, and the Go worker reads through cgo) is generated from [`ALL`]
//! (`cargo run -p kvbench-ffi --bin abi-header`), and the Python worker reads them from
//! the library (`kvb_abi_constant`).

use std::ffi::CStr;

/// One constant: its C name, its value, what it means; `group` heads the constants of its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constant {
    pub group: &'static str,
    pub name: &'static CStr,
    pub value: i64,
    pub doc: &'static str,
}

/// The C name `KVB_<NAME>` of a constant, checked for a NUL at compile time.
const fn c_name(bytes: &'static [u8]) -> &'static CStr {
    match CStr::from_bytes_with_nul(bytes) {
        Ok(name) => name,
        Err(_) => panic!("an ABI constant's name holds a NUL"),
    }
}

/// Each group: one doc line and a type, then `NAME = value` entries, each with its own doc lines.
/// Defines `pub const NAME: type` for Rust and one [`Constant`] in [`ALL`] for C and Python.
macro_rules! abi {
    ($( #[doc = $group:literal] $ty:ty { $( $(#[doc = $doc:literal])* $name:ident = $value:expr, )+ } )+) => {
        $( $( $(#[doc = $doc])* pub const $name: $ty = $value; )+ )+

        /// Every constant, in header order.
        pub const ALL: &[Constant] = &[$( $( Constant {
            group: $group,
            name: c_name(concat!("KVB_", stringify!($name), "\0").as_bytes()),
            value: $name as i64,
            doc: concat!("" $(, $doc)*),
        }, )+ )+];
    };
}

abi! {
    /// Step kinds (kvb_step.step).
    i32 { END = 0, OPEN = 1, PREPARE = 2, CLOSE = 3, EVICTED = 4, OPS = 5, SETTLE = 6, }
    /// Open modes (kvb_step.mode).
    i32 { READ_WRITE = 0, READ_ONLY = 1, SECONDARY = 2, }
    /// Unit kinds (kvb_block.kind).
    u8 {
        /// one key: get it
        GET = 1,
        /// its keys: one multi-get request (the engine's own, else gets in a loop)
        MULTI_GET = 2,
        /// from its key, up to scan_len records in key order (kvb_scan)
        SCAN = 3,
        /// its keys: one write batch (each key as its del entry says: put val, delete, merge fields)
        WRITE = 4,
        /// one key: get it, refresh the reader, write val; timed together
        RMW = 5,
        /// one key: open the engine (kvb_step.mode), get, close; timed together
        OPEN_GET = 6,
        /// nothing to run: wait until due, then ask kvb_next again
        WAIT = 7,
    }
    /// A got_len entry (kvb_done): the value read was equal to the key's exp.
    i32 { MATCHED = -2, }
    /// A write's entry (kvb_block.del).
    u8 {
        /// put val
        PUT = 0,
        /// delete the key
        DELETE = 1,
        /// val holds fields of the stored record: merge them in (engines with field-update)
        MERGE_FIELDS = 2,
    }
}

#[cfg(test)]
mod tests {
    use super::ALL;

    #[test]
    fn names_are_unique_and_values_unique_within_a_group() {
        let mut names: Vec<_> = ALL.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a name defined twice");
        for c in ALL {
            let same = ALL.iter().filter(|o| o.group == c.group && o.value == c.value).count();
            assert_eq!(same, 1, "{:?}: its value {} again in its group", c.name, c.value);
        }
    }

    #[test]
    fn the_table_holds_the_rust_constants() {
        let value = |n: &str| ALL.iter().find(|c| c.name.to_str() == Ok(n)).map(|c| c.value);
        assert_eq!(value("KVB_SETTLE"), Some(super::SETTLE as i64));
        assert_eq!(value("KVB_WAIT"), Some(super::WAIT as i64));
        assert_eq!(value("KVB_MATCHED"), Some(-2));
    }
}
