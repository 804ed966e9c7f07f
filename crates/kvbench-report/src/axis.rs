//! Value axes whose labels a person can read: ticks at round values of the unit they are shown
//! in (0, 200, 400 KiB; not 0, 195.3, 390.6 KiB), as many decimals as the step needs, so two
//! ticks never carry the same label; a log axis when the values span more than [`LOG_SPAN`]x.

use crate::svg::{nice_step, Scale};

/// Largest over smallest value from which a chart switches to a log axis: one engine at 2k
/// ops/s beside another at 2M leaves the slow one flat on zero otherwise.
pub const LOG_SPAN: f64 = 30.0;

/// What a value counts, and so its units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Operations per second: 950, 1.2k, 3M.
    Rate,
    /// Nanoseconds: 800 ns, 1.5 µs, 12 ms, 2 s.
    Nanos,
    /// Bytes: 0.5 B, 12 KiB, 3 MiB.
    Bytes,
}

impl Unit {
    /// Each prefix with its factor, smallest first.
    fn prefixes(self) -> &'static [(f64, &'static str)] {
        match self {
            Unit::Rate => &[(1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G")],
            Unit::Nanos => &[(1.0, " ns"), (1e3, " µs"), (1e6, " ms"), (1e9, " s")],
            Unit::Bytes => &[
                (1.0, " B"),
                (1024.0, " KiB"),
                (1_048_576.0, " MiB"),
                (1_073_741_824.0, " GiB"),
                (1_099_511_627_776.0, " TiB"),
            ],
        }
    }

    /// The largest prefix not above `value` (the smallest for values under one).
    fn prefix(self, value: f64) -> (f64, &'static str) {
        let p = self.prefixes();
        p.iter().rev().find(|(f, _)| value.abs() >= *f).copied().unwrap_or(p[0])
    }

    /// One value on its own, as a hover text shows it: three significant digits.
    pub fn show(self, value: f64) -> String {
        if value == 0.0 {
            return format!("0{}", if self == Unit::Rate { "" } else { self.prefixes()[0].1 });
        }
        let (f, name) = self.prefix(value);
        let x = value / f;
        let decimals = (2.0 - x.abs().log10().floor()).clamp(0.0, 12.0) as usize;
        format!("{}{name}", trim(&format!("{x:.decimals$}")))
    }
}

/// A number without trailing zeros after its point.
fn trim(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

/// A value axis: its scale onto `p0..p1` (pixels, bottom to top) and its labelled ticks.
pub struct Axis {
    pub scale: Scale,
    pub ticks: Vec<(f64, String)>,
    pub log: bool,
}

/// The axis for `values` (none negative): linear from zero, or log over whole decades when
/// they span more than [`LOG_SPAN`]x.
pub fn axis(values: &[f64], unit: Unit, p0: f64, p1: f64) -> Axis {
    let hi = values.iter().copied().fold(0.0, f64::max);
    let lo = values.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let none_zero = values.iter().all(|v| *v > 0.0);
    if none_zero && lo.is_finite() && hi / lo > LOG_SPAN {
        return log_axis(lo, hi, unit, p0, p1);
    }
    linear_axis(hi, unit, p0, p1)
}

/// Zero to the first round tick at or above `hi`, ticks round in `hi`'s unit.
fn linear_axis(hi: f64, unit: Unit, p0: f64, p1: f64) -> Axis {
    let (f, name) = unit.prefix(hi);
    let top = if hi > 0.0 { hi / f } else { 1.0 };
    let step = nice_step(top / 5.0);
    let n = (top / step - 1e-9).ceil().max(1.0) as i64;
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let ticks: Vec<(f64, String)> = (0..=n)
        .map(|i| {
            let v = i as f64 * step;
            let label = if i == 0 && unit == Unit::Rate { "0".to_string() } else { format!("{v:.decimals$}{name}") };
            (v * f, label)
        })
        .collect();
    Axis { scale: Scale::linear(0.0, n as f64 * step * f, p0, p1), ticks, log: false }
}

/// Whole decades around `lo..hi`, with 2 and 5 between when there are at most two.
fn log_axis(lo: f64, hi: f64, unit: Unit, p0: f64, p1: f64) -> Axis {
    let scale = Scale::log_decades(lo, hi, p0, p1);
    let ticks = scale.ticks().into_iter().map(|v| (v, unit.show(v))).collect();
    Axis { scale, ticks, log: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(values: &[f64], unit: Unit) -> Vec<String> {
        axis(values, unit, 200.0, 0.0).ticks.into_iter().map(|t| t.1).collect()
    }

    #[test]
    fn regression_41_small_byte_values_get_distinct_labels() {
        // Was "0 B, 0 B, 0 B, 0 B, 0 B, 1 B": whole bytes under a 1.1 B top.
        assert_eq!(labels(&[0.4, 1.0], Unit::Bytes), ["0.0 B", "0.2 B", "0.4 B", "0.6 B", "0.8 B", "1.0 B"]);
    }

    #[test]
    fn ticks_are_round_in_the_unit_shown() {
        assert_eq!(labels(&[0.0, 350_000.0], Unit::Bytes), ["0 KiB", "100 KiB", "200 KiB", "300 KiB", "400 KiB"]);
        assert_eq!(labels(&[1_200_000.0, 2_340_000.0], Unit::Rate), ["0", "0.5M", "1.0M", "1.5M", "2.0M", "2.5M"]);
        assert_eq!(labels(&[40_000.0], Unit::Nanos), ["0 µs", "10 µs", "20 µs", "30 µs", "40 µs"]);
    }

    #[test]
    fn values_far_apart_get_a_log_axis_of_decades() {
        let a = axis(&[2_000.0, 3_000_000.0], Unit::Rate, 200.0, 0.0);
        assert!(a.log);
        let l: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(l, ["1k", "10k", "100k", "1M", "10M"]);
        assert!(!axis(&[0.0, 3_000_000.0, 2_000.0], Unit::Rate, 200.0, 0.0).log, "a zero cannot sit on a log axis");
    }

    #[test]
    fn no_axis_repeats_a_label() {
        for unit in [Unit::Rate, Unit::Nanos, Unit::Bytes] {
            let mut hi = 0.013;
            while hi < 5e12 {
                for values in [vec![0.0, hi], vec![hi / 100.0, hi], vec![hi]] {
                    let l = labels(&values, unit);
                    let distinct: std::collections::HashSet<&String> = l.iter().collect();
                    assert_eq!(distinct.len(), l.len(), "{unit:?} up to {hi}: {l:?}");
                    assert!(l.len() >= 2, "{unit:?} up to {hi}: {l:?}");
                }
                hi *= 1.37;
            }
        }
    }

    #[test]
    fn the_top_tick_covers_the_largest_value() {
        let a = axis(&[0.0, 1_234.0], Unit::Rate, 200.0, 0.0);
        assert!(a.ticks.last().unwrap().0 >= 1_234.0 && a.scale.hi >= 1_234.0);
    }

    #[test]
    fn a_value_is_shown_with_three_significant_digits() {
        assert_eq!(Unit::Rate.show(1_234_567.0), "1.23M");
        assert_eq!(Unit::Nanos.show(850.0), "850 ns");
        assert_eq!(Unit::Bytes.show(0.0), "0 B");
        assert_eq!(Unit::Bytes.show(1536.0), "1.5 KiB");
    }
}
