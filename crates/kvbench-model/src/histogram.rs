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

/// HdrHistogram V2 compressed encoding, base64 (what every HdrHistogram library decodes).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).expect("histogram serialises");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Checked first (`hdrcheck`): a crafted header cannot make decoding allocate by it.
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = crate::hdrcheck::checked_bytes(s)?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("{e:?}"))
}

pub fn summarize(h: &Histogram<u64>) -> Option<Latency> {
    if h.is_empty() {
        return None;
    }
    Some(Latency {
        min_ns: h.min(),
        mean_ns: h.mean(),
        p50_ns: h.value_at_quantile(0.50),
        p90_ns: h.value_at_quantile(0.90),
        p95_ns: h.value_at_quantile(0.95),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        max_ns: h.max(),
        stdev_ns: h.stdev(),
        hdr: encode_histogram(h),
    })
}
