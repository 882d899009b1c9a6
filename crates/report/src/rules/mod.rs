//! The diagnosis rules. Each rule is a small module with one function from the joined evidence
//! to zero or more drafts. A rule never fires without evidence, every draft carries the raw
//! lines it rests on, and a rule never decides another draft's fate: what a draft is (a fault,
//! a symptom, a performance cause) is its rule's [`Role`] in [`RULES`], and `fold`
//! alone turns drafts into one root cause per fault.

use parsers::{Access, Finding, FindingKind, Severity};
use serde_json::json;

use crate::diagnosis::{Confidence, Draft, EvidenceItem, Figure, Helper, Level, SourceLocation};
use crate::join::{FindingRef, Joined, ResultRef};
use crate::kernel_id::KernelId;
use crate::message::{Message, code, figure, msg, path, quote};
use crate::text::{plural, relative_path, scrub};

mod profile;
#[cfg(test)]
mod testing;

pub use crate::rule_id::RuleId;

impl RuleId {
    /// The rule's row in [`RULES`].
    pub fn rule(self) -> &'static Rule {
        // The table lists every id once, in declaration order (a unit test checks it).
        RULES[self as usize]
    }

    /// What the rule's drafts are, for the fold.
    pub fn role(self) -> Role {
        self.rule().role
    }
}

/// What a rule's drafts are to the fold (`fold`), which reads only this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A fault a tool located in the source, or a launch the runtime refused: a root cause of
    /// its own, which the symptoms of its config attach to. Where one config shows several at
    /// different sites, the lowest `rank` (what stops the program first) leads. `unplaced`: a
    /// fault of its own even with no place or kernel (a launch the runtime refused names
    /// neither); else it needs one of them.
    SitedFault { rank: u8, unplaced: bool },
    /// A failing test at its line: a fault of its own unless a tool located one in its config
    /// (then it is that fault's symptom), except where the tool found it in another test, run
    /// alone.
    FailingTest,
    /// What a fault looks like from outside (a failed launch, a wrong output). It attaches to
    /// the fault that explains it; among a config's symptoms with no fault, the lowest `rank`
    /// leads.
    Symptom { rank: u8 },
    /// Costs time, never correctness: stands beside the faults.
    Performance,
    /// A fact about the run that qualifies the other diagnoses (a `-G` build): a note beside
    /// them, never attached.
    Context,
    /// Whatever a tool reported that no other rule explains: stands alone only where no fault
    /// of its config does.
    CatchAll,
    /// A comparison of two runs (`exhibit diff`), never drafted from one run's evidence.
    Comparison,
}

impl Role {
    /// A fault a tool located, of this rank, that needs a place or a kernel.
    pub const fn sited(rank: u8) -> Role {
        Role::SitedFault {
            rank,
            unplaced: false,
        }
    }
}

/// A draft's absorption of another rule's note about the same kernel and config: the richer
/// draft takes the note's figures and evidence (see [`Rule::absorbs`]).
pub type Absorb = fn(&mut Draft, &Draft);

/// A diagnosis rule: its id, role, what it looks for, where it lives and its function.
pub struct Rule {
    pub id: RuleId,
    pub role: Role,
    /// A short name for the rule (SARIF's `shortDescription`).
    pub name: &'static str,
    /// What evidence makes it fire.
    pub description: &'static str,
    /// The module it lives in, relative to the repository.
    pub module: &'static str,
    run: Option<fn(&Ctx) -> Vec<Draft>>,
    /// Another rule's note this rule's drafts with a matching [`Draft::absorbs`] take over, and
    /// how they take in its text.
    pub absorbs: Option<(RuleId, Absorb)>,
    /// Whether its warnings are measured performance causes, which make a run Slow.
    pub slows: bool,
    /// Whether its warning accounts for a kernel's time (where the time goes and why): a
    /// later rule's draft that would only say the kernel is slow gives way to it
    /// ([`GiveWay::TimeAccounted`]).
    pub accounts_for_time: bool,
    /// The experiment its diagnoses call for, beyond a suggestion's own [`Draft::hypothesis`].
    pub proposes: Proposes,
}

/// The experiment a rule's diagnoses call for (see `experiment::propose`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proposes {
    /// The one its suggestions' hypotheses name, if any.
    Hypothesis,
    /// The failing config again at sizes around the tile, where it measured the overshoot.
    Tail,
    /// Identical runs of the racing config, their outputs compared.
    Race,
    /// The failing check again at smaller sizes, where a size knob sets the size.
    Sizes,
}

