//! Small SVG helpers for the HTML report: scales (linear and log), ticks, axes, colours.
//! Hover values are SVG `<title>` elements, which every browser shows without a script.

use std::fmt::Write;

pub fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Colour of the row with index `index` in the run (the same in every chart).
pub fn colour(index: usize) -> String {
    const BASE: [&str; 10] =
        ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
    match BASE.get(index) {
        Some(c) => c.to_string(),
        // Past the base palette: hues a golden angle apart stay distinguishable.
        None => format!("hsl({:.0},55%,45%)", (index as f64 * 137.508) % 360.0),
    }
}

/// Marker shape of the row with index `index` on a curve's labelled points: a circle for the first
/// ten rows, then a shape per ten rows, as the dash patterns go.
pub fn marker(index: usize) -> Marker {
    [Marker::Circle, Marker::Square, Marker::Triangle, Marker::Diamond][(index / 10) % 4]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

impl Marker {
    /// The shape centred on (x, y), filled with `fill`, with `inner` (a `<title>`, say) inside.
    pub fn draw(self, x_pos: f64, y_pos: f64, fill: &str, inner: &str) -> String {
        let r = 2.8;
        let shape = match self {
            Marker::Circle => {
                return format!(
                    "<circle cx=\"{x_pos:.1}\" cy=\"{y_pos:.1}\" r=\"2.5\" fill=\"{fill}\">{inner}</circle>"
                )
            }
            Marker::Square => [(-r, -r), (r, -r), (r, r), (-r, r)].to_vec(),
            Marker::Triangle => [(0.0, -r - 0.5), (r + 0.5, r), (-r - 0.5, r)].to_vec(),
            Marker::Diamond => [(0.0, -r - 0.7), (r + 0.7, 0.0), (0.0, r + 0.7), (-r - 0.7, 0.0)].to_vec(),
        };
        let pts: Vec<(f64, f64)> = shape.iter().map(|(dx, dy)| (x_pos + dx, y_pos + dy)).collect();
        format!("<polygon class=\"marker\" points=\"{}\" fill=\"{fill}\">{inner}</polygon>", points(&pts))
    }
}

/// Dash pattern of the row with index `index` (SVG `stroke-dasharray`): solid for the first ten,
/// whose colours are the base palette's; past them a pattern per ten rows, so two lines of
/// close hues still differ.
pub fn dash(index: usize) -> Option<&'static str> {
    const DASHES: [&str; 4] = ["6 3", "2 2", "8 3 2 3", "12 4"];
    index.checked_sub(10).map(|k| DASHES[(k / 10) % DASHES.len()])
}

/// A map from data values to pixels along one axis.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub p0: f64,
    pub p1: f64,
}

impl Scale {
    pub fn linear(lo: f64, hi: f64, p0: f64, p1: f64) -> Scale {
        Scale { lo, hi: if hi > lo { hi } else { lo + 1.0 }, log: false, p0, p1 }
    }

    /// A log scale over whole decades covering `lo..hi` (both > 0).
    pub fn log_decades(lo: f64, hi: f64, p0: f64, p1: f64) -> Scale {
        let lo = 10f64.powf(lo.max(1e-9).log10().floor());
        let mut hi = 10f64.powf(hi.max(1e-9).log10().ceil());
        if hi <= lo {
            hi = lo * 10.0;
        }
        Scale { lo, hi, log: true, p0, p1 }
    }

    pub fn map(&self, value: f64) -> f64 {
        let f = if self.log {
            (value.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (value - self.lo) / (self.hi - self.lo)
        };
        self.p0 + f.clamp(0.0, 1.0) * (self.p1 - self.p0)
    }

    /// Tick values: decades (with 2 and 5 between when there are few) or round steps.
    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let decades = (self.hi / self.lo).log10().round() as i32;
            let mut d = self.lo;
            while d <= self.hi * 1.0001 {
                t.push(d);
                if decades <= 2 {
                    t.extend([2.0 * d, 5.0 * d].into_iter().filter(|v| *v < self.hi));
                }
                d *= 10.0;
            }
            t.sort_by(|a, b| a.total_cmp(b));
            t
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let first = (self.lo / step).ceil() as i64;
            let last = (self.hi / step + 1e-9).floor() as i64;
            (first..=last).map(|i| i as f64 * step).collect()
        }
    }
}

