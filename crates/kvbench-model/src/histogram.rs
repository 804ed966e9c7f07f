//! The histogram codec of every latency kvbench records: HdrHistogram with nanosecond values,
//! exchanged as the V2 compressed encoding in base64, which every runtime's HdrHistogram
//! library reads. The worker records into these histograms; the policy and the reports decode
//! them.

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::result::Latency;

/// Longest latency a histogram holds (1 hour); longer samples saturate.
pub const MAX_NS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// Samples one histogram may hold: what a decoded histogram is refused above, and what
/// [`summarize`] summarises. Far above any phase kvbench can run (a billion operations a second
/// for three days), and far below `i64::MAX`, the largest count the V2 encoding can write: a
/// sum of many such histograms still encodes, or is refused, never a panic.
pub const MAX_COUNT: u64 = 1 << 48;

/// HdrHistogram V2 compressed encoding, base64 (what every HdrHistogram library decodes).
/// Infallible for any histogram of at most `i64::MAX` samples (the worker's, or a sum of
/// decoded ones, which [`MAX_COUNT`] bounds).
pub fn encode_histogram(histogram: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(histogram, &mut buf).expect("histogram serialises");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Checked first (`hdrcheck`): a crafted header cannot make decoding allocate by it; a
/// histogram of more than [`MAX_COUNT`] samples is refused.
pub fn decode_histogram(encoded: &str) -> Result<Histogram<u64>, String> {
    let bytes = crate::hdrcheck::checked_bytes(encoded)?;
    let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("{e:?}"))?;
    if h.len() > MAX_COUNT {
        return Err(format!("histogram of {} samples, above the limit of {MAX_COUNT}", h.len()));
    }
    Ok(h)
}

/// None when empty, or beyond [`MAX_COUNT`] samples (a sum of crafted histograms: counts the
/// V2 encoding may not hold, so no summary rather than a panic).
pub fn summarize(histogram: &Histogram<u64>) -> Option<Latency> {
    if histogram.is_empty() || histogram.len() > MAX_COUNT {
        return None;
    }
    Some(Latency {
        min_ns: histogram.min(),
        mean_ns: histogram.mean(),
        p50_ns: histogram.value_at_quantile(0.50),
        p90_ns: histogram.value_at_quantile(0.90),
        p95_ns: histogram.value_at_quantile(0.95),
        p99_ns: histogram.value_at_quantile(0.99),
        p999_ns: histogram.value_at_quantile(0.999),
        max_ns: histogram.max(),
        stdev_ns: histogram.stdev(),
        hdr: encode_histogram(histogram),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_counts_beyond_max_count_are_refused_or_unsummarised_never_a_panic() {
        let mut h = new_histogram();
        h.record_n(1000, MAX_COUNT).unwrap();
        let text = encode_histogram(&h);
        assert_eq!(decode_histogram(&text).unwrap().len(), MAX_COUNT);
        h.record(1000).unwrap();
        let e = decode_histogram(&encode_histogram(&h)).unwrap_err();
        assert!(e.contains("above the limit of 281474976710656"), "{e}");
        // A sum of histograms at the limit (a report pooling crafted repetitions) saturates
        // beyond what V2 encodes: no summary, no panic.
        let mut sum = new_histogram();
        sum.record_n(1000, u64::MAX / 2 + 1).unwrap();
        assert!(summarize(&sum).is_none());
        assert!(summarize(&decode_histogram(&text).unwrap()).is_some());
    }
}
