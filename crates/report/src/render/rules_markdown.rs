//! `docs/rules.md`: every rule of [`RULES`] under a heading of its id, so that a SARIF rule's
//! `helpUri` can point at its section.

use crate::rules::{Proposes, RULES, Role, Rule};

/// The rules page, Markdown, from the rule table alone.
pub fn render() -> String {
    let mut out = String::from(
        "# Rules\n\n\
         Every rule Exhibit's report applies, in the order they run. A rule turns evidence into \
         drafts; the fold makes one root cause per fault from them. SARIF names each result's \
         rule by the id below.\n\
         This page is generated from the rule table (`crates/report/src/rules/mod.rs`) and a \
         test keeps it current (`EXHIBIT_BLESS=1` rewrites it).\n",
    );
    for rule in RULES {
        out.push_str(&section(rule));
    }
    out.push_str(WEIGHING);
    out.push_str(RACE_SCOPE);
    out
}

/// One rule's section: its id as the heading, its name, description, role, whether it slows,
/// the experiment it calls for and its source.
pub fn section(rule: &Rule) -> String {
    let mut out = format!(
        "\n## {}\n\n**{}.** {}\n\n",
        rule.id.as_str(),
        rule.name,
        rule.description
    );
    out.push_str(&format!("- What it is: {}.\n", role(rule.role)));
    if rule.slows {
        out.push_str("- Its warnings are measured performance causes: they make a run Slow.\n");
    }
    if let Some(experiment) = experiment(rule.proposes) {
        out.push_str(&format!("- The experiment it calls for: {experiment}.\n"));
    }
    out.push_str(&format!("- Source: `{}`.\n", rule.module));
    out
}

/// What racecheck's severity says of a race's scope, as measured.
const RACE_SCOPE: &str = "
## What racecheck's severity says

racecheck's severity is not the racing threads' scope, so `shared-memory-race` takes a race's \
scope (and its fix: `__syncwarp()` between lanes of one warp, `__syncthreads()` between \
warps) from what the record says. Measured on an H200 with compute-sanitizer 2025.3.1 \
(`crates/parsers/fixtures/programs/records.cu`, the fixtures `racecheck_lanes_32.log` and \
`racecheck_lanes_128.log`): one kernel's reduction with no barrier between its steps races \
within warp 0 at blocks of 32 and 64 threads and is reported as a Warning (60 and 124 \
hazards), and across warps at 128 threads as an Error (252 hazards). But a value one warp \
wrote and the other read with no barrier, in a block of 64 threads, was reported as a \
Warning too (`examples/program-model`, `block_reduce_race`, on an H100). An Error is a race \
between warps; a Warning with no \"Warp Level Programming\" category says no scope, and the \
fix names the barrier that orders both.
";

/// How performance causes are costed, ranked and set against the baseline's profile.
const WEIGHING: &str = "
## How performance causes are weighed

**What a cause costs.** Each performance cause carries its cost as an estimated speedup, in \
percent of its kernel's time, and the gain to the program (that times the kernel's share of the \
profiled GPU time); causes rank by it, a measured cause before a suggestion no run tested. \
The cost is what the profile measured: Nsight Compute's own estimate where its rule names the \
cause; the share of the kernel's warp-stall samples on the lines that hold the cause (excess \
global sectors, excess shared wavefronts, atomics); for local memory, the share of its threads' \
memory traffic that is the stack frame's; for a figure of the whole launch (tensor cores, waves, \
warps), the part of the kernel's time that the baseline's launch does without; for a block \
whose warps wait at its barrier on a few threads' work (`bottleneck`, idle warps: at least half \
its warp-stall samples at barriers, with the SMs under 60% of their issue rate), the barriers' \
share of the samples. A suggestion no run tested (an occupancy change with no experiment) never \
ranks first, and says so.

**Beside the baseline** (`crates/report/src/contrast.rs`). When the program and its baseline \
are both profiled, the program's longest kernel is set beside the baseline's longest on the \
figures that explain time: sectors per global load and store request, shared-memory \
wavefronts over the ideal, tensor-core instructions, waves of blocks per SM, warps active per \
SM, global atomics and local-memory bytes per thread launched, floating-point operations per \
byte loaded, achieved occupancy, DRAM and L2 throughput, and the warp instructions each launch \
executed. The report tables them all, figure by figure, with how far apart each pair is (the \
throughputs, occupancy, reuse and instructions describe the two launches and name no cause of \
their own). Only a kernel slower than the baseline's is weighed. A cause whose figure the \
baseline shares (the program's within 1.5 times the baseline's) becomes a note that says so: \
it is not why the program is slower. A cause whose figure is far worse (twice for sectors and \
wavefronts, four times for the others, or none where the baseline has some) says both figures; \
a figure that far worse that no rule named becomes a `slow-kernel` cause of its own, at the \
user's line that holds it (a toolkit header's line is placed at the user's call it was \
inlined into), costed as above; one that costs under 10% of its kernel's time is a note. \
Atomics issued one thread at a time, 32 or more per block, are read as a spin-wait on another \
block: its cost counts the block's warps waiting at the barrier for it.
";

fn role(role: Role) -> &'static str {
    match role {
        Role::SitedFault { unplaced: true, .. } => {
            "a fault, a root cause of its own even where the evidence names no place"
        }
        Role::SitedFault { .. } => "a fault a tool located: a root cause of its own",
        Role::FailingTest => {
            "a failing test: a root cause unless a tool located a fault in its config, whose \
             symptom it then is"
        }
        Role::Symptom { .. } => "a symptom, attached to the fault that explains it",
        Role::Performance => "a performance cause, beside the faults",
        Role::Context => "a fact that qualifies the other diagnoses, shown as a note",
        Role::CatchAll => {
            "what a tool reported that no other rule explains, alone only where no fault of its \
             config stands"
        }
        Role::Comparison => "a comparison of two runs (`exhibit diff`)",
    }
}

fn experiment(proposes: Proposes) -> Option<&'static str> {
    match proposes {
        Proposes::Hypothesis => None,
        Proposes::Tail => Some("the failing config again at sizes around the tile"),
        Proposes::Race => Some("identical runs of the racing config, their outputs compared"),
        Proposes::Sizes => Some(
            "the failing check again at halves of its size (with a `size` knob), for the \
             smallest size that fails",
        ),
    }
}
