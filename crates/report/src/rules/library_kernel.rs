//! `library-kernel`: hazards a sanitizer reported inside a library's kernels (cuDNN's attention
//! kernel the program runs as its SDPA reference, cuBLAS's GEMMs, PyTorch's own kernels). The
//! program model ([`crate::model`]) tells them from the user's kernels, and the join keeps
//! their records out of the findings the other rules read: a library kernel is never a root
//! cause of the user's program. One note per library says what was seen and how to leave it
//! out of the next run.

use std::collections::{BTreeMap, BTreeSet};

use parsers::FindingKind;
use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Level};
use crate::join::FindingRef;
use crate::kernel_id::KernelId;
use crate::model::Library;
use crate::message::{Message, ToMessage, code, msg};
use crate::text::plural;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::LibraryKernel,
    Role::Context,
    "Library kernel",
    "Hazards a sanitizer reported inside a library's kernels (cuDNN, cuBLAS, \
        PyTorch's own): one note per library, never a root cause of the program.",
    "crates/report/src/rules/library_kernel.rs",
    run,
);

/// One note per library whose kernels showed hazards.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut by_library: BTreeMap<Library, Vec<&FindingRef>> = BTreeMap::new();
    for f in &j.library_findings {
        // A read of the program's unwritten buffer is the program's fault
        // (`uninitialized-read` follows the data there), not the library's.
        if super::uninitialized::program_data_read(ctx, f).is_some() {
            continue;
        }
        if let Some(lib) = f.kernel.as_ref().and_then(|k| j.model.library(k)) {
            by_library.entry(lib).or_default().push(f);
        }
    }
    by_library
        .into_iter()
        .map(|(lib, findings)| note(ctx, lib, &findings))
        .collect()
}

/// The note about one library's kernels and the findings in them.
fn note(ctx: &Ctx, lib: Library, findings: &[&FindingRef]) -> Draft {
    let j = ctx.joined;
    let kernels: Vec<&KernelId> = findings
        .iter()
        .filter_map(|f| f.kernel.as_ref())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let seen = Seen {
        lib,
        tools: findings
            .iter()
            .map(|f| match f.finding.kind {
                FindingKind::Race => "racecheck",
                FindingKind::UninitializedRead | FindingKind::UnusedMemory => "initcheck",
                _ => "synccheck",
            })
            .collect(),
        hazards: findings
            .iter()
            .map(|f| {
                f.finding
                    .facts
                    .race_hazards()
                    .unwrap_or(f.finding.count.max(1))
            })
            .fold(0, u64::saturating_add),
        runs: findings
            .iter()
            .map(|f| f.source)
            .collect::<BTreeSet<_>>()
            .len(),
        names: kernels
            .iter()
            .take(3)
            .map(|k| j.model.kernel(k).map_or(k.as_str(), |f| f.name.as_str()))
            .collect(),
        kernels: kernels.len(),
        // Hopper kernels that synchronise shared memory through mbarriers and the tensor memory
        // accelerator: racecheck's model of barriers is `__syncthreads()`-like, so it may
        // report their ordered accesses as hazards.
        async_sync: kernels.iter().any(|k| {
            let lower = k.to_ascii_lowercase();
            lower.contains("wgmma") || lower.contains("tma") || lower.contains("sm90")
        }),
        pattern: exclusion_pattern(&kernels),
    };
    let mut d = Draft::new(RuleId::LibraryKernel, Level::Note, Message::new());
    d.key = lib.name().to_string();
    d.confidence = Confidence::High;
    d.evidence
        .extend(findings.iter().take(2).map(|f| ctx.finding_evidence(f)));
    d.figures.insert("hazards".into(), json!(seen.hazards));
    d.figures.insert("kernels".into(), json!(seen.kernels));
    word_library(&mut d, &seen);
    d
}

/// What the sanitizers saw in one library's kernels: the note's words come from this.
struct Seen<'a> {
    lib: Library,
    /// The sanitizer tools that reported them (`racecheck`, `initcheck`, `synccheck`).
    tools: BTreeSet<&'static str>,
    hazards: u64,
    /// How many sanitizer runs reported them.
    runs: usize,
    /// The first few kernels' whole names.
    names: Vec<&'a str>,
    /// How many kernels in all.
    kernels: usize,
    /// Hopper kernels ordered by mbarriers and TMA, which racecheck does not model.
    async_sync: bool,
    /// What `--kernel-name-exclude kns=` takes to leave them out ([`exclusion_pattern`]).
    pattern: String,
}

