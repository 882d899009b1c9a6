//! The `exhibit.harness/1` document: the schema types from `parsers::harness` (each result with
//! its figures, the `details` object), with a top-level `harness` object added (a field the schema does not
//! have; readers that do not know it ignore it), and a one-line-per-result summary for
//! terminals.

use parsers::harness::{HarnessOutput, SCHEMA};
use serde_json::{Map, Value, json};

use crate::gpu::DeviceInfo;
use crate::modes::{Record, Verdict};

/// Builds the document. `harness` becomes the top-level `harness` object (version, seed, the
/// kernel's launch description...), `device` also fills the schema's `device`.
pub fn document(
    device: Option<&DeviceInfo>,
    records: &[Record],
    harness: Map<String, Value>,
) -> Value {
    let output = HarnessOutput {
        schema: SCHEMA.to_string(),
        producer: "harness".to_string(),
        device: device.map(DeviceInfo::to_schema),
        results: records.iter().map(|r| r.result.clone()).collect(),
    };
    let mut doc = serde_json::to_value(&output).unwrap_or_else(|_| json!({"schema": SCHEMA}));
    if let Some(obj) = doc.as_object_mut() {
        let mut harness = harness;
        harness.insert("version".to_string(), json!(env!("CARGO_PKG_VERSION")));
        if let Some(info) = device {
            harness.insert(
                "device".to_string(),
                serde_json::to_value(info).unwrap_or(Value::Null),
            );
        }
        obj.insert("harness".to_string(), Value::Object(harness));
    }
    doc
}

/// One line per result, for a terminal.
pub fn summary(records: &[Record]) -> String {
    let mut text = String::new();
    for r in records {
        let res = &r.result;
        let s = &res.shape;
        let status = if res.skipped.is_some() {
            "SKIP"
        } else {
            match r.verdict {
                Verdict::Pass => "ok",
                Verdict::KernelFailure => "FAIL",
                Verdict::Infrastructure => "ERROR",
            }
        };
        let mode = serde_json::to_value(res.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut line = format!(
            "{mode} {} {},{},{},{} {}{}: {status}",
            res.kernel,
            s.batch,
            s.heads,
            s.seq_len,
            s.head_dim,
            res.dtype,
            if res.causal { " causal" } else { "" },
        );
        if let Some(c) = &res.check {
            line += &format!(
                " rel_l2={:.3e} (tol {:.0e}) max_abs={:.3e} nan={} unwritten={}",
                c.rel_l2_err, c.tolerance, c.max_abs_err, c.nan_count, c.unwritten
            );
            if !c.canaries_corrupted.is_empty() {
                line += &format!(" corrupted={}", c.canaries_corrupted.join(","));
            }
            if let Some(n) = res.figures.repeat_elements_differing
                && n > 0
            {
                line += &format!(" second_launch_differs={n}");
            }
        }
        if let Some(st) = &res.stress {
            line += &format!(
                " launches={} sync={} mismatched={}",
                st.launches, st.sync, st.mismatched_launches
            );
            if let (Some(n), Some(kind)) = (st.first_failure, &st.failure_kind) {
                line += &format!(" first_failure={n} ({kind})");
            }
            if !st.canaries_corrupted.is_empty() {
                line += &format!(" corrupted={}", st.canaries_corrupted.join(","));
            }
        }
        if let Some(b) = &res.bench {
            line += &format!(
                " {}/{} p50={:.2}us min={:.2}us p99={:.2}us n={} {:.1} TFLOP/s {:.0} GB/s",
                b.cache, b.timing, b.p50_us, b.min_us, b.p99_us, b.samples, b.tflops, b.gbps
            );
        }
        if let Some(e) = &res.error {
            line += &format!(" error: {e}");
        }
        if let Some(reason) = &res.skipped {
            line += &format!(" ({reason})");
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}
