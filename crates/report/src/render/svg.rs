//! The bench chart: TFLOP/s per case, one bar per kernel config and baseline, as a
//! self-contained SVG the runner writes next to the report. The chart is as wide as its text:
//! the label column fits the longest name, and the width fits every bar's figures after it.

use std::fmt::Write;

use crate::analysis::Analysis;
use crate::text::{fixed, xml_escape};

/// The advance of one character of the chart's 12px sans-serif text, estimated on the wide
/// side (digits and most letters are narrower), so that text estimated to fit does.
const CHAR: f64 = 7.5;
/// Bold text is wider by about this much.
const BOLD: f64 = 1.1;
const MARGIN: f64 = 10.0;
/// Between a name and its bar, and between a bar and its figures.
const GAP: f64 = 8.0;
const BAR_MAX: f64 = 400.0;
const ROW: u32 = 20;
const GROUP: u32 = 26;
const TITLE: &str = "TFLOP/s by case (higher is better)";
const LEGEND: &str = "blue: kernel configs (dark: fastest), grey: baselines";

/// The estimated width of `text` at `size` px.
fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    let width = text.chars().count() as f64 * CHAR * size / 12.0;
    if bold { width * BOLD } else { width }
}

/// A chart's opening: its `<svg>` of `width` x `height`, a white ground and its title.
fn open(width: f64, height: f64, title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="{width}" height="{height}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r##"<text x="{MARGIN}" y="24" font-size="15" font-weight="bold" fill="#222222">{title}</text>"##
    );
    out
}

/// The chart, or `None` when the run holds no timings.
pub fn bench_svg(a: &Analysis) -> Option<String> {
    let rows = &a.tables.bench;
    if rows.is_empty() {
        return None;
    }
    let max = rows
        .iter()
        .map(|r| r.tflops)
        .filter(|t| t.is_finite())
        .fold(0.0f64, f64::max);
    let scale = if max > 0.0 { BAR_MAX / max } else { 0.0 };
    let bar = |tflops: f64| {
        if tflops.is_finite() {
            (tflops * scale).max(0.0)
        } else {
            0.0
        }
    };
    let name =
        |r: &crate::tables::BenchRow| format!("{} ({} {})", r.implementation, r.timing, r.cache);
    let figures = |r: &crate::tables::BenchRow| {
        format!(
            "{} TFLOP/s · p50 {} µs",
            crate::text::sig3(r.tflops),
            crate::text::sig3(r.p50_us)
        )
    };
    let mut groups: Vec<String> = Vec::new();
    for r in rows {
        let label = r.case.label();
        if !groups.contains(&label) {
            groups.push(label);
        }
    }

    // The bars start after the longest name; the chart ends after the furthest text.
    let names = rows
        .iter()
        .map(|r| text_width(&name(r), 12.0, false))
        .fold(0.0f64, f64::max);
    let left = (MARGIN + names + GAP).ceil();
    let right = rows
        .iter()
        .map(|r| left + bar(r.tflops) + GAP + text_width(&figures(r), 12.0, false))
        .chain(groups.iter().map(|g| MARGIN + text_width(g, 12.0, true)))
        .chain([
            MARGIN + text_width(TITLE, 15.0, true),
            MARGIN + text_width(LEGEND, 12.0, false),
        ])
        .fold(0.0f64, f64::max);
    let width = (right + MARGIN).ceil();
    let height = 50 + groups.len() as u32 * GROUP + rows.len() as u32 * ROW + 30;

    let mut out = open(width, f64::from(height), TITLE);
    let mut y = 50;
    let mut last = String::new();
    for r in rows {
        let label = r.case.label();
        if label != last {
            y += 6;
            let _ = writeln!(
                out,
                r##"<text x="{MARGIN}" y="{}" font-weight="bold" fill="#222222">{}</text>"##,
                y + 12,
                xml_escape(&label)
            );
            y += GROUP - 6;
            last = label;
        }
        let colour = match (r.baseline, r.best) {
            (true, _) => "#9a9a9a",
            (false, true) => "#2f6fdf",
            (false, false) => "#9dbcf0",
        };
        let width = bar(r.tflops);
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" text-anchor="end" fill="#333333">{}</text>"##,
            left - GAP,
            y + 14,
            xml_escape(&name(r))
        );
        let _ = writeln!(
            out,
            r#"<rect x="{left}" y="{}" width="{}" height="{}" fill="{colour}"/>"#,
            y + 3,
            fixed(width, 1),
            ROW - 6
        );
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" fill="#333333">{}</text>"##,
            fixed(left + width + GAP, 1),
            y + 14,
            xml_escape(&figures(r))
        );
        y += ROW;
    }
    let _ = writeln!(
        out,
        r##"<text x="{MARGIN}" y="{}" fill="#666666">{LEGEND}</text>"##,
        y + 22
    );
    out.push_str("</svg>\n");
    Some(out)
}

