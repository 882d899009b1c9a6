//! The bench chart fits its text: every label, estimated at 7.5 px a character for the 12px
//! sans-serif font (scaled for larger and bold text), lies inside the viewBox, the figures after
//! the largest bar included.

use parsers::harness::Mode;
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use report::{StageKind, render_bench_svg};

/// One `<text>` element: where it is anchored, its size and its text.
#[derive(Debug)]
struct Text {
    x: f64,
    y: f64,
    anchor: String,
    size: f64,
    bold: bool,
    content: String,
}

impl Text {
    /// The estimated width, on the wide side.
    fn width(&self) -> f64 {
        let w = self.content.chars().count() as f64 * 7.5 * self.size / 12.0;
        if self.bold { w * 1.1 } else { w }
    }

    /// The left and right ends of the text.
    fn extent(&self) -> (f64, f64) {
        let w = self.width();
        match self.anchor.as_str() {
            "end" => (self.x - w, self.x),
            "middle" => (self.x - w / 2.0, self.x + w / 2.0),
            _ => (self.x, self.x + w),
        }
    }
}

/// One bar (a `<rect>` with a position).
#[derive(Debug)]
struct Bar {
    x: f64,
    y: f64,
    width: f64,
}

/// The parsed chart: its viewBox size, texts and bars.
struct Chart {
    width: f64,
    height: f64,
    texts: Vec<Text>,
    bars: Vec<Bar>,
}

fn attr(e: &BytesStart, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .map(|a| a.value.into_owned())
}

fn number(e: &BytesStart, name: &str) -> Option<f64> {
    attr(e, name).and_then(|v| v.parse().ok())
}

fn parse(svg: &str) -> Chart {
    let mut reader = Reader::from_str(svg);
    let mut chart = Chart {
        width: 0.0,
        height: 0.0,
        texts: Vec::new(),
        bars: Vec::new(),
    };
    let mut font_size = 12.0;
    let mut open: Option<Text> = None;
    loop {
        match reader.read_event() {
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) if e.name().as_ref() == "svg" => {
                let view: Vec<f64> = attr(&e, "viewBox")
                    .expect("a viewBox")
                    .split_whitespace()
                    .map(|v| v.parse().expect("a number"))
                    .collect();
                assert_eq!(view.len(), 4, "{view:?}");
                assert_eq!((view[0], view[1]), (0.0, 0.0));
                (chart.width, chart.height) = (view[2], view[3]);
                font_size = number(&e, "font-size").unwrap_or(12.0);
            }
            Ok(Event::Start(e)) if e.name().as_ref() == "text" => {
                open = Some(Text {
                    x: number(&e, "x").expect("x"),
                    y: number(&e, "y").expect("y"),
                    anchor: attr(&e, "text-anchor").unwrap_or_else(|| "start".into()),
                    size: number(&e, "font-size").unwrap_or(font_size),
                    bold: attr(&e, "font-weight").as_deref() == Some("bold"),
                    content: String::new(),
                });
            }
            Ok(Event::Text(t)) => {
                if let Some(text) = open.as_mut() {
                    text.content.push_str(&t);
                }
            }
            // An entity (`&amp;`) is one character.
            Ok(Event::GeneralRef(_)) => {
                if let Some(text) = open.as_mut() {
                    text.content.push('&');
                }
            }
            Ok(Event::End(e)) if e.name().as_ref() == "text" => {
                chart.texts.extend(open.take());
            }
            Ok(Event::Empty(e)) if e.name().as_ref() == "rect" => {
                if let (Some(x), Some(y), Some(width)) =
                    (number(&e, "x"), number(&e, "y"), number(&e, "width"))
                {
                    chart.bars.push(Bar { x, y, width });
                }
            }
            Ok(_) => {}
            Err(e) => panic!("the chart is not well-formed XML: {e}\n{svg}"),
        }
    }
    chart
}

/// Every text inside the viewBox.
fn assert_texts_fit(name: &str, chart: &Chart) {
    for t in &chart.texts {
        let (left, right) = t.extent();
        assert!(
            left >= 0.0 && right <= chart.width && t.y - t.size >= 0.0 && t.y <= chart.height,
            "{name}: {:?} spans {left:.1}..{right:.1} at y {} outside the {}x{} viewBox",
            t.content,
            t.y,
            chart.width,
            chart.height
        );
    }
}

