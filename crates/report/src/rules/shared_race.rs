//! `shared-memory-race`: racecheck's hazard between a write and a read (or two writes) of the
//! same shared-memory address with no barrier between them. A race between lanes of one warp
//! (racecheck's warp-level programming hazard, the finding's `sync_scope` of warp) is missing a
//! `__syncwarp()`; a race between warps of a block is missing a `__syncthreads()`.
//!
//! Detection reads each finding into a [`Race`] and each pair of sites into a [`Pair`], whose
//! [`PairKind`] picks the diagnosis; one `word_*` function per diagnosis ([`words`]) words it.
//! The merging of drafts ([`merge`]) reads what each span marks from its [`Mark`], never from
//! its label.

mod merge;
mod words;

use parsers::facts::HazardType;
use parsers::{Access, FindingKind, Severity};
use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId, push_new};
use crate::diagnosis::{Confidence, Draft, Helper, Level, SourceLocation, Span};
use crate::kernel_id::KernelId;
use crate::message::{Message, Part, path};
use crate::text::is_users_file;
use merge::{merge_adjacent_writes, merge_sites_of_one_barrier};
use words::{
    word_async_copies, word_barrier_pair, word_mark, word_one_site, word_unsaid_scope,
    word_warp_pair, word_write_after_read,
};

pub(crate) const RULE: Rule = Rule::new(
    RuleId::SharedMemoryRace,
    Role::sited(3),
    "Shared-memory race",
    "racecheck's write and read sites: a barrier is missing between them.",
    "crates/report/src/rules/shared_race.rs",
    run,
)
.proposing(Proposes::Race);

/// One draft per distinct pair of sites.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for (index, f) in j.findings.iter().enumerate() {
        if f.finding.kind == FindingKind::Race {
            let race = Race::of(ctx, f);
            out.extend(
                race.sides
                    .iter()
                    .map(|s| pair_draft(ctx, index, f, &race, s)),
            );
        }
    }
    merge_adjacent_writes(merge_sites_of_one_barrier(out, &j.repo_files))
        .into_iter()
        .map(|d| d.into_draft(ctx))
        .collect()
}

/// What a span of a race draft marks: an access (the write, or the other side's read or
/// write), or the program's call that inlines the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Access(Access),
    InliningCall,
}

/// A race draft while its drafts merge: its spans held beside it, each with what it marks, so
/// that merging reads typed marks rather than labels.
struct RaceDraft {
    draft: Draft,
    spans: Vec<(Span, Mark)>,
}

impl RaceDraft {
    /// The finished draft, its spans in place; where its records place it in a Python file as
    /// the tool wrote it (a Numba kernel; a CuPy kernel's lines are its generated `.cu` file's,
    /// mapped to Python later), its barriers as Numba spells them.
    fn into_draft(self, ctx: &Ctx) -> Draft {
        let mut d = self.draft;
        d.spans = self.spans.into_iter().map(|(span, _)| span).collect();
        let in_python = d.explains.iter().any(|&i| {
            ctx.joined
                .findings
                .get(i)
                .and_then(|f| f.finding.file.as_deref())
                .is_some_and(|file| file.ends_with(".py"))
        });
        if in_python {
            let numba = |c: &str| match c {
                "__syncthreads()" => Some("cuda.syncthreads()"),
                "__syncwarp()" => Some("cuda.syncwarp()"),
                _ => None,
            };
            d.title.map_code(numba);
            d.explanation.map_code(numba);
            d.fix.map_code(numba);
        }
        d
    }
}

/// One side of a race besides the finding's own site: its access, its place, the helper it is
/// in when that is not the kernel, and the tool's count for its pair where it counted every
/// side.
type Side = (
    Option<Access>,
    Option<SourceLocation>,
    Option<Helper>,
    Option<u64>,
);

