//! A harness or baseline document as a parsed log: each result's failures as findings, and its
//! bench figures as metrics.

use crate::facts::HarnessFacts;
use crate::harness::{Bench, Check, HarnessOutput, HarnessResult, LaunchInfo, SCHEMA, Stress};
use crate::model::{FindingKind, Format, Metric, ParsedLog, Severity};
use crate::site::{Record, Site, Sites};

/// Reads `harness.launch_info` from a document's text, if it has a well-formed one. A missing
/// or malformed object is not an error: the results still parse without it.
fn launch_info(json: &str) -> Option<LaunchInfo> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let info = value.get("harness")?.get("launch_info")?;
    serde_json::from_value(info.clone()).ok()
}

/// Turns a harness or baseline document into findings: failed checks, NaNs, unwritten elements,
/// corrupted canaries, launch errors and stress failures; bench results become metrics.
pub(crate) fn parse_document(text: &str) -> ParsedLog {
    let mut log = ParsedLog::new(Format::Harness, None);
    let doc = serde_json::from_str::<HarnessOutput>(text)
        .map(|doc| (doc, text))
        .or_else(|first| {
            // Tolerate lines printed before the document (a banner, a warning).
            match text.find("\n{") {
                Some(i) => {
                    let json = text.get(i + 1..).unwrap_or("");
                    serde_json::from_str::<HarnessOutput>(json).map(|doc| (doc, json))
                }
                None => Err(first),
            }
        });
    let (doc, json) = match doc {
        Ok(found) => found,
        Err(e) => {
            log.unparsed_lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
            log.unparsed_examples
                .push(format!("not an {SCHEMA} document: {e}"));
            return log;
        }
    };
    if doc.schema != SCHEMA {
        log.unparsed_examples
            .push(format!("schema {:?}, expected {SCHEMA:?}", doc.schema));
    }
    let mut sites = Sites::default();
    for r in &doc.results {
        of_result(r, &mut sites, &mut log);
    }
    log.complete = doc.schema == SCHEMA;
    log.findings = sites.into_findings();
    log.results = doc.results;
    log.launch = launch_info(json);
    log
}

/// Turns one result into findings (a launch error, a failed check, a stress run's failures)
/// and its bench figures into metrics.
fn of_result(r: &HarnessResult, sites: &mut Sites, log: &mut ParsedLog) {
    let mut out = ResultFindings {
        result: r,
        case: case_name(r),
        sites,
    };
    if let Some(e) = &r.error {
        out.add(FindingKind::LaunchError, e.clone(), |h| {
            h.error = Some(e.clone())
        });
    }
    if let Some(c) = &r.check {
        out.check(c);
    }
    if let Some(st) = &r.stress {
        out.stress(st);
    }
    if let Some(b) = &r.bench {
        bench_metrics(r, &out.case, b, log);
    }
}

/// A result's case as its findings name it: config, dtype, shape and causal mask.
fn case_name(r: &HarnessResult) -> String {
    let s = &r.shape;
    format!(
        "{} {} B={},H={},S={},D={}{}",
        r.config.as_deref().unwrap_or("-"),
        r.dtype,
        s.batch,
        s.heads,
        s.seq_len,
        s.head_dim,
        if r.causal { " causal" } else { "" }
    )
}

/// The findings of one result, each at the site of its kind, kernel and case.
struct ResultFindings<'a> {
    result: &'a HarnessResult,
    case: String,
    sites: &'a mut Sites,
}

