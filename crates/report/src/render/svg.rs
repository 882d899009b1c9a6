//! The bench chart: TFLOP/s per case, one bar per kernel config and baseline, as a
//! self-contained SVG the runner writes next to the report. The chart is as wide as its text:
//! the label column fits the longest name, and the width fits every bar's figures after it.

use std::fmt::Write;

use crate::analysis::Analysis;
use crate::tables::bench_rows;
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

/// The chart, or `None` when the run holds no timings.
pub fn bench_svg(a: &Analysis) -> Option<String> {
    let rows = bench_rows(&a.joined);
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
    for r in &rows {
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
        r##"<text x="{MARGIN}" y="24" font-size="15" font-weight="bold" fill="#222222">{TITLE}</text>"##
    );
    let mut y = 50;
    let mut last = String::new();
    for r in &rows {
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
