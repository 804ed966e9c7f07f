//! Redis's `record = "hash"`: a record of fields (YCSB's shape) kept as a Redis hash, with the
//! commands YCSB's Redis binding sends for each operation: an insert is HSET of every field
//! plus ZADD of the key to the index sorted set, an update HSET of the one field, a read
//! HGETALL, a delete DEL plus ZREM. A scan reads a range of the index and then HGETALL of each
//! key; the index's members all have score 0 and the range is ZRANGEBYLEX, so a scan visits
//! keys in key order from its start key (YCSB's binding scores keys by Java's `hashCode` and
//! reads them with ZRANGEBYSCORE: a range in hash order, which no reader could check).
//!
//! Values cross the worker boundary in the fields layout (docs/plan-format.md, "Fields"):
//! split into fields on the way out, rebuilt in field-number order from HGETALL on the way in
//! (a hash's own order is not its insertion order once it outgrows a listpack).

use kvbench_model::engine::{EngineError, Result};
use kvbench_model::job::{push_field, split_fields};

use super::resp::{self, Reply};

/// The index sorted set's name under the engine's prefix (YCSB's is `_indices`).
pub fn index_key(prefix: &[u8]) -> Vec<u8> {
    [prefix, b"_indices"].concat()
}

fn not_fields() -> EngineError {
    EngineError::Store(
        "redis record = \"hash\": the value is not a record of fields (the dataset's values need `fields`)".into(),
    )
}

/// Appends an insert of `value`'s fields under `prefix`+`key`: HSET and ZADD. Returns the
/// commands appended.
pub fn push_insert(cmd: &mut Vec<u8>, prefix: &[u8], index: &[u8], key: &[u8], value: &[u8]) -> Result<usize> {
    let fields = split_fields(value).filter(|f| !f.is_empty()).ok_or_else(not_fields)?;
    resp::push_header(cmd, 2 + 2 * fields.len());
    resp::push_arg(cmd, &[b"HSET"]);
    resp::push_arg(cmd, &[prefix, key]);
    for (name, bytes) in fields {
        resp::push_arg(cmd, &[name]);
        resp::push_arg(cmd, &[bytes]);
    }
    resp::push_header(cmd, 4);
    resp::push_arg(cmd, &[b"ZADD"]);
    resp::push_arg(cmd, &[index]);
    resp::push_arg(cmd, &[b"0"]);
    resp::push_arg(cmd, &[prefix, key]);
    Ok(2)
}

/// Appends a delete of `prefix`+`key`: DEL and ZREM. Returns the commands appended.
pub fn push_delete(cmd: &mut Vec<u8>, prefix: &[u8], index: &[u8], key: &[u8]) -> usize {
    resp::push_header(cmd, 2);
    resp::push_arg(cmd, &[b"DEL"]);
    resp::push_arg(cmd, &[prefix, key]);
    resp::push_header(cmd, 3);
    resp::push_arg(cmd, &[b"ZREM"]);
    resp::push_arg(cmd, &[index]);
    resp::push_arg(cmd, &[prefix, key]);
    2
}

/// Appends `HSET prefix+key name value` (an update of one field).
pub fn push_field_update(cmd: &mut Vec<u8>, prefix: &[u8], key: &[u8], name: &[u8], value: &[u8]) {
    resp::push_header(cmd, 4);
    resp::push_arg(cmd, &[b"HSET"]);
    resp::push_arg(cmd, &[prefix, key]);
    resp::push_arg(cmd, &[name]);
    resp::push_arg(cmd, &[value]);
}

/// Appends `HGETALL prefix+key`.
pub fn push_read(cmd: &mut Vec<u8>, prefix: &[u8], key: &[u8]) {
    cmd.extend_from_slice(b"*2\r\n$7\r\nHGETALL\r\n");
    resp::push_arg(cmd, &[prefix, key]);
}