/// Every text inside the viewBox, and the figures after the largest bar in full.
fn assert_fits(name: &str, svg: &str) {
    let chart = parse(svg);
    assert!(
        !chart.texts.is_empty() && !chart.bars.is_empty(),
        "{name}: {svg}"
    );
    assert_texts_fit(name, &chart);
    let largest = chart
        .bars
        .iter()
        .max_by(|a, b| a.width.total_cmp(&b.width))
        .expect("a bar");
    let label = chart
        .texts
        .iter()
        .find(|t| t.anchor == "start" && t.x > largest.x + largest.width && t.y > largest.y)
        .filter(|t| t.y <= largest.y + 20.0)
        .unwrap_or_else(|| panic!("{name}: no label after the largest bar {largest:?}"));
    let (_, right) = label.extent();
    assert!(
        right <= chart.width,
        "{name}: the largest bar's label {:?} ends at {right:.1}, past {}",
        label.content,
        chart.width
    );
}

#[test]
fn the_chart_of_the_captured_bench_fits_every_label() {
    let svg = render_bench_svg(&report::analyze(&crate::clean::clean_gpu())).expect("a chart");
    assert_fits("clean_gpu", &svg);
}

#[test]
fn a_long_label_on_the_longest_bar_stays_inside() {
    let mut ours = crate::logic::result(
        Mode::Bench,
        "d128_m128_n128_s3_w8_maxrregcount255_swizzled",
        4096,
        true,
    );
    let mut bench = crate::logic::bench(123_456.0, 124_000.0, 200);
    bench.tflops = 12_345.6;
    ours.bench = Some(bench);
    let mut sdpa = crate::logic::result(Mode::Bench, "cfg", 4096, true);
    sdpa.kernel = "sdpa:flash_attention_with_a_long_backend_name".into();
    sdpa.config = None;
    sdpa.bench = Some(crate::logic::bench(200_000.0, 201_000.0, 200));
    let ev = crate::logic::harness_run(vec![(StageKind::Bench, ours), (StageKind::Baseline, sdpa)]);
    let svg = render_bench_svg(&report::analyze(&ev)).expect("a chart");
    assert!(svg.contains("12346 TFLOP/s · p50 123456 µs"), "{svg}");
    assert_fits("long label", &svg);
}

#[test]
fn the_fit_check_sees_a_label_past_the_edge() {
    let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 820 100" font-size="12">
<rect x="300" y="40" width="400.0" height="14"/>
<text x="706.0" y="51">116 TFLOP/s · p50 9.29 µs</text>
</svg>"#;
    let failed = std::panic::catch_unwind(|| assert_fits("past the edge", svg));
    assert!(failed.is_err());
}

/// The roofline of captured profiles (examples/slow-kernels on an H100): each kernel whose
/// source page counts floating-point work is a numbered point with its place against its
/// binding roof in the list under the chart, and every label lies inside the viewBox.
#[test]
fn the_roofline_places_each_profiled_kernel_and_fits_its_labels() {
    use crate::support::{evidence, profile, step};
    let mut ev = evidence(
        "roofline",
        &[
            profile("no_tensor", "ncu-csv/slow_no_tensor_details.log"),
            step(
                StageKind::Profile,
                "no_tensor",
                "ncu-source/slow_no_tensor_source.log",
                parsers::Format::NcuSource,
            ),
            profile("bank", "ncu-csv/slow_bank_details.log"),
            step(
                StageKind::Profile,
                "bank",
                "ncu-source/slow_bank_source.log",
                parsers::Format::NcuSource,
            ),
        ],
        &[],
    );
    // The H100 the fixtures were captured on, as a run's environment records it.
    for gpu in &mut ev.run.environment.gpus {
        gpu.sm_count = Some(132);
        gpu.compute_capability = Some("9.0".into());
    }
    let svg = report::render_roofline_svg(&report::analyze(&ev)).expect("a roofline");
    let chart = parse(&svg);
    assert_texts_fit("roofline", &chart);
    // The half-precision matmul on the FMA units is a point against the FP32 roofs, below the
    // L2's ridge (6.5% of the FP32 peak with the L2 at 9.6%); the transpose, with no
    // floating-point work, is listed with its memory roof, the L2 at 37.8% (the DRAM at 33.5%).
    let texts: Vec<&str> = chart.texts.iter().map(|t| t.content.as_str()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("1. matmul · L2 ") && t.contains("(FP32 ")),
        "{texts:#?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("· transpose · L2 ") && t.contains("not on the chart")),
        "{texts:#?}"
    );
    assert!(svg.contains("<polyline"), "the roofs: {svg}");
}
