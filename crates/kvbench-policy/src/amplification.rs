//! Read and write amplification of a phase: the device bytes its row's processes moved over
//! the logical bytes its operations read and wrote. Logical bytes are records touched times
//! the dataset's mean record (key + value) size; a delete moves no logical bytes.

use crate::result::{Disk, PhaseResult};

/// Operation kinds (as `latency_by_op` names them) that write a whole record.
const WRITES: [&str; 4] = ["load", "update", "insert", "rmw"];

/// (logical bytes read, logical bytes written) of a phase, `record_bytes` being the mean
/// size of a record's key and value.
pub fn logical_bytes(phase: &PhaseResult, record_bytes: f64) -> (u64, u64) {
    let bytes = |n: u64| (n as f64 * record_bytes).round() as u64;
    match phase.kind.as_str() {
        "load" | "insert" | "update" => (0, bytes(phase.ops)),
        "rmw" => (bytes(phase.ops), bytes(phase.ops)),
        "get" | "multi-get" | "scan" | "mixed" => {
            // Counts per kind: a mixed phase's ops hold every kind; a read phase's ops are its
            // readers', its background writer's updates are counted apart.
            let count = |k: &str| phase.latency_by_op.get(k).map(|l| histogram_len(&l.hdr)).unwrap_or(0);
            let written: u64 = WRITES.iter().map(|k| count(k)).sum();
            let read = match phase.kind.as_str() {
                "mixed" => phase.ops.saturating_sub(written + count("delete")) + count("rmw"),
                _ => phase.ops,
            };
            (bytes(read), bytes(written))
        }
        _ => (0, 0),
    }
}

fn histogram_len(hdr: &str) -> u64 {
    crate::histogram::decode_histogram(hdr).map(|h| h.len()).unwrap_or(0)
}

/// Fill the phase's disk figures' logical bytes and amplifications.
pub fn amplify(result: &mut PhaseResult, disk: Disk, record_bytes: f64) {
    let (read, write) = logical_bytes(result, record_bytes);
    let ratio = |dev: u64, logical: u64| if logical == 0 { 0.0 } else { dev as f64 / logical as f64 };
    result.disk = Some(Disk {
        logical_read_bytes: read,
        logical_write_bytes: write,
        read_amplification: ratio(disk.read_bytes, read),
        write_amplification: ratio(disk.write_bytes, write),
        ..disk
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(kind: &str, ops: u64) -> PhaseResult {
        PhaseResult { kind: kind.into(), ops, ..Default::default() }
    }

    #[test]
    fn loads_write_and_gets_read_their_records() {
        assert_eq!(logical_bytes(&phase("load", 1000), 110.0), (0, 110_000));
        assert_eq!(logical_bytes(&phase("get", 1000), 110.0), (110_000, 0));
        assert_eq!(logical_bytes(&phase("rmw", 10), 100.0), (1000, 1000));
        assert_eq!(logical_bytes(&phase("delete", 10), 100.0), (0, 0));
    }

    #[test]
    fn a_read_phase_beside_a_writer_keeps_its_readers_reads() {
        let mut updates = crate::histogram::new_histogram();
        for _ in 0..300 {
            updates.record(1000).unwrap();
        }
        let hdr = crate::histogram::encode_histogram(&updates);
        let mut p = phase("get", 100);
        p.latency_by_op.insert("update".into(), crate::result::Latency { hdr, ..Default::default() });
        assert_eq!(logical_bytes(&p, 10.0), (1000, 3000));
        p.kind = "mixed".into();
        p.ops = 400;
        assert_eq!(logical_bytes(&p, 10.0), (1000, 3000));
    }

    #[test]
    fn amplification_is_device_over_logical_and_zero_without_logical_bytes() {
        let mut p = phase("update", 1000);
        amplify(&mut p, Disk { read_bytes: 50_000, write_bytes: 330_000, ..Default::default() }, 110.0);
        let d = p.disk.unwrap();
        assert!((d.write_amplification - 3.0).abs() < 1e-9, "{d:?}");
        assert_eq!(d.read_amplification, 0.0);
        assert_eq!(d.logical_write_bytes, 110_000);
    }
}