/// One kernel on the roofline: its name, whose it is, and where it stands.
struct Point {
    name: String,
    baseline: bool,
    position: crate::roofline::Position,
}

/// The decades the roofline spans: intensity over the ridge point from 10^-3 to 10^3, the
/// fraction of the peak from 10^-4 to 1.
const X_DECADES: (i32, i32) = (-3, 3);
const Y_DECADES: (i32, i32) = (-4, 0);
const PLOT_W: f64 = 480.0;
const PLOT_H: f64 = 320.0;
const ROOF_TITLE: &str = "Roofline: each profiled kernel against its roofs (log-log)";
const ROOF_LEGEND: &str = "x: arithmetic intensity over the ridge point of its precision; y: fraction of that precision's peak";

/// The roofline of a run, as Nsight Compute's GUI draws it but made from the run's own figures,
/// each kernel against the roofs of its own precision (FP32, FP16, FP64, tensor): its intensity
/// over the ridge point (its fraction of the compute peak over its fraction of the DRAM
/// bandwidth) against its fraction of the compute peak. Below the ridge (x < 1) the DRAM's slope
/// binds, above it the flat compute roof. The program's kernels are blue dots, the baseline's
/// grey squares; kernels with no floating-point work to speak of are listed under the chart
/// with their memory roof. `None` when no kernel was placed.
pub fn roofline_svg(a: &Analysis) -> Option<String> {
    let points = roofline_points(a);
    if points.is_empty() {
        return None;
    }
    let (plotted, listed): (Vec<&Point>, Vec<&Point>) = points
        .iter()
        .partition(|p| p.position.ridge_ratio.is_some_and(|r| r > 0.0) && p.position.of_peak > 0.0);
    let left = 70.0;
    let top = 50.0;
    let clamp = |v: f64, (lo, hi): (i32, i32)| v.log10().clamp(f64::from(lo), f64::from(hi));
    let px = |x: f64| {
        let (lo, hi) = X_DECADES;
        left + (clamp(x, X_DECADES) - f64::from(lo)) / f64::from(hi - lo) * PLOT_W
    };
    let py = |y: f64| {
        let (lo, hi) = Y_DECADES;
        top + (f64::from(hi) - clamp(y, Y_DECADES)) / f64::from(hi - lo) * PLOT_H
    };
    let labels: Vec<String> = plotted
        .iter()
        .map(|p| format!("{} · {}", p.name, p.position.cell()))
        .chain(listed.iter().map(|p| {
            format!(
                "{}{} · {} (no floating-point work: not on the chart)",
                p.name,
                if p.baseline { " (baseline)" } else { "" },
                p.position.cell()
            )
        }))
        .collect();
    let width = labels
        .iter()
        .map(|l| MARGIN + 20.0 + text_width(l, 12.0, false))
        .chain([
            left + PLOT_W + 20.0,
            MARGIN + text_width(ROOF_TITLE, 15.0, true),
            MARGIN + text_width(ROOF_LEGEND, 12.0, false),
        ])
        .fold(0.0f64, f64::max)
        .ceil()
        + MARGIN;
    let height = (top + PLOT_H + 50.0 + 18.0 * labels.len() as f64 + 30.0).ceil();
    let mut out = open(width, height, ROOF_TITLE);
    // The decades, as a grid with their labels.
    for d in X_DECADES.0..=X_DECADES.1 {
        let x = px(10f64.powi(d));
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#e4e4e4"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#666666">{}</text>"##,
            top + PLOT_H,
            top + PLOT_H + 16.0,
            decade(d)
        );
    }
    for d in Y_DECADES.0..=Y_DECADES.1 {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#666666">{}</text>"##,
            left + PLOT_W,
            left - 6.0,
            y + 4.0,
            decade(d)
        );
    }
    // The roofs: the DRAM's slope up to the ridge point, the compute peak after it.
    let from = 10f64.powi(X_DECADES.0).max(10f64.powi(Y_DECADES.0));
    let _ = writeln!(
        out,
        r##"<polyline points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="none" stroke="#c0392b" stroke-width="2"/>"##,
        px(from),
        py(from),
        px(1.0),
        py(1.0),
        px(10f64.powi(X_DECADES.1)),
        py(1.0)
    );
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="{:.1}" fill="#c0392b">DRAM</text><text x="{:.1}" y="{:.1}" fill="#c0392b">compute peak</text>"##,
        px(0.02) + 6.0,
        py(0.02) - 8.0,
        px(10.0),
        py(1.0) - 6.0
    );
    for (i, p) in plotted.iter().enumerate() {
        let (x, y) = (
            px(p.position.ridge_ratio.unwrap_or(1.0)),
            py(p.position.of_peak),
        );
        let mark = if p.baseline {
            format!(
                r##"<rect x="{:.1}" y="{:.1}" width="9" height="9" fill="#9a9a9a"/>"##,
                x - 4.5,
                y - 4.5
            )
        } else {
            format!(r##"<circle cx="{x:.1}" cy="{y:.1}" r="5" fill="#2f6fdf"/>"##)
        };
        let _ = writeln!(
            out,
            r##"{mark}<text x="{:.1}" y="{:.1}" fill="#222222">{}</text>"##,
            x + 8.0,
            y - 6.0,
            i + 1
        );
    }
    let mut y = top + PLOT_H + 44.0;
    for (i, label) in labels.iter().enumerate() {
        let number = if i < plotted.len() {
            format!("{}. ", i + 1)
        } else {
            "· ".to_string()
        };
        let baseline = plotted.get(i).is_some_and(|p| p.baseline);
        let _ = writeln!(
            out,
            r##"<text x="{MARGIN}" y="{y:.1}" fill="{}">{}{}{}</text>"##,
            if baseline { "#666666" } else { "#222222" },
            number,
            xml_escape(label),
            if baseline { " (baseline)" } else { "" }
        );
        y += 18.0;
    }
    let _ = writeln!(
        out,
        r##"<text x="{MARGIN}" y="{:.1}" fill="#666666">{ROOF_LEGEND}</text>"##,
        y + 8.0
    );
    out.push_str("</svg>\n");
    Some(out)
}