impl ResultFindings<'_> {
    /// Adds a finding of `kind` (or counts one more record of it), and sets its facts:
    /// the result's mode, case and config, and what `fill` sets.
    fn add(&mut self, kind: FindingKind, message: String, fill: impl FnOnce(&mut HarnessFacts)) {
        let r = self.result;
        let (i, _) = self.sites.add(Record {
            site: Site {
                kind,
                kernel: Some(&r.kernel),
                file: None,
                line: None,
                space: None,
                size: None,
                discriminator: &self.case,
            },
            severity: Severity::Error,
            access: None,
            message: &message,
            example: Some(&self.case),
            excerpt: &[format!("{}: {message}", r.kernel)],
            occurrences: 1,
        });
        if let Some(f) = self.sites.get_mut(i) {
            let facts = f.facts.harness.get_or_insert_with(|| {
                Box::new(HarnessFacts {
                    mode: r.mode,
                    case: self.case.clone(),
                    config: r.config.clone(),
                    error: None,
                    max_abs_err: None,
                    rel_l2_err: None,
                    tolerance: None,
                    nan_count: None,
                    unwritten: None,
                    canaries: Vec::new(),
                    mismatched_launches: None,
                    launches: None,
                    sync: None,
                    first_failing_launch: None,
                })
            });
            fill(facts);
        }
    }

    /// A check's findings: output over the tolerance, NaN or Inf, elements never written,
    /// guard regions overwritten.
    fn check(&mut self, c: &Check) {
        if !c.passed {
            self.add(
                FindingKind::WrongResult,
                format!(
                    "output differs from the reference: max abs error {} (tolerance {}), rel L2 {}",
                    c.max_abs_err, c.tolerance, c.rel_l2_err
                ),
                |h| {
                    h.max_abs_err = Some(c.max_abs_err);
                    h.rel_l2_err = Some(c.rel_l2_err);
                    h.tolerance = Some(c.tolerance);
                },
            );
        }
        if c.nan_count > 0 {
            self.add(
                FindingKind::NanOutput,
                format!("{} output elements are NaN or Inf", c.nan_count),
                |h| h.nan_count = Some(c.nan_count),
            );
        }
        if c.unwritten > 0 {
            self.add(
                FindingKind::UnwrittenOutput,
                format!("{} output elements were never written", c.unwritten),
                |h| h.unwritten = Some(c.unwritten),
            );
        }
        if !c.canaries_corrupted.is_empty() {
            self.add(
                FindingKind::CanaryCorrupted,
                format!(
                    "guard regions overwritten: {}",
                    c.canaries_corrupted.join(", ")
                ),
                |h| h.canaries = c.canaries_corrupted.clone(),
            );
        }
    }

    /// A stress run's findings: launches whose output differed from the first, a launch
    /// that failed (when the result has no error of its own), guard regions overwritten.
    fn stress(&mut self, st: &Stress) {
        if st.mismatched_launches > 0 {
            self.add(
                FindingKind::Nondeterminism,
                format!(
                    "{} of {} launches gave output different from the first",
                    st.mismatched_launches, st.launches
                ),
                |h| {
                    h.mismatched_launches = Some(st.mismatched_launches);
                    h.launches = Some(st.launches);
                    h.sync = Some(st.sync.clone());
                    h.first_failing_launch = st.first_failure;
                },
            );
        }
        if st.failure_kind.as_deref() == Some("error") && self.result.error.is_none() {
            self.add(
                FindingKind::LaunchError,
                format!(
                    "launch {} of {} failed",
                    st.first_failure
                        .map(|n| n.to_string())
                        .unwrap_or_else(|| "?".into()),
                    st.launches
                ),
                |h| {
                    h.first_failing_launch = st.first_failure;
                    h.sync = Some(st.sync.clone());
                },
            );
        }
        if !st.canaries_corrupted.is_empty() || st.failure_kind.as_deref() == Some("canary") {
            self.add(
                FindingKind::CanaryCorrupted,
                format!(
                    "guard regions overwritten during stress: {}",
                    st.canaries_corrupted.join(", ")
                ),
                |h| {
                    h.canaries = st.canaries_corrupted.clone();
                    h.first_failing_launch = st.first_failure;
                },
            );
        }
    }
}

/// A bench result's finite figures as metrics of the kernel, in the section of its case.
fn bench_metrics(r: &HarnessResult, case: &str, b: &Bench, log: &mut ParsedLog) {
    let figures = [
        ("min_us", "us", b.min_us),
        ("p50_us", "us", b.p50_us),
        ("p90_us", "us", b.p90_us),
        ("p99_us", "us", b.p99_us),
        ("mean_us", "us", b.mean_us),
        ("stdev_us", "us", b.stdev_us),
        ("tflops", "TFLOP/s", b.tflops),
        ("gbps", "GB/s", b.gbps),
    ];
    for (name, unit, value) in figures {
        if value.is_finite() {
            log.metrics.push(Metric {
                kernel: r.kernel.clone(),
                launch: None,
                section: Some(format!("bench {case}")),
                name: name.to_string(),
                unit: Some(unit.to_string()),
                value,
            });
        }
    }
}
