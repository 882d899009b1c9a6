//! `sanitizer-error`: every error or warning a tool reported that no rule above explains. No
//! finding is dropped silently: what no rule understands is still a diagnosis, with its raw
//! lines, at low confidence.

use parsers::{FindingKind, Severity};

use super::{Ctx, Proposes, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, GiveWay, Level, Scope, SourceLocation, Span};
use crate::join::kind_name;
use crate::text::{md_text, scrub};

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::SanitizerError,
    role: Role::CatchAll,
    name: "Unexplained tool error",
    description: "Any error or warning a tool reported that no rule above explains: never \
                  dropped silently.",
    module: "crates/report/src/rules/catch_all.rs",
    run: Some(run),
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};

/// Whether one of this rule's own drafts is an error an echo gives way to: not the variant of
/// an exit record that stands only as a fault's symptom (the registry weighs that one against
/// the faults themselves).
fn own_error(d: &Draft) -> bool {
    d.level == Level::Error && !d.gives_way.contains(&GiveWay::NoFault)
}

/// One draft per unexplained finding at error or warning severity; one compiler warning said at
/// several lines of a config is one draft, its further lines as secondary spans.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out: Vec<Draft> = Vec::new();
    // Each compiler warning's draft in `out`, by config and message, with the lines it was
    // said at.
    let mut warned: Vec<(usize, Option<String>, String, Vec<SourceLocation>)> = Vec::new();
    for (index, f) in j.findings.iter().enumerate() {
        let finding = f.finding;
        if ctx.explained(index) || finding.severity == Severity::Info {
            continue;
        }
        // What makes this finding an echo of a fault another draft names: the registry
        // decides it for earlier rules' drafts, and this rule for its own.
        let mut gives_way = Vec::new();
        // A harness symptom in a config whose fault another draft names is that fault's echo.
        if super::is_harness_kind(finding.kind) {
            if out.iter().any(|d| own_error(d) && d.config == f.config) {
                continue;
            }
            gives_way.push(GiveWay::Error(None));
        }
        // A host API error after a device fault another draft names is that fault's echo.
        if finding.kind == FindingKind::HostApiError
            && let Some(log) = j.source(f.source).map(|s| s.path)
        {
            if out.iter().any(|d| {
                own_error(d) && d.config == f.config && d.evidence.iter().any(|e| e.log == log)
            }) {
                continue;
            }
            gives_way.push(GiveWay::ErrorOnLog(log.to_string()));
        }
        // The target process's exit status ("Error: process didn't terminate successfully") is
        // a symptom of the fault that ended it, never a root cause of its own.
        if finding.is_exit_status() {
            // The symptom of a fault located in its config; with none, a finding of its own.
            let mut d = Draft::new(
                RuleId::SanitizerError,
                Level::Error,
                "The program exited with an error",
            );
            d.config = f.config.clone();
            d.symptom_of = Some(Scope::Config);
            d.bare = true;
            d.explains.push(index);
            d.evidence.push(ctx.finding_evidence(f));
            d.gives_way = gives_way.clone();
            d.gives_way.push(GiveWay::NoFault);
            out.push(d);
            gives_way.push(GiveWay::Fault);
        }
        let tool = j
            .source(f.source)
            .map(|s| kind_name(s.kind))
            .unwrap_or("tool");
        let message = md_text(&scrub(&finding.message, &j.repo_files));
        let level = match (finding.kind, finding.severity) {
            (FindingKind::CompilerWarning, _) | (FindingKind::UnusedMemory, _) => Level::Note,
            (FindingKind::MemoryLeak, _) => Level::Warning,
            (_, Severity::Error) => Level::Error,
            _ => Level::Warning,
        };
        let title = match finding.kind {
            FindingKind::Trap => "Device-side trap".to_string(),
            FindingKind::DeviceException => format!("Device exception: {message}"),
            FindingKind::HostApiError => format!("CUDA API error: {message}"),
            FindingKind::MemoryLeak => "Device memory leak".to_string(),
            FindingKind::AllocationError => format!("Allocation error: {message}"),
            _ => format!("{tool}: {message}"),
        };
        let location = ctx.place(f);
        if finding.kind == FindingKind::CompilerWarning
            && let Some(location) = &location
            && let Some((at, _, _, lines)) = warned
                .iter_mut()
                .find(|(_, config, said, _)| *config == f.config && *said == message)
        {
            let d = &mut out[*at];
            if !lines.contains(location) {
                lines.push(location.clone());
                d.spans
                    .push(Span::secondary(location.clone(), "the same warning"));
                d.explanation = format!(
                    "The compiler warned at {} lines ({}): {message}.",
                    lines.len(),
                    md_text(&line_list(lines))
                ).into();
                d.fix = "Read the warning at each named line; most point at code that does not \
                         do what it says."
                    .to_string().into();
            }
            d.evidence.push(ctx.finding_evidence(f));
            d.explains.push(index);
            continue;
        }
        let mut d = Draft::new(RuleId::SanitizerError, level, title);
        d.gives_way = gives_way;
        d.config = f.config.clone();
        (d.kernel, d.helpers) = ctx.kernel_site(f);
        d.location = location;
        if finding.kind == FindingKind::CompilerWarning
            && let Some(location) = &d.location
        {
            warned.push((
                out.len(),
                f.config.clone(),
                message.clone(),
                vec![location.clone()],
            ));
        }
        d.key = finding.fingerprint.clone();
        d.confidence = Confidence::Low;
        d.evidence.push(ctx.finding_evidence(f));
        d.explains.push(index);
        let at = super::at_location(d.location.as_ref());
        let (explanation, fix) = match finding.kind {
            FindingKind::Trap => (
                format!(
                    "A device-side trap{at}: an `assert` that failed, an explicit `__trap()`, or a \
                     trap the compiler planted for an operation it cannot perform (its warnings for \
                     this config say which)."
                ),
                "Read the compile stage's warnings for this config, and the assert or trap at the \
                 named line."
                    .to_string(),
            ),
            FindingKind::DeviceException => (
                format!("The kernel raised a device exception{at} ({message})."),
                "Run memcheck with -lineinfo on this config to locate the faulting instruction."
                    .to_string(),
            ),
            FindingKind::HostApiError => (
                format!(
                    "A CUDA API call failed ({message}) and no device-side finding explains it: \
                     the launch configuration or an earlier asynchronous error."
                ),
                "Check the launch dimensions and shared-memory attribute, and whether an earlier \
                 stage's fault left the context broken."
                    .to_string(),
            ),
            FindingKind::MemoryLeak => (
                format!("Device memory allocated and never freed ({message})."),
                "Free every allocation (or let the owning wrapper drop) before the context ends."
                    .to_string(),
            ),
            FindingKind::CompilerWarning => (
                format!("The compiler warned{at}: {message}."),
                "Read the warning at the named line; most point at code that does not do what it \
                 says."
                    .to_string(),
            ),
            _ => (
                format!(
                    "{tool} reported {}{at}: {message}.",
                    crate::text::plural(finding.count, "record", "records")
                ),
                "Read the quoted record; no rule recognises this kind of finding yet.".to_string(),
            ),
        };
        d.explanation = explanation.into();
        d.fix = fix.into();
        out.push(d);
    }
    out
}

