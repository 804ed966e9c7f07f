//! The HTML report in a real browser ([`crate::browser`]): headless Chromium renders the
//! fixture's page with no console message, every chart present with its labels, and writes a
//! screenshot for a person to look at (its path is printed). The dashboard's browser test is
//! in `kvbench`'s history tests, on a real results store.

use crate::browser::{browser, console_lines, run, screenshot_dir};
use crate::tests::{fixture, latency_groups, many_rows, repeated, three_sample_scan};
use crate::{render, Format};

#[test]
fn the_report_renders_in_chromium() {
    let Some(bin) = browser("HTML") else { return };
    let dir = screenshot_dir();
    let page = dir.join("report.html");
    std::fs::write(&page, render(&repeated(&fixture(), &[1.0, 0.96, 1.05]), Format::Html)).unwrap();

    // The console check itself must see a console message when there is one.
    let probe = dir.join("probe.html");
    std::fs::write(&probe, "<!DOCTYPE html><p>probe</p><script>console.error('kvbench-probe')</script>").unwrap();
    let (_, err) = run(&bin, &["--dump-dom".into()], &probe);
    assert!(console_lines(&err).iter().any(|l| l.contains("kvbench-probe")), "console capture broken: {err}");

    let (dom, err) = run(&bin, &["--dump-dom".into()], &page);
    assert!(console_lines(&err).is_empty(), "console messages: {:?}", console_lines(&err));
    let charts = [
        "load-time",
        "space",
        "throughput-load",
        "latency-load",
        "timeline-load",
        "throughput-get",
        "latency-get",
        "timeline-get",
    ];
    for id in charts {
        let at = dom.find(&format!("data-chart=\"{id}\"")).unwrap_or_else(|| panic!("chart {id} missing"));
        let end = at + dom[at..].find("</figure>").expect("figure closes");
        let fig = &dom[at..end];
        // Rows whose phase fit in one interval are named in a note after the figure.
        let after = &dom[end..];
        let short = match after.find("data-chart=\"timeline-short-") {
            Some(i) if i < 40 => &after[..after.find("</p>").unwrap_or(after.len())],
            _ => "",
        };
        assert!(fig.contains("<figcaption>") && fig.contains("<svg"), "chart {id} has a caption and a drawing");
        assert!(fig.contains("class=\"axis-label\""), "chart {id} has axis labels");
        for label in ["fast", "slow", "go-thing"] {
            assert!(fig.contains(label) || short.contains(label), "chart {id} names row {label}");
        }
    }

    let shot = dir.join("report.png");
    let _ = std::fs::remove_file(&shot);
    run(&bin, &[format!("--screenshot={}", shot.display()), "--window-size=1300,5200".into()], &page);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 50_000, "screenshot {} written ({size} bytes)", shot.display());
    println!("HTML report screenshot: {}", shot.display());
    eprintln!("HTML report screenshot: {}", shot.display());
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[at..].split('"').next()
}

/// The figure `data-chart="ID"` (the first) of a DOM.
fn figure_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom.find(&format!("data-chart=\"{id}\"")).unwrap_or_else(|| panic!("chart {id} missing"));
    &dom[at..at + dom[at..].find("</figure>").expect("figure closes")]
}

/// The x position of the percentile axis' tick labelled `label` in a chart.
fn tick_x(fig: &str, label: &str) -> f64 {
    let tag = fig.split("<text class=\"tick\"").find(|t| t.contains(&format!(">{label}</text>"))).expect(label);
    attr(tag, "x").and_then(|x| x.parse().ok()).expect("tick x")
}

#[test]
fn a_30_row_report_stays_readable_in_chromium() {
    let Some(bin) = browser("30-row HTML") else { return };
    let dir = screenshot_dir();
    let page = dir.join("report-30-rows.html");
    std::fs::write(&page, render(&three_sample_scan(many_rows(30)), Format::Html)).unwrap();
    let (dom, err) = run(&bin, &["--dump-dom".into()], &page);
    assert!(console_lines(&err).is_empty(), "console messages: {:?}", console_lines(&err));

    // Every curve of the get phase has its own stroke: colour and dash pattern together.
    let groups = latency_groups(&dom, "get");
    assert!(groups.len() >= 3 && groups.iter().all(|g| g.len() <= 12), "grouped: {groups:?}");
    let styles: std::collections::HashSet<(String, String)> = dom
        .split("data-chart=\"latency-get\"")
        .skip(1)
        .flat_map(|f| f.split("</figure>").next().unwrap_or("").split("<polyline").skip(1))
        .map(|t| (attr(t, "stroke").unwrap_or("").to_string(), attr(t, "stroke-dasharray").unwrap_or("").to_string()))
        .collect();
    assert_eq!(styles.len(), 29, "29 measured rows, 29 distinct stroke styles: {styles:?}");
    assert!(dom.contains("class=\"marker\""), "rows past the first ten mark their points with shapes");

    // Three scans resolve up to p66.7: the curve ends there, not at p99.999.
    let scan = figure_of(&dom, "latency-scan");
    let line = scan.split("<polyline").nth(1).expect("the scan curve");
    let last_x: f64 = attr(line, "points")
        .and_then(|p| p.split(' ').next_back())
        .and_then(|p| p.split(',').next())
        .and_then(|x| x.parse().ok())
        .expect("points");
    let (x0, x90) = (tick_x(scan, "0%"), tick_x(scan, "90%"));
    let want = x0 + 3f64.log10() * (x90 - x0);
    assert!((last_x - want).abs() < 0.2, "the 3-sample curve ends at x {last_x}, p66.7 is at {want}");
    assert!(scan.contains("the samples resolve up to p66.667"), "and says so on hover");

    let shot = dir.join("report-30-rows.png");
    let _ = std::fs::remove_file(&shot);
    run(&bin, &[format!("--screenshot={}", shot.display()), "--window-size=1300,6000".into()], &page);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 50_000, "screenshot {} written ({size} bytes)", shot.display());
    eprintln!("30-row HTML report screenshot: {}", shot.display());
}