/// Appends the index range of a scan: up to `limit` keys from `prefix`+`start` (or the first).
pub fn push_range(cmd: &mut Vec<u8>, prefix: &[u8], index: &[u8], start: Option<&[u8]>, limit: usize) {
    resp::push_header(cmd, 7);
    resp::push_arg(cmd, &[b"ZRANGEBYLEX"]);
    resp::push_arg(cmd, &[index]);
    // The index holds only this prefix's keys: the range ends at its end (`+`).
    match start {
        Some(k) => resp::push_arg(cmd, &[b"[", prefix, k]),
        None => resp::push_arg(cmd, &[b"-"]),
    }
    resp::push_arg(cmd, &[b"+"]);
    resp::push_arg(cmd, &[b"LIMIT"]);
    resp::push_arg(cmd, &[b"0"]);
    let mut n = Vec::with_capacity(20);
    super::push_decimal(&mut n, limit);
    resp::push_arg(cmd, &[&n]);
}

/// Buffers a reader reuses to rebuild records from HGETALL replies.
#[derive(Default)]
pub struct Scratch {
    bytes: Vec<u8>,
    /// Per field: its number, and where its name and bytes end in `bytes`.
    at: Vec<(u64, usize, usize)>,
}

/// The number of a field named `field<i>`; other names sort after every numbered one.
fn field_number(name: &[u8]) -> u64 {
    let digits = name.strip_prefix(b"field").unwrap_or(b"x");
    std::str::from_utf8(digits).ok().and_then(|d| d.parse().ok()).unwrap_or(u64::MAX)
}

/// Reads one HGETALL reply into `out` in the fields layout, fields in number order; false for
/// an empty hash (no such record). Every element is read, also after a bad one.
pub fn read_record(conn: &mut resp::Conn, out: &mut Vec<u8>, scratch: &mut Scratch) -> Result<bool> {
    out.clear();
    scratch.bytes.clear();
    scratch.at.clear();
    let n = match conn.reply()? {
        Reply::Array(n) => n,
        other => return Err(resp::unexpected(&other)),
    };
    let mut bad = None;
    let mut name_end = 0;
    for i in 0..n {
        match conn.reply()? {
            Reply::Bulk(b) if i % 2 == 0 => {
                scratch.bytes.extend_from_slice(b);
                name_end = scratch.bytes.len();
            }
            Reply::Bulk(b) => {
                scratch.bytes.extend_from_slice(b);
                let start = scratch.at.last().map_or(0, |a| a.2);
                scratch.at.push((field_number(&scratch.bytes[start..name_end]), name_end, scratch.bytes.len()));
            }
            other => {
                bad.get_or_insert_with(|| resp::unexpected(&other));
            }
        }
    }
    if let Some(e) = bad {
        return Err(e);
    }
    if n % 2 == 1 {
        return Err(EngineError::Store("redis: HGETALL replied with an odd number of elements".into()));
    }
    // Each field's name starts where the field before it ended.
    let mut spans: Vec<(u64, usize, usize, usize)> = Vec::with_capacity(scratch.at.len());
    let mut start = 0;
    for &(num, name_end, end) in &scratch.at {
        spans.push((num, start, name_end, end));
        start = end;
    }
    spans.sort_by_key(|x| x.0);
    for (_, a, b, e) in spans {
        push_field(out, &scratch.bytes[a..b], &scratch.bytes[b..e]);
    }
    Ok(n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_numbers_order_field10_after_field9() {
        assert!(field_number(b"field9") < field_number(b"field10"));
        assert_eq!(field_number(b"other"), u64::MAX);
    }

    #[test]
    fn an_insert_is_hset_of_every_field_and_zadd_of_the_key() {
        let mut v = Vec::new();
        push_field(&mut v, b"field0", b"ab");
        push_field(&mut v, b"field1", b"c");
        let mut cmd = Vec::new();
        assert_eq!(push_insert(&mut cmd, b"p:", b"p:_indices", b"k", &v).unwrap(), 2);
        let text = String::from_utf8(cmd).unwrap();
        assert!(
            text.starts_with("*6\r\n$4\r\nHSET\r\n$3\r\np:k\r\n$6\r\nfield0\r\n$2\r\nab\r\n$6\r\nfield1\r\n"),
            "{text}"
        );
        assert!(text.ends_with("*4\r\n$4\r\nZADD\r\n$10\r\np:_indices\r\n$1\r\n0\r\n$3\r\np:k\r\n"), "{text}");
    }

    #[test]
    fn a_plain_value_is_refused_with_the_reason() {
        let err = push_insert(&mut Vec::new(), b"", b"_indices", b"k", b"plain").unwrap_err();
        assert!(err.to_string().contains("values need `fields`"), "{err}");
    }
}