/// Declares every rule's module and lists their rows, in the order of their ids.
macro_rules! registry {
    ($($module:ident,)*) => {
        $(pub(crate) mod $module;)*

        /// Every rule, in the order they run and rank: each module's `RULE`, one per [`RuleId`]
        /// in its order. Later rules may ask which findings earlier ones explain
        /// ([`Ctx::explained`]), so a finding that a richer rule took is not drafted twice;
        /// `drafting` runs them. `perf-regression` and `perf-improvement` run in `diff::diff()`,
        /// where two runs are compared.
        pub const RULES: &[&Rule] = &[$(&$module::RULE,)*];
    };
}

crate::rule_id::with_rule_modules!(registry);

impl Rule {
    /// A rule of one run, as most are: it absorbs no other rule's note, its warnings make no
    /// run Slow, and it proposes the experiments its suggestions' hypotheses name.
    pub(crate) const fn new(
        id: RuleId,
        role: Role,
        name: &'static str,
        description: &'static str,
        module: &'static str,
        run: fn(&Ctx) -> Vec<Draft>,
    ) -> Rule {
        Rule {
            id,
            role,
            name,
            description,
            module,
            run: Some(run),
            absorbs: None,
            slows: false,
            accounts_for_time: false,
            proposes: Proposes::Hypothesis,
        }
    }

    /// A comparison of two runs (`exhibit diff`): a row with no function of one run.
    pub(crate) const fn comparison(
        id: RuleId,
        name: &'static str,
        description: &'static str,
        module: &'static str,
    ) -> Rule {
        Rule {
            run: None,
            ..Rule::new(id, Role::Comparison, name, description, module, |_| {
                Vec::new()
            })
        }
    }

    /// The row with the experiment its diagnoses call for.
    pub(crate) const fn proposing(self, proposes: Proposes) -> Rule {
        Rule { proposes, ..self }
    }

    /// The row of a rule whose warnings are measured performance causes (they make a run
    /// Slow), and whether each accounts for its kernel's time.
    pub(crate) const fn slowing(self, accounts_for_time: bool) -> Rule {
        Rule {
            slows: true,
            accounts_for_time,
            ..self
        }
    }

    /// The row of a rule whose drafts take over another rule's note ([`Rule::absorbs`]).
    pub(crate) const fn absorbing(self, absorbs: (RuleId, Absorb)) -> Rule {
        Rule {
            absorbs: Some(absorbs),
            ..self
        }
    }

    /// The rule's drafts over the joined evidence (none for a rule of two runs).
    pub fn draft(&self, ctx: &Ctx) -> Vec<Draft> {
        self.run.map(|run| run(ctx)).unwrap_or_default()
    }
}

/// What every rule's drafts get from the evidence once the rules ran: the test a finding came
/// from, where its stage ran each test alone, and the host line a launch came from, wherever
/// a rule's findings carry Python frames.
pub fn annotate(joined: &Joined, drafts: &mut [Draft]) {
    let claimed = std::collections::BTreeSet::new();
    let ctx = Ctx {
        joined,
        claimed: &claimed,
    };
    for d in drafts.iter_mut() {
        if Figure::Test.of(&d.figures).is_none()
            && let Some(test) = d
                .explains
                .iter()
                .find_map(|&i| joined.findings.get(i).and_then(|f| ctx.test_of(f.source)))
        {
            Figure::Test.set(&mut d.figures, json!(test));
        }
        if d.call_site.is_none() {
            d.call_site = d
                .explains
                .iter()
                .filter_map(|&i| joined.findings.get(i))
                .find_map(|f| python_call_site(f.finding, &joined.repo_files));
        }
        say_generated(d);
    }
}

/// A place in CuPy's generated source that no Python file of the run holds (CuPy wraps an
/// `ElementwiseKernel`'s or `ReductionKernel`'s operation in a kernel of its own, and keeps it
/// as `<hash>.cubin.cu`) is said to be that, with the launch line that is the user's.
fn say_generated(d: &mut Draft) {
    static CUPY_SOURCE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^[0-9a-f]{32,64}(?:_\d+)?\.cubin\.cu$").expect("valid regex")
    });
    let Some(at) = d.location.as_ref() else {
        return;
    };
    let name = at.file.rsplit('/').next().unwrap_or(&at.file);
    if !CUPY_SOURCE.is_match(name) {
        return;
    }
    let launched = d
        .call_site
        .as_ref()
        .map(|c| msg!(" The kernel was launched from {}.", path(c)))
        .unwrap_or_default();
    d.explanation.append(msg!(
        " {} is CuPy's generated source: no Python file of the run holds its lines (CuPy wraps \
         an ElementwiseKernel's or ReductionKernel's operation in a kernel of its own), so the \
         line is CuPy's; the operation string is the user's.{}",
        path(name),
        launched
    ));
}

