//! `uninitialized-read`: initcheck's read of global memory that nothing wrote.

use parsers::FindingKind;

use super::{Ctx, at_location};
use crate::diagnosis::Draft;
use crate::text::plural;

/// One draft per distinct uninitialised-read site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.joined.findings.iter().enumerate() {
        let finding = f.finding;
        if finding.kind != FindingKind::UninitializedRead || ctx.explained(index) {
            continue;
        }
        let mut d = ctx.site_draft(
            "uninitialized-read",
            "Read of uninitialised global memory",
            index,
            f,
        );
        let at = at_location(d.location.as_ref());
        let size = finding
            .size
            .map(|s| format!(" of {s} bytes"))
            .unwrap_or_default();
        d.explanation = format!(
            "initcheck caught {} of global memory{size}{at} that no kernel or copy had written \
             since it was allocated: the value read is whatever the allocator left there, so the \
             result depends on the previous user of that memory.",
            plural(finding.count, "read", "reads")
        );
        d.fix = "Initialise before reading: keep accumulators in registers or shared memory and \
                 zero them in the kernel instead of reading them back from an output buffer, or \
                 write (memset) the buffer before the launch."
            .to_string();
        out.push(d);
    }
    out
}
