//! The bench chart: TFLOP/s per case, one bar per kernel config and baseline, as a
//! self-contained SVG the runner writes next to the report.

use std::fmt::Write;

use crate::analysis::Analysis;
use crate::tables::bench_rows;
use crate::text::{fixed, xml_escape};

const WIDTH: u32 = 820;
const LABEL: u32 = 300;
const BAR_MAX: f64 = 400.0;
const ROW: u32 = 20;
const GROUP: u32 = 26;

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
    let mut groups: Vec<String> = Vec::new();
    for r in &rows {
        let label = r.case.label();
        if !groups.contains(&label) {
            groups.push(label);
        }
    }
    let height = 50 + groups.len() as u32 * GROUP + rows.len() as u32 * ROW + 30;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r##"<text x="10" y="24" font-size="15" font-weight="bold" fill="#222222">TFLOP/s by case (higher is better)</text>"##
    );
    let mut y = 50;
    let mut last = String::new();
    for r in &rows {
        let label = r.case.label();
        if label != last {
            y += 6;
            let _ = writeln!(
                out,
                r##"<text x="10" y="{}" font-weight="bold" fill="#222222">{}</text>"##,
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
        let width = if r.tflops.is_finite() {
            (r.tflops * scale).max(0.0)
        } else {
            0.0
        };
        let name = format!("{} ({} {})", r.implementation, r.timing, r.cache);
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" text-anchor="end" fill="#333333">{}</text>"##,
            LABEL - 8,
            y + 14,
            xml_escape(&name)
        );
        let _ = writeln!(
            out,
            r#"<rect x="{LABEL}" y="{}" width="{}" height="{}" fill="{colour}"/>"#,
            y + 3,
            fixed(width, 1),
            ROW - 6
        );
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" fill="#333333">{} TFLOP/s · p50 {} µs</text>"##,
            fixed(f64::from(LABEL) + width + 6.0, 1),
            y + 14,
            crate::text::sig3(r.tflops),
            crate::text::sig3(r.p50_us)
        );
        y += ROW;
    }
    let _ = writeln!(
        out,
        r##"<text x="10" y="{}" fill="#666666">blue: kernel configs (dark: fastest), grey: baselines</text>"##,
        y + 22
    );
    out.push_str("</svg>\n");
    Some(out)
}