/// "io.cu:447, 458, 459" for lines of one file, the file named again where it changes.
fn line_list(lines: &[SourceLocation]) -> String {
    let mut out = String::new();
    let mut file: Option<&str> = None;
    for l in lines {
        if !out.is_empty() {
            out.push_str(", ");
        }
        match (file == Some(l.file.as_str()), l.line) {
            (true, Some(line)) => out.push_str(&line.to_string()),
            _ => out.push_str(&l.to_string()),
        }
        file = Some(&l.file);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture};
    use crate::{diagnosis::Level, run::StageKind};

    /// memcheck on `leak.cu` (`compute-sanitizer/memcheck_leak.log`): 1,024 bytes allocated and
    /// never freed, a finding no other rule takes.
    #[test]
    fn fires_on_a_leak_no_other_rule_explains() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Memcheck,
                    "release",
                    "sm_90",
                    parsers_fixture!("compute-sanitizer/memcheck_leak.log"),
                )
                .drafts(RuleId::SanitizerError),
        );
        assert_eq!(d.rule, RuleId::SanitizerError);
        assert_eq!(d.level, Level::Warning);
        assert_eq!(d.title, "Device memory leak");
        assert_eq!(d.config.as_deref(), Some("release"));
        // A leak is the process's, at no kernel or line.
        assert_eq!(d.kernel, None);
        assert_eq!(d.location, None);
        assert!(d.explanation.markdown().contains("1,024 bytes"), "{:?}", d.explanation);
    }

    /// memcheck on `clean.cu` (`compute-sanitizer/memcheck_clean.log`): the program's own lines
    /// and 0 errors.
    #[test]
    fn stays_silent_on_a_clean_memcheck_log() {
        let drafts = Case::new()
            .log(
                StageKind::Memcheck,
                "release",
                "sm_90",
                parsers_fixture!("compute-sanitizer/memcheck_clean.log"),
            )
            .drafts(RuleId::SanitizerError);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
