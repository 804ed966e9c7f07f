//! The numbers of the worker core's C ABI (kvbench-ffi's `kvbench.h`), written once: the header
//! and the Python worker's `core.py` are held to [`ALL`] by tests (kvbench-ffi's
//! `tests/header.rs`, drivers/python's `test_abi.py`); the Go worker reads them from the header.

/// Step kinds a worker is handed (`kvb_step.step`).
pub const END: i32 = 0;
pub const OPEN: i32 = 1;
pub const PREPARE: i32 = 2;
pub const CLOSE: i32 = 3;
pub const EVICTED: i32 = 4;
pub const OPS: i32 = 5;
pub const SETTLE: i32 = 6;

/// Open modes (`kvb_step.mode`).
pub const READ_WRITE: i32 = 0;
pub const READ_ONLY: i32 = 1;
pub const SECONDARY: i32 = 2;

/// Unit kinds of a block (`kvb_block.kind`).
pub const GET: u8 = 1;
pub const MULTI_GET: u8 = 2;
pub const SCAN: u8 = 3;
pub const WRITE: u8 = 4;
pub const RMW: u8 = 5;
pub const OPEN_GET: u8 = 6;
pub const WAIT: u8 = 7;

/// A `got_len` entry: the worker found the value equal to the key's `exp`.
pub const MATCHED: i32 = -2;

/// Every constant above by its name in kvbench.h, for the tests that hold the copies to it.
pub const ALL: &[(&str, i64)] = &[
    ("KVB_END", END as i64),
    ("KVB_OPEN", OPEN as i64),
    ("KVB_PREPARE", PREPARE as i64),
    ("KVB_CLOSE", CLOSE as i64),
    ("KVB_EVICTED", EVICTED as i64),
    ("KVB_OPS", OPS as i64),
    ("KVB_SETTLE", SETTLE as i64),
    ("KVB_READ_WRITE", READ_WRITE as i64),
    ("KVB_READ_ONLY", READ_ONLY as i64),
    ("KVB_SECONDARY", SECONDARY as i64),
    ("KVB_GET", GET as i64),
    ("KVB_MULTI_GET", MULTI_GET as i64),
    ("KVB_SCAN", SCAN as i64),
    ("KVB_WRITE", WRITE as i64),
    ("KVB_RMW", RMW as i64),
    ("KVB_OPEN_GET", OPEN_GET as i64),
    ("KVB_WAIT", WAIT as i64),
    ("KVB_MATCHED", MATCHED as i64),
];
