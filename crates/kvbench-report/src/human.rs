//! Figures written for a person: sizes, times and rates in the unit that reads best, versions
//! short enough for a cell.

pub fn human_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

pub fn human_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

pub fn human_rate(rate: f64) -> String {
    if rate == 0.0 {
        "0".into()
    } else if rate >= 1e6 {
        format!("{:.2}M", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.1}k", rate / 1e3)
    } else {
        format!("{rate:.1}")
    }
}

/// A version short enough for a table cell: long strings (a server's banner, say) keep their
/// first version-like token, marked with `…`.
pub fn short_version(text: &str) -> String {
    const MAX: usize = 20;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    // The first run of digits and dots that holds a dot: `7.0.15` out of `redis v=7.0.15 sha=...`.
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let run: String = rest[start..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let run = run.trim_end_matches('.');
        if run.contains('.') {
            return format!("{run}…");
        }
        rest = &rest[start + run.len().max(1)..];
    }
    let mut s: String = text.chars().take(MAX - 1).collect();
    s.push('…');
    s
}

/// Megabytes (10^6 bytes) per second, to three significant figures.
pub(crate) fn human_mb(mb_bytes: f64) -> String {
    match mb_bytes / 1e6 {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

pub(crate) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