/// Whether a draft is a fault of its own that symptoms may attach to: an error of a rule whose
/// role is [`Role::SitedFault`].
pub fn is_fault(d: &Draft) -> bool {
    matches!(d.rule.role(), Role::SitedFault { .. }) && d.level == Level::Error
}

/// What a rule sees: the joined evidence, and which findings earlier rules explain.
pub struct Ctx<'j, 'a> {
    pub joined: &'j Joined<'a>,
    /// The findings (indices into [`Joined::findings`]) earlier rules' drafts explain: a
    /// finding is its first rule's.
    pub claimed: &'j std::collections::BTreeSet<usize>,
}

/// Whether a draft's kernel is this kernel. A draft's kernel is text its rule wrote (mostly an
/// id's, but a compile error keeps the tool's own spelling), so it is matched by its id.
pub(crate) fn draft_kernel_is(draft_kernel: &str, kernel: &KernelId) -> bool {
    KernelId::of(draft_kernel) == *kernel
}

impl Ctx<'_, '_> {
    /// Whether an earlier rule already explains finding `index`.
    pub fn explained(&self, index: usize) -> bool {
        self.claimed.contains(&index)
    }

    /// The findings of `kind` that no earlier rule explains, with their indices into
    /// [`Joined::findings`].
    pub fn unexplained(&self, kind: FindingKind) -> impl Iterator<Item = (usize, &FindingRef<'_>)> {
        self.joined
            .findings
            .iter()
            .enumerate()
            .filter(move |(i, f)| f.finding.kind == kind && !self.explained(*i))
    }

    /// The indices, ascending, of the findings of log `source` whose kind `wanted` accepts.
    pub fn in_log(
        &self,
        source: usize,
        wanted: fn(FindingKind) -> bool,
    ) -> impl Iterator<Item = usize> {
        self.joined
            .findings
            .iter()
            .enumerate()
            .filter(move |(_, f)| f.source == source && wanted(f.finding.kind))
            .map(|(i, _)| i)
    }

    /// The user's source line at a place, as the runner kept it when the unit that named the
    /// place ended (`Stage::site_lines`).
    pub fn site_line(&self, at: &SourceLocation) -> Option<&str> {
        let key = format!("{}:{}", at.file, at.line?);
        self.joined
            .stages()
            .iter()
            .find_map(|s| s.site_lines.get(&key))
            .map(String::as_str)
    }

    /// Whether this config is a `-G` (device debug) build: its compiler said so, or its build
    /// command carries `-G` or `--device-debug`.
    pub fn debug_build(&self, config: Option<&str>) -> bool {
        let j = self.joined;
        j.findings_in(config)
            .any(|(_, f)| debug_build::is_debug_warning(f.finding))
            || j.sources_in(config).any(|s| {
                s.kind == crate::run::StageKind::Compile
                    && s.stage.is_some_and(|st| {
                        st.command
                            .iter()
                            .any(|a| a == "-G" || a == "--device-debug")
                    })
            })
    }

    /// An error draft about finding `index` at the site a tool located, to be worded: its
    /// config, kernel and place, the finding quoted as evidence, explained and counted as
    /// `records`. Confidence is high when the place is known.
    pub fn site_draft(&self, rule: RuleId, index: usize, f: &FindingRef) -> Draft {
        let mut d = self.finding_draft(rule, Level::Error, index, f);
        (d.kernel, d.helpers) = self.kernel_site(f);
        d.location = self.place(f);
        d.confidence = if d.location.is_some() {
            Confidence::High
        } else {
            Confidence::Medium
        };
        d.figures.insert("records".into(), json!(f.finding.count));
        // The other places the tool named with it (the other side of a race), labelled.
        d.spans = f
            .finding
            .related
            .iter()
            .filter_map(|r| {
                let location = self.relative(r.file.as_ref()?, r.line);
                let function = r.function.as_deref().unwrap_or("");
                let label = match function.split_whitespace().next() {
                    Some("Write") => msg!("the other side of the hazard: a write"),
                    Some("Read") => msg!("the other side of the hazard: a read"),
                    _ if function.is_empty() => msg!("a related site the tool named"),
                    // The related site's function: a tool string the join does not index.
                    _ => msg!("a related site, in {}", code(KernelId::of(function))),
                };
                Some(crate::diagnosis::Span::secondary(location, label))
            })
            .collect();
        d
    }