/// What one racecheck finding says for every pair of sites it names.
struct Race<'f> {
    finding: &'f parsers::Finding,
    first_access: Option<Access>,
    /// The finding's own site.
    first: Option<SourceLocation>,
    hazards: u64,
    hazard_type: Option<HazardType>,
    /// A race between lanes of one warp (the parser's typed scope).
    warp: bool,
    cp_async: bool,
    /// Two asynchronous copies into the same bytes.
    async_copy: bool,
    kernel: Option<String>,
    helpers: Vec<Helper>,
    /// The other sides, one pair each.
    sides: Vec<Side>,
}

impl<'f> Race<'f> {
    fn of(ctx: &Ctx, f: &crate::join::FindingRef<'f>) -> Race<'f> {
        let j = ctx.joined;
        let finding = f.finding;
        let (first_access, fallback_access) = accesses(finding);
        let first = ctx.finding_location(finding);
        // A write by an asynchronous copy (cp.async): the finding's own site or a side's, by
        // the copy primitive's name or the user's line there.
        // Two copies into the same bytes: the finding's own write and a side's write, both by
        // the asynchronous copy at one line. (A copy racing only with reads may as well be a
        // missing barrier after a correct wait: the barrier advice covers it.)
        let async_copy = first_access != Some(Access::Read)
            && copies_async(ctx, first.as_ref(), finding.kernel.as_deref())
            && finding.sides.iter().any(|r| {
                r.access == Some(Access::Write)
                    && r.location.line == first.as_ref().and_then(|l| l.line)
                    && copies_async(ctx, None, r.location.function.as_deref())
                    || copies_async(ctx, first.as_ref(), None)
            });
        let (mut kernel, mut helpers) = ctx.kernel_site(f);
        // A helper's frame (the toolkit's copy primitive, a device function) named where the
        // kernel the other side names is one the build compiled: that kernel is the launch.
        if let Some(named) = f.kernel.as_ref()
            && j.kernel(f.config.as_deref(), named).is_none()
            && let Some(launched) = finding
                .sides
                .iter()
                .filter_map(|r| r.location.function.as_deref())
                .map(KernelId::of)
                .find(|k| j.kernel(f.config.as_deref(), k).is_some())
        {
            kernel = Some(launched.into());
            let helper = Helper {
                name: named.clone().into(),
                location: first.clone(),
            };
            push_new(&mut helpers, [helper], PartialEq::eq);
        }
        // One pair per other side the tool named ("... and Write access at X", "and ... at Y"),
        // with the tool's own count per side ("[512 hazards]") where it counted every one; one
        // side with no place when it named none.
        let named: Vec<&parsers::RaceSide> = finding
            .sides
            .iter()
            .filter(|r| r.location.file.is_some() || r.location.line.is_some())
            .collect();
        let counted = named.iter().all(|r| r.hazards.is_some());
        let mut sides: Vec<Side> = named
            .iter()
            .map(|r| {
                let loc =
                    (r.location.file.as_ref()).map(|file| ctx.relative(file, r.location.line));
                // The function of the other side (`attn::ldmatrix_x4(...)`), when it is a
                // helper inlined into the kernel rather than the kernel itself.
                let helper = r
                    .location
                    .function
                    .as_deref()
                    .map(KernelId::of)
                    .filter(|name| !helpers.is_empty() && Some(name.as_str()) != kernel.as_deref())
                    .map(|name| Helper {
                        name: name.into(),
                        location: loc.clone(),
                    });
                let hazards = r.hazards.filter(|_| counted);
                (r.access.or(fallback_access), loc, helper, hazards)
            })
            .collect();
        if sides.is_empty() {
            sides.push((fallback_access, None, None, None));
        }
        Race {
            finding,
            first_access,
            first,
            hazards: finding.facts.race_hazards().unwrap_or(finding.count),
            hazard_type: finding.facts.race.as_deref().and_then(|r| r.hazard_type),
            warp: finding.sync_scope == Some(parsers::SyncScope::Warp),
            cp_async: has_cp_async(ctx, f),
            async_copy,
            kernel,
            helpers,
            sides,
        }
    }
}

/// What the wording of one pair reads: its race, its two sites and how they race.
struct Pair<'p> {
    race: &'p Race<'p>,
    write: Option<SourceLocation>,
    other: Option<SourceLocation>,
    other_access: Access,
    same_file: bool,
    write_line: Option<u32>,
    other_line: Option<u32>,
    /// The tool's count for this pair, where it counted per side.
    side_hazards: Option<u64>,
    /// The helpers inlined into the kernel where the sites are.
    helpers: Vec<Helper>,
    /// The write's source line, as the program has it.
    site_line: Option<&'p str>,
}