/// A tick number without float noise: at most three decimals, trailing zeros dropped.
pub fn num(value: f64) -> String {
    let s = format!("{value:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1e-12);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p)
}

/// Plot area of a chart within its SVG.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub w: f64,
    pub h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    pub fn x0(&self) -> f64 {
        self.left
    }
    pub fn x1(&self) -> f64 {
        self.w - self.right
    }
    pub fn y0(&self) -> f64 {
        self.h - self.bottom
    }
    pub fn y1(&self) -> f64 {
        self.top
    }

    pub fn open(&self, label: &str) -> String {
        format!(
            "<svg viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">",
            esc(label),
            w = self.w,
            h = self.h
        )
    }

    /// Vertical grid lines and labels along the bottom, with the axis title under them.
    pub fn x_axis(&self, out: &mut String, x_scale: &Scale, ticks: &[(f64, String)], title: &str) {
        for (v, label) in ticks {
            let px = x_scale.map(*v);
            let _ = write!(
                out,
                "<line class=\"grid\" x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\"/><text class=\"tick\" x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                self.y1(),
                self.y0(),
                self.y0() + 14.0,
                esc(label)
            );
        }
        let _ = write!(
            out,
            "<text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (self.x0() + self.x1()) / 2.0,
            self.h - 4.0,
            esc(title)
        );
    }

    /// Horizontal grid lines and labels on the left (or right), with a rotated axis title.
    pub fn y_axis(&self, out: &mut String, y_scale: &Scale, ticks: &[(f64, String)], title: &str, right: bool) {
        let (tx, anchor, ax) =
            if right { (self.x1() + 4.0, "start", self.w - 8.0) } else { (self.x0() - 4.0, "end", 12.0) };
        for (v, label) in ticks {
            let py = y_scale.map(*v);
            if !right {
                let _ = write!(
                    out,
                    "<line class=\"grid\" x1=\"{:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\"/>",
                    self.x0(),
                    self.x1()
                );
            }
            let _ = write!(
                out,
                "<text class=\"tick\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
                py + 4.0,
                esc(label)
            );
        }
        let my = (self.y0() + self.y1()) / 2.0;
        let _ = write!(
            out,
            "<text class=\"axis-label\" x=\"{ax:.1}\" y=\"{my:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {ax:.1} {my:.1})\">{}</text>",
            esc(title)
        );
    }

    pub fn border(&self, out: &mut String) {
        let _ = write!(
            out,
            "<rect class=\"plot\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
            self.x0(),
            self.y1(),
            self.x1() - self.x0(),
            self.y0() - self.y1()
        );
    }
}

/// Points as an SVG polyline `points` attribute.
pub fn points(pts: &[(f64, f64)]) -> String {
    pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_past_the_palette_get_a_dash_pattern() {
        assert_eq!(dash(9), None);
        assert_eq!(dash(10), Some("6 3"));
        assert_eq!(dash(27), Some("2 2"));
    }

    #[test]
    fn thirty_rows_have_thirty_distinct_styles() {
        let styles: std::collections::HashSet<(String, Option<&str>, Marker)> =
            (0..30).map(|i| (colour(i), dash(i), marker(i))).collect();
        assert_eq!(styles.len(), 30);
        assert_eq!((marker(0), marker(10), marker(29)), (Marker::Circle, Marker::Square, Marker::Triangle));
    }

    #[test]
    fn log_scale_spans_whole_decades() {
        let s = Scale::log_decades(350.0, 42_000.0, 0.0, 300.0);
        assert_eq!((s.lo, s.hi), (100.0, 100_000.0));
        assert_eq!(s.ticks(), vec![100.0, 1000.0, 10_000.0, 100_000.0]);
        assert!((s.map(1000.0) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn linear_ticks_are_round() {
        let s = Scale::linear(0.0, 2_340_000.0, 0.0, 100.0);
        assert_eq!(s.ticks(), vec![0.0, 500_000.0, 1_000_000.0, 1_500_000.0, 2_000_000.0]);
    }
}