/// The note's title, explanation and fix.
fn word_library(d: &mut Draft, s: &Seen) {
    let lib = s.lib.name();
    d.title = msg!(
        "{} in {}'s {}, not the program's code",
        plural(s.hazards, "hazard", "hazards"),
        lib,
        if s.kernels == 1 { "kernel" } else { "kernels" }
    );
    let mut listed = Message::words(s.names.iter().map(|&n| Message::from(code(n))).collect());
    let more = s.kernels.saturating_sub(s.names.len());
    if more > 0 {
        listed.append(msg!(" and {} more", more.to_string()));
    }
    d.explanation = msg!(
        "{} reported {}{} in {}: {}'s code, which the program runs in its own process (as its \
         reference or a building block), not code of this repository. The program's own kernels \
         are judged without them, and they change no verdict.{}",
        Message::words(s.tools.iter().map(|&t| t.to_message()).collect()),
        plural(s.hazards, "hazard", "hazards"),
        if s.runs > 1 {
            msg!(" over {} runs", s.runs.to_string())
        } else {
            Message::new()
        },
        listed,
        lib,
        if s.async_sync {
            " These are Hopper kernels whose shared memory is ordered by mbarriers and \
             asynchronous (TMA) copies, which racecheck does not model as barriers: hazards it \
             reports there are not evidence of a race."
        } else {
            ""
        }
    );
    d.fix = msg!(
        "To check only the program's kernels, leave the library's out of the sanitizer run: {} \
         (compute-sanitizer), or the stage's `args:` in pipeline.yaml; or run the reference \
         outside the sanitized process.",
        // A command for the user to run: the option and its pattern, as code.
        code(["--kernel-name-exclude kns=", &s.pattern].concat())
    );
}

/// The substring that names these kernels for `--kernel-name-exclude kns=`: the prefix they
/// all share, up to a template's `<`, or the first kernel's name where they share too little
/// (a short prefix such as `sm90` would leave out the user's kernels too).
fn exclusion_pattern(kernels: &[&KernelId]) -> String {
    let base = |k: &KernelId| k.split('<').next().unwrap_or(k.as_str()).to_string();
    let Some(first) = kernels.first().map(|k| base(k)) else {
        return String::new();
    };
    let shared = kernels.iter().skip(1).fold(first.clone(), |prefix, k| {
        let other = base(k);
        let len = prefix
            .char_indices()
            .zip(other.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8());
        prefix[..len].to_string()
    });
    if shared.len() >= 8 { shared } else { first }
}

#[cfg(test)]
mod tests {
    use super::exclusion_pattern;
    use crate::kernel_id::KernelId;
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, fixture_case, repo_file};
    use crate::{diagnosis::Level, run::StageKind};

    #[test]
    fn the_exclusion_pattern_is_what_the_librarys_kernels_share() {
        let a = KernelId::of("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7");
        let b = KernelId::of("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3");
        assert_eq!(
            exclusion_pattern(&[&a, &b]),
            "cudnn_generated_fort_native_sdpa_sm90_flash_"
        );
        // Kernels that share only a short prefix: the first one's name, never `sm90`.
        let c = KernelId::of("sm90_xmma_gemm_f16f16_f32_tn");
        let d = KernelId::of("sm90_sgemm_128x64");
        assert_eq!(exclusion_pattern(&[&c, &d]), "sm90_xmma_gemm_f16f16_f32_tn");
    }

    /// racecheck on the program-model example's `correct` config, a PyTorch extension checked
    /// against SDPA (`examples/program-model/reference/artifacts/20261127T061006Z-68e4bf99/racecheck/correct/sm_90/racecheck.log`):
    /// 64 hazards inside cuDNN's flash-attention kernel, none in the extension's own.
    #[test]
    fn fires_on_hazards_inside_cudnns_attention_kernel() {
        let log = repo_file!(
            "examples/program-model/reference/artifacts/20261127T061006Z-68e4bf99/racecheck/correct/sm_90/racecheck.log"
        );
        let case = Case::new().log(StageKind::Racecheck, "correct", "sm_90", log);
        let d = case.only(RuleId::LibraryKernel);
        assert_eq!(d.level, Level::Note);
        assert_eq!(d.key, "cuDNN");
        // A note about the library: no kernel or place of the program's.
        assert_eq!(d.kernel, None);
        assert_eq!(d.location, None);
        assert_eq!(d.figures["hazards"], 64);
        assert_eq!(d.figures["kernels"], 1);
    }

    /// racecheck on `race.cu` (`compute-sanitizer/racecheck_race.log`): a race in the program's
    /// own `reverse_tile`, which is `shared-memory-race`'s.
    #[test]
    fn stays_silent_on_a_race_in_the_programs_own_kernel() {
        fixture_case!(Racecheck, "compute-sanitizer/racecheck_race.log")
            .silent(RuleId::LibraryKernel);
    }
}