/// Which diagnosis a pair is, with the write's line (`w`) and the other side's (`o`).
#[derive(Clone, Copy)]
enum PairKind {
    /// Lanes of one warp racing at two lines: a missing `__syncwarp()`.
    Warp { w: u32, o: u32 },
    /// A write after a read of one file in program order: the next iteration overwrites what a
    /// slower warp still reads.
    WriteAfterRead { w: u32, o: u32 },
    /// Threads racing at two lines with no barrier between them: a missing `__syncthreads()`.
    Barrier { w: u32, o: u32 },
    /// Two writes by the same asynchronous copy instruction: two copies into one destination in
    /// flight at once.
    AsyncCopies,
    /// One site, or sites without lines.
    OneSite,
}

impl PairKind {
    /// The diagnosis of a pair.
    fn of(p: &Pair) -> PairKind {
        match (p.write_line, p.other_line) {
            (Some(w), Some(o)) if p.race.warp && w != o => PairKind::Warp { w, o },
            (Some(w), Some(o)) if p.same_file && w > o && p.other_access == Access::Read => {
                PairKind::WriteAfterRead { w, o }
            }
            (Some(w), Some(o)) if w != o || !p.same_file => PairKind::Barrier { w, o },
            // One line of one file, as the arm before leaves it.
            (Some(_), Some(_)) if p.other_access == Access::Write && p.race.async_copy => {
                PairKind::AsyncCopies
            }
            _ => PairKind::OneSite,
        }
    }

    /// Where the diagnosis is sited: the read for a missing barrier before it, the write for
    /// one after it or for a copy, else whichever site there is.
    fn place(self, p: &Pair) -> Option<SourceLocation> {
        match self {
            PairKind::Warp { .. } | PairKind::Barrier { .. } => p.other.clone(),
            PairKind::WriteAfterRead { .. } | PairKind::AsyncCopies => p.write.clone(),
            PairKind::OneSite => p.write.clone().or(p.other.clone()),
        }
    }
}

