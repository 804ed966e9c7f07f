//! An encoded histogram from a file is checked before it is decoded: its header alone sets
//! what decoding allocates (the counts array from its bounds, a buffer of its payload length),
//! so a header is refused unless it is one kvbench could have written. A result file is
//! checked as a whole first: the number and size of its histograms are bounded, so decoding
//! them all has a budget.

use std::io::Read;

use base64::Engine as _;

/// Base64 characters of one encoded histogram (kvbench's are a few KB).
pub const MAX_ENCODED: usize = 1 << 20;
/// Significant digits (kvbench records with 3).
pub const MAX_DIGITS: u32 = 3;
/// Highest trackable value, in nanoseconds (about 78 hours; kvbench's is one hour).
pub const MAX_HIGHEST: u64 = 1 << 48;
/// Bytes of the counts payload: at 3 digits and the highest value above, about 40 000
/// counts of at most 9 bytes each.
pub const MAX_PAYLOAD: u32 = 512 << 10;
/// Histograms in one result file: the decode budget (each decode allocates a counts array of
/// at most about 320 KB).
pub const MAX_PER_FILE: usize = 200_000;

// The V2 cookies with the word-size bits HdrHistogram sets (0x10).
const V2: u32 = 0x1c84_9313;
const V2_DEFLATE: u32 = 0x1c84_9314;

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn be64(bytes: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(a)
}

/// The decoded bytes of `text` when its header is one kvbench writes; else why not.
pub fn checked_bytes(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if text.len() > MAX_ENCODED {
        return Err(format!("histogram of {} characters, above the limit of {MAX_ENCODED}", text.len()));
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| format!("histogram: {e}"))?;
    check_header(&bytes)?;
    Ok(bytes)
}

/// Whether `text` is base64 of a V2 encoding (plain or deflate) by its cookie, without
/// inflating anything: what passing an encoding through to an interval log needs (nothing is
/// decoded there, so nothing is allocated by its header).
pub fn is_v2(text: &str) -> bool {
    let text = text.trim();
    // The cookie is the first 4 bytes: the first 8 characters decode to 6 bytes.
    let Some(head) = text.get(..8) else { return false };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(head) else { return false };
    text.len() <= MAX_ENCODED
        && text.len().is_multiple_of(4)
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && matches!(be32(&bytes, 0), V2 | V2_DEFLATE)
}

/// The V2 header (40 bytes, inside the zlib stream when compressed).
fn check_header(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 8 {
        return Err("histogram: too short for a header".into());
    }
    let mut head = [0u8; 40];
    match be32(bytes, 0) {
        V2_DEFLATE => {
            // Only the header is inflated here: 40 bytes, whatever the stream holds.
            let mut z = flate2::read::ZlibDecoder::new(&bytes[8..]);
            z.read_exact(&mut head).map_err(|e| format!("histogram header: {e}"))?;
        }
        V2 if bytes.len() >= 40 => head.copy_from_slice(&bytes[..40]),
        c => return Err(format!("histogram: cookie {c:#x} is not HdrHistogram V2")),
    }
    if be32(&head, 0) != V2 {
        return Err("histogram: the compressed header is not HdrHistogram V2".into());
    }
    let (payload, digits, low, high) = (be32(&head, 4), be32(&head, 12), be64(&head, 16), be64(&head, 24));
    if payload > MAX_PAYLOAD {
        return Err(format!("histogram: payload of {payload} bytes, above the limit of {MAX_PAYLOAD}"));
    }
    if digits > MAX_DIGITS {
        return Err(format!("histogram: {digits} significant digits, above the limit of {MAX_DIGITS}"));
    }
    if low < 1 || high < low.saturating_mul(2) || high > MAX_HIGHEST {
        return Err(format!("histogram: bounds {low} to {high} outside 1 to {MAX_HIGHEST}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{decode_histogram, encode_histogram, new_histogram};
    use std::io::Write;

    /// An encoded V2 deflate histogram with this header and no counts.
    fn crafted(payload: u32, digits: u32, low: u64, high: u64) -> String {
        let mut inner = Vec::new();
        for v in [V2, payload, 0, digits] {
            inner.extend_from_slice(&v.to_be_bytes());
        }
        inner.extend_from_slice(&low.to_be_bytes());
        inner.extend_from_slice(&high.to_be_bytes());
        inner.extend_from_slice(&1.0f64.to_be_bytes());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&inner).unwrap();
        let z = z.finish().unwrap();
        let mut out = V2_DEFLATE.to_be_bytes().to_vec();
        out.extend_from_slice(&(z.len() as u32).to_be_bytes());
        out.extend_from_slice(&z);
        base64::engine::general_purpose::STANDARD.encode(out)
    }

    #[test]
    fn regression_a_crafted_histogram_header_allocates_nothing_large() {
        let mut h = new_histogram();
        h.record(1234).unwrap();
        assert_eq!(decode_histogram(&encode_histogram(&h)).unwrap().len(), 1, "kvbench's own decode");
        for (what, text) in [
            ("payload", crafted(u32::MAX, 3, 1, 1 << 40)),
            ("digits", crafted(0, 5, 1, 1 << 40)),
            ("bounds", crafted(0, 3, 1, u64::MAX / 2)),
            ("bounds", crafted(0, 3, 0, 1 << 40)),
        ] {
            let e = decode_histogram(&text).unwrap_err();
            assert!(e.contains(what), "{what}: {e}");
        }
        assert!(decode_histogram(&"A".repeat(MAX_ENCODED + 4)).unwrap_err().contains("characters"));
        assert!(decode_histogram(&crafted(0, 3, 1, 1 << 40)).unwrap().is_empty());
    }

    #[test]
    fn is_v2_reads_the_cookie_only() {
        let mut h = new_histogram();
        h.record(1234).unwrap();
        assert!(is_v2(&encode_histogram(&h)));
        assert!(is_v2(&crafted(0, 3, 1, 1 << 40)));
        let b64 = base64::engine::general_purpose::STANDARD;
        assert!(!is_v2(&b64.encode(0x1c84_9301u32.to_be_bytes().repeat(4))), "a V1 cookie");
        assert!(!is_v2("HISTFA"), "too short for a cookie");
        assert!(!is_v2(&format!("{}!", encode_histogram(&h))), "not base64");
    }
}