    /// A draft at `level` about finding `index`, to be worded: its config, and the finding
    /// quoted as evidence and explained.
    pub fn finding_draft(&self, rule: RuleId, level: Level, index: usize, f: &FindingRef) -> Draft {
        let mut d = Draft::new(rule, level, Message::new());
        d.config = f.config.clone();
        d.evidence.push(self.finding_evidence(f));
        d.explains.push(index);
        d
    }

    /// An error draft about harness result `r`, to be worded: its config and kernel, the
    /// kernel's source file as its place, and the harness's findings of its log explained.
    pub fn result_draft(&self, rule: RuleId, r: &ResultRef) -> Draft {
        let mut d = Draft::new(rule, Level::Error, Message::new());
        d.config = r.config.clone();
        d.kernel = Some(r.kernel.to_string());
        d.location = self.kernel_file(r.config.as_deref());
        d.explains.extend(self.in_log(r.source, is_harness_kind));
        d
    }

    /// The test whose run left log `source`, when its stage ran each test alone
    /// (`split: tests`).
    pub fn test_of(&self, source: usize) -> Option<&str> {
        let s = self.joined.source(source)?;
        s.stage?
            .split
            .iter()
            .find(|t| t.log == s.path)
            .map(|t| t.id.as_str())
    }

    /// The evidence item quoting a finding's raw lines.
    pub fn finding_evidence(&self, f: &FindingRef) -> EvidenceItem {
        let finding = f.finding;
        let mut summary = msg!(
            "{} × {}",
            figure(finding.count.to_string()),
            quote(scrub(&finding.message, &self.joined.repo_files))
        );
        let (kernel, helpers) = self.kernel_site(f);
        if let Some(kernel) = kernel {
            summary.append(msg!(" in {}", code(kernel)));
        }
        for h in helpers {
            summary.append(msg!(" (inlined helper {})", code(h.name)));
        }
        summary.append(at_location(self.finding_location(finding).as_ref()));
        if let Some(test) = self.test_of(f.source) {
            summary.append(msg!(", in test {}", code(test)));
        }
        EvidenceItem {
            excerpt: self.excerpt(&finding.excerpt),
            ..self.source_evidence(Some(f.source), f.config.as_deref(), summary)
        }
    }

