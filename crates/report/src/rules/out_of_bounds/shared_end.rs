//! A shared-memory access just past the kernel's shared memory: memcheck's record gives the
//! address in the block's shared window, ptxas the bytes the kernel declares, and the record's
//! thread the index. An address equal to that size is the element one past the end: an index
//! equal to the array's length, an off-by-one in the guard that bounds it.

use parsers::MemorySpace;
use serde_json::json;

use super::Words;
use crate::diagnosis::Draft;
use crate::join::FindingRef;
use crate::kernel_id::KernelId;
use crate::message::{Message, code, figure, msg};
use crate::rules::Ctx;

/// From sm_80 on, the first 1 KiB of a block's shared window is reserved for the system: the
/// kernel's own arrays start at this address (memcheck's and racecheck's shared addresses on an
/// H200 start there: `Access to 0x480` for byte 128).
const RESERVED_FROM_SM80: u64 = 1024;

/// Words an out-of-bounds shared access at exactly the end of the kernel's static shared
/// memory; returns whether it did (else the caller words it as outside any allocation).
pub(super) fn one_past_end(
    ctx: &Ctx,
    f: &FindingRef,
    d: &mut Draft,
    w: &Words,
    array: Option<&str>,
) -> Option<()> {
    let finding = f.finding;
    let address = (finding.space == Some(MemorySpace::Shared))
        .then_some(finding.facts.memory.as_deref()?.shared_address?)?;
    let (config, id) = (f.config.as_deref(), KernelId::of(d.kernel.as_deref()?));
    let kernel = ctx.joined.kernel(config, &id)?;
    // The compute capability (`90`) of the kernel's build, else of the run's GPU.
    let arch = crate::roofline::arch_of(ctx.joined, config, &id)?;
    let cc: u32 = (arch.trim_start_matches("sm_").trim_end_matches(['a', 'f']))
        .parse()
        .ok()?;
    let base = if cc >= 80 { RESERVED_FROM_SM80 } else { 0 };
    let declared = kernel.resources?.shared_bytes?;
    let offset = address.checked_sub(base)?;
    let size = finding.size.map(u64::from).filter(|s| *s > 0)?;
    if offset != declared || offset % size != 0 {
        return None;
    }
    let index = offset / size;
    d.figures.insert("shared_offset".into(), json!(offset));
    d.figures.insert("shared_declared".into(), json!(declared));
    d.figures.insert("index".into(), json!(index));
    // One thread, in a block's first row of threads: its index is the element's.
    let thread = match finding.threads.as_slice() {
        [t] if finding.count == 1 && t.thread[1] == 0 && t.thread[2] == 0 => Some(t.thread[0]),
        _ => None,
    };
    let element = match array {
        Some(a) => msg!("{}", code(format!("{a}[{index}]"))),
        None => msg!("element {}", index.to_string()),
    };
    let who = thread.map_or(msg!("a thread"), |t| msg!("thread {}", t.to_string()));
    d.title = msg!(
        "Off-by-one: {} {}s {}, one past the end of the kernel's {} bytes of shared memory",
        who.clone(),
        w.access_word,
        element.clone(),
        declared.to_string()
    );
    let by_thread = match thread {
        Some(t) if u64::from(t) == index => msg!(
            " The index is the thread's own: thread {} is the first thread past the array, \
             and the only one with a record, so the guard that stops the threads past the end \
             lets exactly one through.",
            index.to_string()
        ),
        _ => Message::new(),
    };
    // The space is shared (checked above), so the access reads "of a shared read".
    d.explanation = msg!(
        "{} at byte {} of the block's shared memory (its window's first {} bytes are reserved \
         on sm_{}), and ptxas gives the kernel {} bytes of static shared memory: the access is \
         the first element past the end. With {}-byte elements that is index {} of an array of \
         {}: an index equal to the array's length, the last array's if the kernel declares \
         several.{}{}",
        w.caught(),
        figure(offset.to_string()),
        base.to_string(),
        cc.to_string(),
        declared.to_string(),
        size.to_string(),
        figure(index.to_string()),
        (declared / size).to_string(),
        by_thread,
        &w.the_line
    );
    let guard = |text: String| code(text.replace('N', &index.to_string()));
    d.fix = msg!(
        "The bound on this index is one too large: the guard before {} lets index {} through \
         ({} where {} was meant, or {} for {}). Compare the index with the array's length \
         using `>=` to leave and `<` to enter.",
        element,
        index.to_string(),
        guard("if (t > N) return;".into()),
        guard("t >= N".into()),
        guard("t <= N".into()),
        guard("t < N".into())
    );
    Some(())
}
