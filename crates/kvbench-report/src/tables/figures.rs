//! A declared cell's figure: the metric read from a phase (or the row), and the figure
//! written in the original's unit and rounding.

use kvbench_model::report_table::{Cell, Metric, Rounding, Unit};
use kvbench_model::result::{EngineResult, PhaseResult};

use crate::{human_bytes, pooled_histogram, wall_ns};

/// The metric's value in its base unit (ns, bytes, count), or None where the phase has none.
pub(super) fn value(metric: Metric, counter: Option<&str>, row: &EngineResult, phase: &PhaseResult) -> Option<f64> {
    let latency = phase.latency.as_ref();
    let disk = phase.disk.as_ref();
    // `a|b|c`: the first of these counters the phase has (one column over engines that each
    // name the same figure their own way: SST bytes are `rocksdb.sst.live_bytes` on one row,
    // `pebble.sstable_bytes` on another).
    let counted = |map: &std::collections::BTreeMap<String, f64>| {
        counter.and_then(|names| names.split('|').find_map(|name| map.get(name.trim()).copied()))
    };
    Some(match metric {
        Metric::Wall => wall_ns(phase) as f64,
        Metric::Elapsed => phase.elapsed_ns as f64,
        Metric::Ops => phase.ops as f64,
        Metric::Requests => phase.requests as f64,
        Metric::OpsPerSec => phase.ops_per_sec,
        Metric::RequestsPerSec => requests_per_sec(phase),
        Metric::LatencyMin => latency?.min_ns as f64,
        Metric::LatencyMean => latency?.mean_ns,
        Metric::LatencyP50 => latency?.p50_ns as f64,
        Metric::LatencyP95 => latency?.p95_ns as f64,
        Metric::LatencyP99 => latency?.p99_ns as f64,
        Metric::LatencyP999 => latency?.p999_ns as f64,
        Metric::LatencyP9999 => pooled_histogram(&[phase])?.value_at_quantile(0.9999) as f64,
        Metric::LatencyMax => latency?.max_ns as f64,
        Metric::CpuUser => phase.cpu_user_ns as f64,
        Metric::CpuSys => phase.cpu_sys_ns as f64,
        Metric::MaxRss => (phase.max_rss_kb * 1024) as f64,
        Metric::Space => row.space_bytes as f64,
        Metric::PhaseSpace => disk?.space_bytes as f64,
        // Results from before file lengths were recorded have none: unmeasured, not 0 B.
        Metric::PhaseFileBytes => disk.filter(|d| d.file_bytes > 0)?.file_bytes as f64,
        Metric::DiskRead => disk?.read_bytes as f64,
        Metric::DiskWrite => disk?.write_bytes as f64,
        Metric::WriteAmplification => disk.filter(|d| d.logical_write_bytes > 0)?.write_amplification,
        Metric::StallPercent => stall_percent(phase),
        Metric::Runtime => counted(&phase.runtime)?,
        Metric::Internal => counted(&phase.internals)?,
    })
}

/// Requests per second: the peers count a scan (a seek and its nexts) as one operation, where
/// kvbench's ops of a scan are the records it read.
fn requests_per_sec(phase: &PhaseResult) -> f64 {
    if phase.ops == 0 {
        return 0.0;
    }
    phase.ops_per_sec * phase.requests as f64 / phase.ops as f64
}

/// Stalled share of a phase's whole intervals, as db_bench's report.tsv's stall%.
fn stall_percent(phase: &PhaseResult) -> f64 {
    let whole = phase.intervals.len().saturating_sub(1).max(1);
    100.0 * phase.stalls as f64 / whole as f64
}

/// The passes over every record `phase` made: its operations over those of the first of the
/// cell's `per_pass_of` phases the row ran (1 when there is none).
pub(super) fn passes(cell: &Cell, row: &EngineResult, phase: &PhaseResult) -> f64 {
    let records = cell.per_pass_of.iter().find_map(|name| super::ran(row, name)).map_or(0, |p| p.ops);
    if records == 0 {
        1.0
    } else {
        (phase.ops as f64 / records as f64).max(1.0)
    }
}

/// `value` (in its base unit) as the cell writes it.
pub(super) fn written(cell: &Cell, value: f64) -> String {
    let shown = match cell.unit {
        Unit::Count | Unit::Bytes | Unit::Ns => value,
        Unit::Us => value / 1e3,
        Unit::Ms => value / 1e6,
        Unit::S => value / 1e9,
    };
    let decimals = usize::from(cell.decimals);
    let text = match cell.rounding {
        Rounding::Fixed => format!("{shown:.decimals$}"),
        Rounding::Significant => significant(shown, decimals),
        Rounding::Binary => human_bytes(shown as u64),
        Rounding::BinaryFixed => binary_fixed(shown as u64, decimals),
        Rounding::Minutes => minutes(shown),
    };
    text + &cell.suffix
}

/// `digits` decimals at and above 1, `digits` significant digits below (a loop of 100 reads
/// takes microseconds once the open is out of it).
pub(super) fn significant(value: f64, digits: usize) -> String {
    if value >= 1.0 || value <= 0.0 {
        return format!("{value:.digits$}");
    }
    let decimals = (digits as f64 - 1.0 - value.log10().floor()) as usize;
    format!("{value:.decimals$}")
}

/// Bytes in the largest binary unit below them, with `decimals` digits (redb's sizes).
fn binary_fixed(bytes: u64, decimals: usize) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let unit = (0..units.len()).rev().find(|&u| bytes >= 1u64 << (10 * u)).unwrap_or(0);
    format!("{:.decimals$} {}", bytes as f64 / (1u64 << (10 * unit)) as f64, units[unit])
}

/// Seconds as minutes and seconds (`1m 26s`), or seconds with a decimal below a minute.
pub(super) fn minutes(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1}s")
    } else {
        format!("{}m {:.0}s", (seconds / 60.0).floor(), seconds % 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundings_write_figures_as_the_originals_printed_them() {
        assert_eq!(significant(12_345.0 / 1e9, 3), "0.0000123");
        assert_eq!(significant(0.0733, 3), "0.0733");
        assert_eq!(significant(2.0, 3), "2.000");
        assert_eq!(binary_fixed(3 << 30, 2), "3.00 GiB");
        assert_eq!(binary_fixed(12, 2), "12.00 B");
        assert_eq!(minutes(86.0), "1m 26s");
        assert_eq!(minutes(0.2), "0.2s");
        let ms = Cell { unit: Unit::Ms, decimals: 2, suffix: " ms".into(), ..Default::default() };
        assert_eq!(written(&ms, 6_320_000.0), "6.32 ms");
    }
}