/// The draft of one pair: the finding's own site and one other side.
fn pair_draft(
    ctx: &Ctx,
    index: usize,
    f: &crate::join::FindingRef,
    race: &Race,
    (second_access, second, other_helper, side_hazards): &Side,
) -> RaceDraft {
    let (first, second) = (race.first.clone(), second.clone());
    // Name the write site and the other side.
    let (write, other, other_access) = match (race.first_access, *second_access) {
        (Some(Access::Read), Some(Access::Write) | None) => (second, first, Access::Read),
        (_, Some(b)) => (first, second, b),
        _ => (first, second, Access::Read),
    };
    let mut helpers = race.helpers.clone();
    push_new(&mut helpers, other_helper.clone(), PartialEq::eq);
    let p = Pair {
        same_file: matches!((&write, &other), (Some(a), Some(b)) if a.file == b.file),
        write_line: write.as_ref().and_then(|l| l.line),
        other_line: other.as_ref().and_then(|l| l.line),
        site_line: write.as_ref().and_then(|at| ctx.site_line(at)),
        race,
        write,
        other,
        other_access,
        side_hazards: *side_hazards,
        helpers,
    };
    let finding = race.finding;
    // racecheck's own severity, kept: an Error is a race; a Warning between two writes
    // (lanes writing the value every other lane holds) may be benign and never
    // outranks a failing check. A Warning with a read on one side is a read that may
    // see the old value: a race that can explain a wrong output.
    let level = if finding.severity == Severity::Error || other_access == Access::Read {
        Level::Error
    } else {
        Level::Warning
    };
    let mut d = ctx.finding_draft(RuleId::SharedMemoryRace, level, index, f);
    d.kernel = race.kernel.clone();
    d.helpers = p.helpers.clone();
    d.confidence = match (finding.severity, p.write.is_some() && p.other.is_some()) {
        (Severity::Error, true) => Confidence::High,
        (Severity::Error, false) | (_, true) => Confidence::Medium,
        _ => Confidence::Low,
    };
    let (hazards, pairs) = (p.side_hazards.unwrap_or(race.hazards), race.sides.len());
    let figures = [
        ("hazards", Some(json!(hazards))),
        ("hazard_type", race.hazard_type.map(|t| json!(t.word()))),
        ("scope", race.warp.then(|| json!("warp"))),
        ("pairs", (pairs > 1).then(|| json!(pairs))),
        ("async_copy", race.async_copy.then_some(json!(true))),
    ];
    d.figures.extend(
        figures
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?))),
    );
    let kind = PairKind::of(&p);
    d.location = kind.place(&p);
    match kind {
        PairKind::Warp { w, o } => word_warp_pair(&mut d, &p, w, o),
        PairKind::WriteAfterRead { w, o } => word_write_after_read(&mut d, &p, w, o),
        PairKind::Barrier { w, o } => word_barrier_pair(&mut d, &p, w, o),
        PairKind::AsyncCopies => word_async_copies(&mut d, &p),
        PairKind::OneSite => word_one_site(&mut d, &p),
    }
    // A warning whose scope racecheck did not say (its analysis report): the threads
    // may be lanes of one warp or warps of a block. The barrier that orders both leads.
    if finding.severity == Severity::Warning && finding.sync_scope.is_none() && !race.async_copy {
        d.fix.append(word_unsaid_scope());
    }
    let site = |l: &Option<SourceLocation>| l.as_ref().map(|l| l.to_string()).unwrap_or_default();
    d.key = format!("{}|{}", site(&p.write), site(&p.other));
    // The copy primitive inside the toolkit's header is a label; the headline is the user's own
    // line on the other side, where there is one.
    let users = |l: &&SourceLocation| is_users_file(&l.file, &ctx.joined.repo_files);
    if race.async_copy
        && d.location.as_ref().is_some_and(|l| !users(&l))
        && let Some(own) = [&p.other, &p.write].into_iter().flatten().find(users)
    {
        d.location = Some(own.clone());
    }
    // Both sides of the hazard, each with what it marks (the one the diagnosis points at
    // becomes its primary span), and where the program's own code brought the write in, when
    // it sits in an inlined helper (a header's copy primitive, a wrapper): the SASS line
    // table's inlining.
    let span = |loc: SourceLocation, mark: Mark| (Span::secondary(loc, word_mark(mark)), mark);
    let accesses = [(&p.write, Access::Write), (&p.other, other_access)];
    let mut spans: Vec<(Span, Mark)> = accesses
        .into_iter()
        .filter_map(|(loc, access)| Some(span(loc.clone()?, Mark::Access(access))))
        .collect();
    let config = f.config.as_deref();
    let calls = p.write.iter().flat_map(|at| ctx.inlined_into(config, at));
    let calls = calls.map(|call| span(call, Mark::InliningCall));
    push_new(&mut spans, calls, |(a, _), (b, _)| a.location == b.location);
    RaceDraft { draft: d, spans }
}

/// A site (`path/file.cu:12`) as the report names it: `file.cu:12`.
fn short_site(site: &str) -> Part {
    path(site.rsplit('/').next().unwrap_or(site))
}

/// Sites (`path/file.cu:12`) as a list in words: "`a.cu:1`, `a.cu:2` and `a.cu:3`".
fn short_sites(sites: impl IntoIterator<Item = impl AsRef<str>>) -> Message {
    Message::words(
        sites
            .into_iter()
            .map(|s| short_site(s.as_ref()).into())
            .collect(),
    )
}

