//! The HTML report in a real browser: headless Chromium renders the fixture's page with no
//! console message, every chart present with its labels, and writes a screenshot for a person
//! to look at (its path is printed). Without Chromium the test says so and passes, unless
//! `KVBENCH_REQUIRE_CHROMIUM` is set (as `make test` does, having installed it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::tests::{fixture, latency_groups, many_rows, repeated, three_sample_scan};
use crate::{render, Format};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KVBENCH_CHROMIUM") {
        return Some(p.into());
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// Run Chromium on `page` with `args`; (stdout, stderr). Killed after 20 s.
fn run(bin: &Path, args: &[String], page: &Path) -> (String, String) {
    let profile = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.path().display()));
    cmd.args(args).arg(format!("file://{}", page.display()));
    let out_path = profile.path().join("out");
    let err_path = profile.path().join("err");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 20 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (std::fs::read_to_string(out_path).unwrap_or_default(), std::fs::read_to_string(err_path).unwrap_or_default())
}

fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Chromium, or None when it is missing and not required (the test then says it skipped).
fn browser(what: &str) -> Option<PathBuf> {
    let bin = chromium();
    if bin.is_none() {
        assert!(std::env::var_os("KVBENCH_REQUIRE_CHROMIUM").is_none(), "chromium not found (make deps installs it)");
        eprintln!("chromium not found: {what} browser test skipped");
    }
    bin
}

/// Where pages and screenshots go (`KVBENCH_SCREENSHOT_DIR`, as `make test` sets it).
fn screenshot_dir() -> PathBuf {
    let dir = std::env::var_os("KVBENCH_SCREENSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("kvbench-html-test"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

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

/// A synthetic history: 14 runs of two rows, a drop at run 8 with a new engine version.
fn history() -> Vec<(crate::trend::Series, Vec<crate::trend::Step>)> {
    use crate::trend::{steps, Point, Series};
    ["lmdb", "rocksdb"]
        .iter()
        .map(|label| {
            let points: Vec<Point> = (0..14u64)
                .map(|i| Point {
                    run_id: format!("run-{i}"),
                    started_at: 1_700_000_000 + i * 86_400,
                    kvbench_version: "0.1.0".into(),
                    version: if i < 8 { "1.0".into() } else { "2.0".into() },
                    ops_per_sec: if i < 8 { 100_000.0 } else { 80_000.0 } * (1.0 + 0.01 * (i % 3) as f64),
                    p99_ns: Some(20_000.0),
                    read_per_op: Some(4096.0),
                    write_per_op: Some(120.0),
                    space_bytes: 10_000_000 + i * 100_000,
                    regime: if i < 11 { "fits in memory".into() } else { "4.00x the budget".into() },
                })
                .collect();
            let ops: Vec<f64> = points.iter().map(|p| p.ops_per_sec).collect();
            let st = steps(&ops, 0.05);
            let s = Series {
                scenario: "s".into(),
                machine: "h".into(),
                label: label.to_string(),
                phase: "get".into(),
                points,
            };
            (s, st)
        })
        .collect()
}

#[test]
fn the_dashboard_renders_in_chromium() {
    let Some(bin) = browser("dashboard") else { return };
    let dir = screenshot_dir();
    let page = dir.join("dashboard.html");
    let h = history();
    assert!(h.iter().all(|(_, st)| st.len() == 1 && st[0].at == 8), "the drop is one step");
    std::fs::write(&page, crate::dashboard(&h)).unwrap();
    let (dom, err) = run(&bin, &["--dump-dom".into()], &page);
    assert!(console_lines(&err).is_empty(), "console messages: {:?}", console_lines(&err));
    for id in ["throughput", "p99", "read", "write", "space"] {
        assert_eq!(dom.matches(&format!("data-chart=\"{id}\"")).count(), 2, "chart {id} for both rows");
    }
    assert!(dom.contains("class=\"step\"") && dom.contains("-20%"), "the step is marked");
    assert_eq!(dom.matches("class=\"meta regime\"").count(), 4, "each series states its two regimes");
    assert!(dom.contains("regime from run run-11: 4.00x the budget"), "the new regime and where it began");
    let shot = dir.join("dashboard.png");
    let _ = std::fs::remove_file(&shot);
    run(&bin, &[format!("--screenshot={}", shot.display()), "--window-size=1300,1400".into()], &page);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot {} written ({size} bytes)", shot.display());
    eprintln!("dashboard screenshot: {}", shot.display());
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