    /// The program's own lines a site was inlined into, up the SASS line table's inlining
    /// (`nvdisasm -gi`, one level per entry): from a header's line to each of the user's calls
    /// that brought it in, the first line of the program's own files on each way up.
    pub fn inlined_into(&self, config: Option<&str>, site: &SourceLocation) -> Vec<SourceLocation> {
        let j = self.joined;
        let Some(line) = site.line else {
            return Vec::new();
        };
        let edges: Vec<&parsers::Inlined> =
            j.sources_in(config).flat_map(|s| &s.log.inlined).collect();
        let same = |file: &str, wanted: &str| {
            let file = relative_path(file, &j.repo_files);
            file == wanted || file.ends_with(&format!("/{wanted}"))
        };
        let own = |file: &str| j.repo_files.contains(&relative_path(file, &j.repo_files));
        let mut out: Vec<SourceLocation> = Vec::new();
        let mut seen: std::collections::BTreeSet<(&str, u32)> = Default::default();
        let mut frontier: Vec<(&str, u32)> = edges
            .iter()
            .filter(|e| e.line == line && same(&e.file, &site.file))
            .map(|e| (e.file.as_str(), e.line))
            .collect();
        while let Some((file, line)) = frontier.pop() {
            for e in edges.iter().filter(|e| e.file == file && e.line == line) {
                let up = (e.at_file.as_str(), e.at_line);
                if !seen.insert(up) {
                    continue;
                }
                if own(e.at_file.as_str()) {
                    out.push(self.relative(&e.at_file, Some(e.at_line)));
                } else {
                    frontier.push(up);
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// A source-page line's place, at the user's own line: a toolkit header's line (WMMA's
    /// `mma.hpp`, `atomicAdd`'s body) is placed at the user's call it was inlined into.
    pub fn user_place(&self, config: Option<&str>, l: &parsers::SourceLine) -> SourceLocation {
        let at = self.tool_place(&l.file, l.line, config);
        if self.joined.repo_files.contains(&at.file) {
            return at;
        }
        self.inlined_into(config, &at)
            .into_iter()
            .next()
            .unwrap_or(at)
    }

    /// The `__global__` kernel a finding is in, kernel first, and the device function inlined
    /// into it where the access sits, when that is not the kernel itself. compute-sanitizer
    /// names the function the access is in, and the kernel only in a device frame under it:
    /// racecheck's "Race reported between" records name only the function (`cp_async_16`),
    /// and the kernel is then the one the stage launched.
    pub fn kernel_site(&self, f: &FindingRef) -> (Option<String>, Vec<Helper>) {
        let finding = f.finding;
        let named = f.kernel.as_ref();
        let location = self.finding_location(finding);
        let helper = |name: KernelId| Helper {
            name: name.into(),
            location: location.clone(),
        };
        if let (Some(name), Some(launched)) = (named, self.launched_kernel(f.source))
            && *name != launched
            && self.joined.kernel(f.config.as_deref(), name).is_none()
        {
            return (Some(launched.into()), vec![helper(name.clone())]);
        }
        // The record's own frame, under the kernel's device frame: a helper in the user's
        // source (a run's input or a `.cu` file; a toolkit header's intrinsic is no helper of
        // theirs).
        let in_user_source = location.as_ref().is_some_and(|l| self.ownership(l) >= 2);
        let function = finding
            .facts
            .function
            .as_deref()
            .map(KernelId::of)
            .filter(|func| in_user_source && Some(func) != named);
        (
            named.cloned().map(String::from),
            function.map(helper).into_iter().collect(),
        )
    }

    /// The kernel the stage of a log launched: the one its unit names, else the one its
    /// harness results name.
    pub fn launched_kernel(&self, source: usize) -> Option<KernelId> {
        let j = self.joined;
        let stage = j.source(source)?.stage?;
        if let Some(kernel) = stage.unit().kernel.as_deref() {
            return Some(KernelId::of(kernel));
        }
        j.results_of(&stage_sources(j, stage))
            .find(|r| !crate::join::is_baseline(r.result))
            .map(|r| r.kernel.clone())
    }

    /// An evidence item about a harness result, quoting no raw lines (the JSON is the record).
    pub fn result_evidence(&self, r: &ResultRef, summary: impl Into<Message>) -> EvidenceItem {
        self.source_evidence(Some(r.source), r.config.as_deref(), summary)
    }

    /// An evidence item with a summary only, for the log at `source`.
    pub fn source_evidence(
        &self,
        source: Option<usize>,
        config: Option<&str>,
        summary: impl Into<Message>,
    ) -> EvidenceItem {
        let source = source.and_then(|i| self.joined.source(i));
        EvidenceItem {
            stage: source.map(|s| s.stage_name()).unwrap_or_default(),
            config: config.map(str::to_string),
            log: source.map(|s| s.path.to_string()).unwrap_or_default(),
            summary: summary.into(),
            excerpt: Vec::new(),
        }
    }

    /// An evidence item with a summary only, for the first metrics log (ncu) of this config.
    pub fn metric_evidence(
        &self,
        config: Option<&str>,
        summary: impl Into<Message>,
    ) -> EvidenceItem {
        let source = self
            .joined
            .metrics
            .iter()
            .find(|m| m.config.as_deref() == config)
            .map(|m| m.source);
        self.source_evidence(source, config, summary)
    }

    /// Raw lines as a report quotes them: scrubbed, host frames left out (the device side is
    /// the evidence), at most [`MAX_EXCERPT`]; what is left out is counted.
    pub fn excerpt(&self, lines: &[String]) -> Vec<String> {
        let (host, kept): (Vec<&String>, Vec<&String>) =
            lines.iter().partition(|l| parsers::is_host_frame_line(l));
        let mut out: Vec<String> = kept
            .iter()
            .take(MAX_EXCERPT)
            .map(|l| scrub(l, &self.joined.repo_files))
            .collect();
        let more = kept.len().saturating_sub(MAX_EXCERPT) as u64;
        if more > 0 {
            out.push(format!("… ({})", plural(more, "more line", "more lines")));
        }
        if !host.is_empty() {
            out.push(format!(
                "… ({})",
                plural(host.len() as u64, "host frame", "host frames")
            ));
        }
        out
    }

    /// The finding's own location, made relative to the repository.
    pub fn finding_location(&self, finding: &Finding) -> Option<SourceLocation> {
        let file = finding.file.as_ref()?;
        Some(
            self.mapped_in(file, finding.line, None)
                .unwrap_or_else(|| self.relative(file, finding.line)),
        )
    }

    /// A file a tool names and a line in it, the file made relative to the repository.
    fn relative(&self, file: &str, line: Option<u32>) -> SourceLocation {
        SourceLocation {
            file: relative_path(file, &self.joined.repo_files),
            line,
        }
    }

    /// A place in a file a build generated from the user's text (`cuda.cu` of `load_inline`),
    /// as the user's own file and line, with the maps of `config`'s build first (a tool that
    /// names the generated file by its absolute path in one config's build directory means
    /// that config's). Only when one map covers it: two configs' maps of the same name that
    /// disagree settle nothing.
    fn mapped_in(
        &self,
        file: &str,
        line: Option<u32>,
        config: Option<&str>,
    ) -> Option<SourceLocation> {
        let line = line?;
        let name = file.rsplit('/').next().unwrap_or(file);
        let named = || {
            self.joined
                .source_maps
                .iter()
                .filter(move |m| m.generated == name)
        };
        let of_config = config.is_some_and(|c| named().any(|m| m.config.as_deref() == Some(c)));
        let mut found = named()
            .filter(|m| !of_config || m.config.as_deref() == config)
            .filter_map(|m| Some((m.source.clone(), m.line(line)?)));
        let first = found.next()?;
        found.all(|other| other == first).then_some(SourceLocation {
            file: first.0,
            line: Some(first.1),
        })
    }

    /// A place a tool names (an Nsight Compute source line), as the user's file and line: a
    /// generated `load_inline` file mapped back to the Python that holds its text (the maps of
    /// `config` first), anything else made relative to the repository.
    pub fn tool_place(&self, file: &str, line: u32, config: Option<&str>) -> SourceLocation {
        self.mapped_in(file, Some(line), config)
            .unwrap_or_else(|| self.relative(file, Some(line)))
    }

    /// The best place in the user's source a finding names: its own location or a related one,
    /// preferring a file among the run's inputs, then a `.cu` file, then anything but a toolkit
    /// header.
    pub fn user_location(&self, finding: &Finding) -> Option<SourceLocation> {
        let related = finding
            .related
            .iter()
            .filter_map(|r| Some(self.relative(r.file.as_ref()?, r.line)));
        // The call stack compute-sanitizer prints under the record ("Device Frame: f+0x60 in
        // file.cu:26"): the user's frame is often below a toolkit header's.
        let frames = finding
            .device_frames
            .iter()
            .filter_map(|f| Some(self.relative(f.file.as_ref()?, Some(f.line?))));
        let candidates: Vec<SourceLocation> = self
            .finding_location(finding)
            .into_iter()
            .chain(related)
            .chain(frames)
            .collect();
        let best = candidates.iter().map(|c| self.ownership(c)).max()?;
        candidates.into_iter().find(|c| self.ownership(c) == best)
    }

    /// How surely a place is the user's own source: 3 for a file among the run's inputs, 2 for
    /// a `.cu` or `.cuh` file, 0 for a toolkit header, 1 for anything else.
    fn ownership(&self, loc: &SourceLocation) -> u8 {
        if self.joined.repo_files.contains(&loc.file) {
            3
        } else if loc.file.ends_with(".cu") || loc.file.ends_with(".cuh") {
            2
        } else if loc.file.starts_with("<toolkit>") {
            0
        } else {
            1
        }
    }

    /// Where a diagnosis about a finding points: the finding's best user location, or the
    /// kernel's source file when the tool only named a toolkit header (or nothing).
    pub fn place(&self, f: &FindingRef) -> Option<SourceLocation> {
        match self.user_location(f.finding) {
            Some(loc) if !loc.file.starts_with('<') => Some(loc),
            other => self.kernel_file(f.config.as_deref()).or(other),
        }
    }

    /// The kernel's source file from its config's compile command, for diagnoses about a whole
    /// kernel (no line).
    pub fn kernel_file(&self, config: Option<&str>) -> Option<SourceLocation> {
        let params = match config {
            Some(c) => self.joined.configs.get(c),
            None => self.joined.configs.values().next(),
        }?;
        Some(SourceLocation {
            file: params.source.clone()?,
            line: None,
        })
    }
}

/// The most raw lines an evidence item quotes.
pub const MAX_EXCERPT: usize = 12;

/// Whether a finding kind comes from the harness rather than a tool.
pub fn is_harness_kind(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::WrongResult
            | FindingKind::NanOutput
            | FindingKind::UnwrittenOutput
            | FindingKind::CanaryCorrupted
            | FindingKind::LaunchError
            | FindingKind::Nondeterminism
    )
}

/// An access as the words name it: "read", "write", or "access" where the tool did not say.
pub fn access_word(access: Option<Access>) -> &'static str {
    match access {
        Some(Access::Read) => "read",
        Some(Access::Write) => "write",
        None => "access",
    }
}

/// Whether a finding is at error severity.
pub fn is_error(finding: &Finding) -> bool {
    finding.severity == Severity::Error
}

/// The harness mode's name as its CLI spells it.
pub fn mode_name(mode: parsers::harness::Mode) -> &'static str {
    match mode {
        parsers::harness::Mode::Once => "once",
        parsers::harness::Mode::Check => "check",
        parsers::harness::Mode::Stress => "stress",
        parsers::harness::Mode::Bench => "bench",
    }
}

/// The indices of the sources read from a stage's logs, ascending.
pub fn stage_sources(j: &Joined, stage: &crate::run::Stage) -> Vec<usize> {
    let of = |s: &crate::join::Source| s.stage.is_some_and(|st| std::ptr::eq(st, stage));
    (0..j.sources.len())
        .filter(|&i| of(&j.sources[i]))
        .collect()
}

/// The problem shape and element size of the stage that produced a log: from a harness result
/// in the same stage, else from the case its unit record names.
pub fn stage_shape(ctx: &Ctx, source: usize) -> Option<(parsers::harness::Shape, u64)> {
    let j = ctx.joined;
    let src = j.source(source)?;
    let elem = |dtype: &str| if dtype.contains("32") { 4 } else { 2 };
    let of_result = |r: &ResultRef| (r.result.shape.clone(), elem(&r.result.dtype));
    let Some(stage) = src.stage else {
        return j.results.iter().find(|r| r.source == source).map(of_result);
    };
    if let Some(r) = j.results_of(&stage_sources(j, stage)).next() {
        return Some(of_result(r));
    }
    let case = stage.unit.case.as_ref()?;
    Some((
        case.shape.clone()?,
        elem(case.dtype.as_deref().unwrap_or("f16")),
    ))
}

/// Where the frameworks' own Python lives, between a user's line and the launch: their frames
/// are passed over for the first frame of the user's own code.
const FRAMEWORK_PATHS: &[&str] = &[
    "site-packages/",
    "dist-packages/",
    "/torch/",
    "/triton/",
    "/pybind11",
    "<frozen ",
    "/lib/python3",
];

/// Frameworks' files as compute-sanitizer names them without a directory (Triton's launcher,
/// torch's module machinery).
const FRAMEWORK_FILES: &[&str] = &[
    "driver.py",
    "jit.py",
    "autotuner.py",
    "compiler.py",
    "module.py",
    "functional.py",
    "_tensor.py",
    "overrides.py",
    "_ops.py",
    "cpp_extension.py",
    "graphs.py",
    "runpy.py",
];

/// The first Python frame in the user's own code of a finding's host backtrace (innermost
/// first, `<module> in oracle.py:49` with or without a directory, as the parser typed them). A
/// frame in one of the run's own files wins; frameworks' frames are passed over.
pub fn python_call_site(finding: &Finding, repo_files: &[String]) -> Option<SourceLocation> {
    let frames: Vec<(&str, u32)> = finding
        .host_frames
        .iter()
        .filter_map(|f| Some((f.file.as_deref()?, f.line?)))
        .filter(|(file, _)| file.ends_with(".py"))
        .collect();
    let own = |file: &str| repo_files.contains(&relative_path(file, repo_files));
    let framework = |file: &str| {
        let name = file.rsplit('/').next().unwrap_or(file);
        FRAMEWORK_PATHS.iter().any(|p| file.contains(p)) || FRAMEWORK_FILES.contains(&name)
    };
    let (file, line) = frames
        .iter()
        .find(|(file, _)| own(file))
        .or_else(|| frames.iter().find(|(file, _)| !framework(file)))?;
    Some(SourceLocation {
        file: relative_path(file, repo_files),
        line: Some(*line),
    })
}

/// Appends each of `new` to `to` unless an item already there (or appended before it) is
/// `same` as it, in their order.
pub fn push_new<T>(to: &mut Vec<T>, new: impl IntoIterator<Item = T>, same: fn(&T, &T) -> bool) {
    for item in new {
        if !to.iter().any(|x| same(x, &item)) {
            to.push(item);
        }
    }
}

/// " at file:line" for a draft's location, or nothing when it has none.
pub fn at_location(location: Option<&SourceLocation>) -> Message {
    location
        .map(|l| msg!(" at {}", quote(l.to_string())))
        .unwrap_or_default()
}

/// What the sanitizers said about this config when every one that ran was clean: they did not
/// see the defect that `caught_by` did. With wgmma or TMA in the config's SASS, says why they can
/// be blind: both move shared-memory data through the asynchronous proxy, which no sanitizer
/// follows.
pub fn blind_sanitizers(ctx: &Ctx, config: Option<&str>, caught_by: &str) -> Option<Message> {
    use crate::join::{Source, kind_name};
    let j = ctx.joined;
    let logs: Vec<_> = j
        .sources_in(config)
        .filter(|s| {
            s.kind.is_sanitizer()
                && matches!(
                    s.log.format,
                    parsers::Format::ComputeSanitizer | parsers::Format::ComputeSanitizerXml
                )
        })
        .collect();
    let clean = |s: &&Source| {
        s.log.complete
            && s.log.reported_errors == Some(0)
            && s.log.unprinted_errors == 0
            && s.log.findings.is_empty()
    };
    if logs.is_empty() || !logs.iter().all(clean) {
        return None;
    }
    let kinds: std::collections::BTreeSet<_> = logs.iter().map(|s| s.kind).collect();
    let names: Vec<String> = kinds.iter().map(|&k| kind_name(k).to_string()).collect();
    let mut said = msg!(
        "{} ran on this config and reported no error: {} blind to this defect, which {} caught.",
        crate::text::join_words(&names),
        if names.len() == 1 {
            "it was"
        } else {
            "they were"
        },
        caught_by
    );
    let sass: Vec<_> = j
        .kernels
        .iter()
        .filter(|k| k.config.as_deref() == config)
        .filter_map(|k| k.sass)
        .collect();
    let hgmma: u64 = sass.iter().map(|s| s.hgmma).sum();
    let tma: u64 = sass.iter().map(|s| s.tma).sum();
    if hgmma > 0 && tma > 0 {
        said.append(msg!(
            " Its SASS has {} HGMMA (wgmma) and {} TMA copies (UTMALDG): TMA writes shared \
             memory and wgmma reads it through the asynchronous proxy, which no sanitizer \
             follows, so a wrong tensor map or descriptor (box, stride, swizzle), a missing \
             mbarrier wait or a missing wgmma.wait_group shows only in the results.",
            figure(hgmma.to_string()),
            figure(tma.to_string())
        ));
    } else if hgmma > 0 {
        said.append(msg!(
            " Its SASS has {} HGMMA (wgmma): wgmma reads its shared-memory operands through \
             descriptors and the asynchronous proxy, which no sanitizer follows, so a wrong \
             descriptor (start, stride, swizzle, transpose) or a missing wgmma.wait_group or \
             fence.proxy.async shows only in the results.",
            figure(hgmma.to_string())
        ));
    }
    Some(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_rule_once_in_the_order_of_its_ids() {
        for (i, rule) in RULES.iter().enumerate() {
            assert_eq!(rule.id as usize, i, "{} is out of order", rule.id.as_str());
            assert_eq!(RuleId::parse(rule.id.as_str()), Some(rule.id));
            let json = serde_json::to_string(&rule.id).unwrap();
            assert_eq!(json, format!("\"{}\"", rule.id.as_str()));
        }
        assert_eq!(RULES.len(), RuleId::PerfImprovement as usize + 1);
    }

    #[test]
    fn only_rules_that_run_on_one_run_have_a_function() {
        for rule in RULES {
            assert_eq!(
                rule.run.is_none(),
                rule.role == Role::Comparison,
                "{}",
                rule.id.as_str()
            );
        }
    }
}