/// Whether the kernel copies into shared memory with cp.async (LDGSTS in its SASS): the kernel
/// the finding names, else any kernel of its config (racecheck may name a device function).
fn has_cp_async(ctx: &Ctx, f: &crate::join::FindingRef) -> bool {
    let j = ctx.joined;
    let config = f.config.as_deref();
    let cp_async = |k: &crate::join::KernelView| k.sass.is_some_and(|s| s.ldgsts > 0);
    match f.kernel.as_ref().and_then(|k| j.kernel(config, k)) {
        Some(k) if k.sass.is_some() => cp_async(k),
        _ => j
            .kernels
            .iter()
            .filter(|k| k.config.as_deref() == config)
            .any(cp_async),
    }
}

/// Whether a write is an asynchronous copy into shared memory, as the function racecheck names
/// there (the toolkit's `cp_async` primitive under `__pipeline_memcpy_async`, a `cp_async`
/// wrapper) or the user's line there says (`cp.async` in inline PTX, `cuda::memcpy_async`).
fn copies_async(ctx: &Ctx, at: Option<&SourceLocation>, function: Option<&str>) -> bool {
    const MARKS: [&str; 3] = ["cp.async", "cp_async", "memcpy_async"];
    let says = |text: &str| MARKS.iter().any(|m| text.contains(m));
    function.is_some_and(says) || at.and_then(|at| ctx.site_line(at)).is_some_and(says)
}

/// The two sides' access kinds: the finding's own access and the other side's, or, where the
/// record does not name both, the pair the parser read from the tool's wording or hazard type.
fn accesses(finding: &parsers::Finding) -> (Option<Access>, Option<Access>) {
    let other = finding.sides.iter().find_map(|s| s.access);
    if finding.access.is_some() && other.is_some() {
        return (finding.access, other);
    }
    match finding.race_accesses {
        Some([first, second]) => (first, second),
        None => (finding.access, other),
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, place, says};

    /// racecheck on `records.cu waw`, both report forms (`compute-sanitizer/racecheck_waw.log`,
    /// `racecheck_waw_hazard.log`): warps 0 and 1 write `slot[t % 32]` with nothing between.
    /// A write-after-write race, named so, at the one line.
    #[test]
    fn names_two_unordered_writes_a_write_after_write_race() {
        for case in [
            fixture_case!(Racecheck, "compute-sanitizer/racecheck_waw.log"),
            fixture_case!(Racecheck, "compute-sanitizer/racecheck_waw_hazard.log"),
        ] {
            let d = case.only(RuleId::SharedMemoryRace);
            assert_eq!(place(&d).as_deref(), Some("records.cu:62"));
            assert_eq!(d.level, Level::Error);
            let title = d.title.to_string();
            assert!(title.starts_with("Write-after-write race"), "{title}");
            says(&d.explanation, "write-after-write hazard");
        }
    }

    /// racecheck on `race.cu` (`compute-sanitizer/racecheck_race.log`): a read at line 12
    /// races with the writes at lines 10 and 14, 512 hazards each, no barrier between them.
    #[test]
    fn fires_on_a_read_that_races_with_writes_to_the_same_shared_memory() {
        let drafts = fixture_case!(Racecheck, "compute-sanitizer/racecheck_race.log")
            .drafts(RuleId::SharedMemoryRace);
        assert!(!drafts.is_empty());
        for d in &drafts {
            assert_eq!(d.rule, RuleId::SharedMemoryRace);
            assert_eq!(d.level, Level::Error);
            assert_eq!(d.kernel.as_deref(), Some("reverse_tile"));
        }
        let places: Vec<Option<String>> = drafts.iter().map(place).collect();
        assert!(
            places.iter().any(|p| p.as_deref() == Some("race.cu:12")),
            "{places:?}"
        );
        let hazards: u64 = drafts
            .iter()
            .filter_map(|d| d.figures.get("hazards").and_then(|h| h.as_u64()))
            .sum();
        assert!(hazards >= 512, "{drafts:?}");
    }

    /// racecheck on `issue12/warp_race.cu fixed` (`compute-sanitizer/racecheck_warp_race_fixed.log`):
    /// the same program with its barrier, 0 hazards.
    #[test]
    fn stays_silent_on_the_program_with_its_barrier_in_place() {
        fixture_case!(Racecheck, "compute-sanitizer/racecheck_warp_race_fixed.log")
            .silent(RuleId::SharedMemoryRace);
    }
}