/// The kernels to place on the roofline: this run's that Nsight Compute placed, then the
/// baseline's beside them.
fn roofline_points(a: &Analysis) -> Vec<Point> {
    let mut points: Vec<Point> = a
        .tables
        .ncu
        .iter()
        .cloned()
        .filter_map(|n| {
            Some(Point {
                name: crate::text::short_kernel(&n.kernel),
                baseline: false,
                position: n.limit?,
            })
        })
        .collect();
    if let Some((_, theirs)) = &a.tables.beside_baseline {
        points.extend(theirs.iter().filter_map(|k| {
            Some(Point {
                name: crate::text::short_kernel(&k.summary.kernel),
                baseline: true,
                position: k.summary.limit.clone()?,
            })
        }));
    }
    points
}

/// A decade's label: `0.001`, `1`, `100`.
fn decade(d: i32) -> String {
    if d >= 0 {
        format!("{}", 10u64.pow(d.unsigned_abs()))
    } else {
        format!("{:.*}", d.unsigned_abs() as usize, 10f64.powi(d))
    }
}

/// `<run-id>.roofline.svg`, in the report's own directory.
pub fn roofline_svg_file_name(run: &crate::run::Run) -> String {
    format!("{}.roofline.svg", run.id)
}

/// The file name the Markdown report links the bench chart under: `<run-id>.bench.svg`, in the
/// report's own directory.
pub fn bench_svg_file_name(run: &crate::run::Run) -> String {
    format!("{}.bench.svg", run.id)
}
