//! `out-of-bounds`: memcheck's invalid global or shared access (and local, when no tensor-core
//! fragment explains it). The "N bytes after the nearest allocation of size M" relation becomes
//! an off-by-one or tail hint when N is within one row of the end.

mod past_end;
mod spread;

use parsers::{Access, FindingKind, MemorySpace};
use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, GiveWay, Level};
use crate::message::{Message, code, figure, msg, quote};
use crate::text::bytes;
use past_end::past_end;

mod shared_end;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::OutOfBounds,
    Role::sited(4),
    "Out-of-bounds access",
    "memcheck's invalid global/shared/local access; a few bytes past the end of an \
        allocation points at an off-by-one or a missing tail guard.",
    "crates/report/src/rules/out_of_bounds.rs",
    run,
)
.proposing(Proposes::Tail);

/// One draft per distinct invalid-access site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.unexplained(FindingKind::InvalidAccess) {
        let finding = f.finding;
        let space = finding.space.unwrap_or(MemorySpace::Global);
        let space_word = match space {
            MemorySpace::Global => "global",
            MemorySpace::Shared => "shared",
            MemorySpace::Local => "local",
            MemorySpace::Generic => "generic",
            MemorySpace::RemoteShared => "distributed shared",
        };
        let access_word = super::access_word(finding.access);
        let size = finding.size.map(u64::from);
        let mut d = ctx.finding_draft(RuleId::OutOfBounds, Level::Error, index, f);
        (d.kernel, d.helpers) = ctx.kernel_site(f);
        d.location = ctx.place(f);
        d.key = format!("{space_word}|{access_word}");
        // The host-side launch error in the same log is this fault's consequence.
        d.explains
            .extend(ctx.in_log(f.source, |k| k == FindingKind::HostApiError));
        let mut signals = 1;

        let memory = finding.facts.memory.as_deref();
        let after = memory.and_then(|m| m.bytes_after);
        let before = memory.and_then(|m| m.bytes_before);
        let alloc = memory.and_then(|m| m.allocation_size);

        // Gigabytes away from the nearest allocation is no index a step too far: the pointer
        // itself is wrong (null plus an offset, an uninitialised or stale pointer).
        const WILD: u64 = 1 << 30;
        let distance = after.or(before).unwrap_or(0);
        let wrapped = before.zip(alloc).and_then(|(n, m)| wrapped_index(n, m));
        // The line itself, as the user wrote it: which array it indexes.
        let line = d.location.as_ref().and_then(|l| ctx.site_line(l));
        let array = line.and_then(|l| {
            crate::source_line::indexed_array(l, finding.access == Some(Access::Write))
        });
        let w = Words {
            space_word,
            access_word,
            records: crate::text::plural(finding.count, "record", "records"),
            size_text: size
                .map(|s| msg!(" of {} bytes", s.to_string()))
                .unwrap_or_default(),
            at: super::at_location(d.location.as_ref()),
            of_array: array
                .as_deref()
                .map(|a| msg!(" {}", code(a)))
                .unwrap_or_default(),
            the_line: line
                .map(|l| msg!(" The line: {}.", code(l)))
                .unwrap_or_default(),
            // A Triton kernel carries its Python source line in the device frame. (The tool's
            // own file: a `load_inline` source mapped back to its Python file is CUDA.)
            triton: finding.file.as_deref().is_some_and(|f| f.ends_with(".py")),
            builtin: f
                .kernel
                .as_ref()
                .is_some_and(|k| ctx.joined.targets.contains(k)),
            size,
        };
        d.title = w.title();
        match (after, before, alloc) {
            (_, Some(n), Some(m)) if let Some(element) = wrapped => {
                signals += 2;
                index_overflow(&mut d, &w, n, m, element);
            }
            _ if distance >= WILD => wild_pointer(&mut d, &w, distance),
            (Some(n), _, Some(m)) => {
                let shape = super::stage_shape(ctx, f.source);
                signals += past_end(&mut d, &w, finding, line, (n, m), shape.as_ref());
            }
            (_, Some(n), alloc) => before_start(&mut d, &w, n, alloc),
            _ if shared_end::one_past_end(ctx, f, &mut d, &w, array.as_deref()).is_some() => {
                signals += 1;
            }
            _ if space == MemorySpace::RemoteShared => {
                other_block(&mut d, &w, memory.and_then(|m| m.cta_rank));
            }
            _ => outside_allocation(&mut d, &w, space, &array),
        }

        // The program's own runs clean at every count, memcheck clean up to some launch count
        // and wrong from the next: the index moves with each launch.
        if let Some((clean, fail)) = memcheck_threshold(ctx, f.config.as_deref()) {
            signals += 1;
            survives_launches(&mut d, &w, clean, fail, alloc);
        }

        // A corrupted canary in the same config corroborates an out-of-bounds write, as
        // evidence only: it adds no signal.
        if finding.access == Some(Access::Write)
            && let Some(r) = (ctx.joined.results.iter())
                .find(|r| r.config == f.config && !check_canaries(r).is_empty())
        {
            let corrupted = quote(check_canaries(r).join(", "));
            let summary = msg!("harness canaries overwritten: {}", corrupted);
            d.evidence.push(ctx.result_evidence(r, summary));
        }
        // A place the tool named itself is one more signal.
        let placed = finding.file.is_some() || !finding.related.is_empty();
        d.confidence = Confidence::from_signals(signals + usize::from(placed));
        out.push(d);
    }
    out.extend(canaries(ctx, &out));
    out
}

/// What every wording of one finding says: the access, its records, where and on which line.
struct Words {
    space_word: &'static str,
    access_word: &'static str,
    records: String,
    size_text: Message,
    at: Message,
    of_array: Message,
    the_line: Message,
    triton: bool,
    builtin: bool,
    size: Option<u64>,
}

impl Words {
    /// The title every wording starts from: "Out-of-bounds global read".
    fn title(&self) -> Message {
        msg!("Out-of-bounds {} {}", self.space_word, self.access_word)
    }

    /// The access as the explanations state it: "20 records of a global read of 4 bytes at
    /// a.cu:12".
    fn access(&self) -> Message {
        msg!(
            "{} of a {} {}{}{}",
            &self.records,
            self.space_word,
            self.access_word,
            &self.size_text,
            &self.at
        )
    }

    /// The sentence most explanations open with: "memcheck caught " and the access.
    fn caught(&self) -> Message {
        msg!("memcheck caught {}", self.access())
    }

    /// What the grid is made of, one and many: blocks, or a Triton kernel's programs.
    fn units(&self) -> (&'static str, &'static str) {
        if self.triton {
            ("program", "programs")
        } else {
            ("block", "blocks")
        }
    }
}

/// A 32-bit index that wrapped: `n` bytes before the start of an `m`-byte buffer of
/// `element`-byte elements ([`wrapped_index`]).
fn index_overflow(d: &mut Draft, w: &Words, n: u64, m: u64, element: u64) {
    d.figures.insert("bytes_before".into(), json!(n));
    d.figures.insert("allocation_size".into(), json!(m));
    d.figures.insert("element_bytes".into(), json!(element));
    d.figures.insert("elements".into(), json!(m / element));
    let element_text = element.to_string();
    d.title = msg!(
        "32-bit index overflow: a {} {} {} before the start of a buffer of {} {}-byte elements",
        w.space_word,
        w.access_word,
        bytes(n),
        crate::text::thousands(m / element),
        &element_text
    );
    d.explanation = msg!(
        "{}, {} before the start of a {}-byte buffer. With {}-byte elements the buffer holds {} \
         of them, more than a 32-bit signed index reaches (2,147,483,647), and the address \
         lies within 2^31 elements before its start: where an element offset computed in 32 \
         bits lands once it passes 2^31 and wraps negative. Not a wild pointer: the base is \
         right, the offset arithmetic is too narrow.",
        w.caught(),
        bytes(n),
        crate::text::thousands(m),
        &element_text,
        crate::text::thousands(m / element)
    );
    d.fix = if w.triton {
        msg!(
            "Compute the offset in 64 bits: cast the program id before it multiplies a stride \
             (`tl.program_id(0).to(tl.int64)`), or the offsets tensor (`offs.to(tl.int64)`); \
             Triton's program ids and the integer arguments it is given are 32-bit."
        )
    } else {
        msg!(
            "Compute the offset in 64 bits: widen the index before it multiplies a stride \
             (`(int64_t)blockIdx.x * stride`, `size_t` loop indices), not an `int` product of \
             a row and a row length."
        )
    };
}

/// An address gigabytes from the nearest allocation: the pointer itself is wrong.
fn wild_pointer(d: &mut Draft, w: &Words, distance: u64) {
    d.figures.insert("distance_bytes".into(), json!(distance));
    d.title = msg!("{} through a wild or null pointer", w.title());
    d.explanation = msg!(
        "{} to an address {} from the nearest allocation: no index a step too far does that. \
         The pointer itself is wrong: null plus an offset, never initialised, read from the \
         wrong slot of a table, or freed.",
        w.caught(),
        bytes(distance)
    );
    d.fix = msg!(
        "Trace the pointer used at the named line back to where it is set (a table of \
         pointers, a struct field, an argument) and check it is set before every launch that \
         reads it."
    );
}

/// An access `n` bytes before the start of a buffer: a negative index.
fn before_start(d: &mut Draft, w: &Words, n: u64, alloc: Option<u64>) {
    d.figures.insert("bytes_before".into(), json!(n));
    d.title = msg!(
        "{} before the start of a buffer (negative index)",
        w.title()
    );
    d.explanation = msg!(
        "{}, {} bytes before the start of {}: a negative index or an unsigned wrap-around.",
        w.caught(),
        n.to_string(),
        alloc
            .map(|m| msg!("a {}-byte buffer", m.to_string()))
            .unwrap_or_else(|| msg!("a buffer"))
    );
    d.fix = msg!(
        "Clamp or guard the index at the named line (row or column -1, or an unsigned \
         difference that wrapped)."
    );
}

/// An access to another block's shared memory in the cluster (distributed shared memory) out
/// of bounds: a rank past the cluster, or an offset past that block's shared memory.
fn other_block(d: &mut Draft, w: &Words, rank: Option<u32>) {
    let block = rank
        .map(|r| msg!("block {} of the cluster", figure(r.to_string())))
        .unwrap_or_else(|| msg!("another block of the cluster"));
    d.title = msg!(
        "Out-of-bounds {} of the shared memory of {}",
        w.access_word,
        block.clone()
    );
    d.figures
        .extend(rank.map(|r| ("cta_rank".into(), json!(r))));
    d.explanation = msg!(
        "memcheck caught {} of a distributed shared-memory {}{}{}, to {}, out of bounds: the \
         rank names a block the cluster does not have, or the offset runs past that block's \
         shared memory.",
        &w.records,
        w.access_word,
        &w.size_text,
        &w.at,
        block
    );
    d.fix = msg!(
        "Check the rank passed to `cluster.map_shared_rank` (or `mapa`) against \
         `cluster.num_blocks()`: ranks run from 0 to the cluster's size less one. Check the \
         offset against the size of the shared array in the block it names."
    );
}

/// An access outside any allocation memcheck could name.
fn outside_allocation(d: &mut Draft, w: &Words, space: MemorySpace, array: &Option<String>) {
    d.explanation = msg!("{} outside any allocation.{}", w.caught(), &w.the_line);
    d.fix = match (space, &array) {
        (MemorySpace::Local, Some(array)) => {
            d.title = msg!("{} of {}", w.title(), code(array));
            d.figures.insert("array".into(), json!(array));
            msg!(
                "Check the index of the thread-local array {} against its declared size: an \
                 index that counts rows of the whole block or tile, where the array holds only \
                 this thread's or warp's share, runs past its end.",
                code(array)
            )
        }
        (MemorySpace::Shared, _) => msg!(
            "Check the shared-memory index against the size the kernel declares (static) or \
             the launch provides (dynamic shared memory)."
        ),
        (MemorySpace::Local, None) => {
            msg!("Check indices into thread-local arrays against their declared size.")
        }
        _ => msg!(
            "Check the index arithmetic at the named line against the buffer's size and \
             strides."
        ),
    };
}

/// Memcheck clean up to `clean` launches and failing from `fail` on while the program's own
/// runs pass: state kept between launches moves the access.
fn survives_launches(d: &mut Draft, w: &Words, clean: u64, fail: u64, alloc: Option<u64>) {
    d.figures.insert("memcheck_clean_at".into(), json!(clean));
    d.figures.insert("memcheck_fails_at".into(), json!(fail));
    let buffer = alloc
        .map(|m| msg!(" of a {}-byte buffer", m.to_string()))
        .unwrap_or_default();
    d.title = msg!(
        "State that survives launches: from launch {} on, a {} {} past the end{}",
        fail.to_string(),
        w.space_word,
        w.access_word,
        buffer
    );
    let fill = match (w.size, alloc) {
        (Some(s), Some(m)) if s > 0 && m % s == 0 && m / s == clean => msg!(
            " {} launches of one {}-byte {} each fill the {}-byte buffer exactly; the next one \
             lands past its end.",
            clean.to_string(),
            s.to_string(),
            w.access_word,
            m.to_string()
        ),
        _ => Message::new(),
    };
    d.explanation = msg!(
        "The program's own runs pass at every launch count, but memcheck is clean at {} \
         launch{} and finds {} from launch {} on. A single launch is right: something kept \
         between launches (a `__device__` counter, a static index, a buffer never reset) moves \
         the access one step further each launch.{} Outside the sanitizer the write lands in \
         memory nothing checks, so the corruption is silent.",
        clean.to_string(),
        if clean == 1 { "" } else { "es" },
        w.access(),
        fail.to_string(),
        fill
    );
    d.fix = msg!(
        "Reset the state before each launch (`cudaMemset`, `cudaMemcpyToSymbol` of the \
         counter, or a reset kernel), or bound the index by the buffer's size (`slot % \
         capacity`, or refuse past the end); re-run the stress stage: memcheck should stay \
         clean at every count."
    );
}

/// The guard regions a result's check found overwritten (none without a check).
fn check_canaries<'r>(r: &crate::join::ResultRef<'r>) -> &'r [String] {
    r.result
        .check
        .as_ref()
        .map_or(&[], |c| c.canaries_corrupted.as_slice())
}

/// The launch counts where memcheck turned from clean to errors in a stress search of this
/// config whose program itself stayed clean.
fn memcheck_threshold(ctx: &Ctx, config: Option<&str>) -> Option<(u64, u64)> {
    ctx.joined.stages_in(config).find_map(|stage| {
        let m = stage.launch_search.as_ref()?.memcheck.as_ref()?;
        Some((m.clean_at?, m.fails_at.filter(|&n| n > 1)?))
    })
}

/// Guard regions overwritten on a single launch with no memcheck finding to name the site: an
/// out-of-bounds write the sanitizer did not run on (or missed).
fn canaries(ctx: &Ctx, drafted: &[Draft]) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    for r in &ctx.joined.results {
        // Those a single check found, else those of a stress run's first launch.
        let stress = (r.result.stress.as_ref())
            .filter(|s| s.first_failure == Some(1) && s.failure_kind.as_deref() == Some("canary"));
        let corrupted = match check_canaries(r) {
            [] => stress.map_or(&[][..], |s| s.canaries_corrupted.as_slice()),
            single => single,
        };
        let kernel = &r.kernel;
        let known =
            |d: &Draft| d.config == r.config && d.kernel.as_deref().is_none_or(|k| *kernel == k);
        if corrupted.is_empty() || drafted.iter().chain(&out).any(known) {
            continue;
        }
        let mut d = ctx.result_draft(RuleId::OutOfBounds, r);
        d.gives_way.push(GiveWay::Error(Some(kernel.clone())));
        d.key = "canary".into();
        d.confidence = Confidence::Medium;
        let summary = word_canaries(&mut d, super::mode_name(r.result.mode), corrupted);
        d.evidence.push(ctx.result_evidence(r, summary));
        out.push(d);
    }
    out
}

/// Words the draft of guard regions a `mode` launch overwrote (`corrupted`, the harness's
/// names), and returns the evidence's summary.
fn word_canaries(d: &mut Draft, mode: &str, corrupted: &[String]) -> Message {
    let names = corrupted.join(", ");
    let summary = msg!(
        "{} launch overwrote guard regions: {}",
        mode,
        quote(names.as_str())
    );
    d.title = msg!("Out-of-bounds write caught by the harness's guard regions");
    d.explanation = msg!(
        "The harness surrounds every buffer with guard regions and found {} overwritten after \
         a single launch: the kernel writes past (or before) a buffer without faulting. No \
         memcheck finding names the site for this config.",
        quote(names)
    );
    d.fix = msg!(
        "Run memcheck on this config to get the file:line of the write, then guard the store \
         with the buffer's real bound (rows >= seq_len in the last tile)."
    );
    summary
}

/// The element size under which a 32-bit signed index into a buffer of `allocation` bytes lands
/// `before` bytes before its start: the buffer holds more than 2^31 such elements (so its
/// indices overflow 32 bits) and a wrapped index lands at most 2^31 elements before the start.
/// The smallest such size is taken. Distances under 1 MiB are left to the negative-index
/// reading (an index of -1, a halo).
fn wrapped_index(before: u64, allocation: u64) -> Option<u64> {
    const SIGNED_RANGE: u64 = 1 << 31;
    if before < 1 << 20 {
        return None;
    }
    [1, 2, 4, 8]
        .into_iter()
        .find(|element| allocation / element > SIGNED_RANGE && before <= SIGNED_RANGE * element)
}

/// Where an access `past` bytes past the end of a buffer lands: "the first byte past the end"
/// (0), or "12 B past the end".
fn past_the_end(past: u64) -> Message {
    if past == 0 {
        msg!("the first byte past the end")
    } else {
        msg!("{} past the end", bytes(past))
    }
}

/// The fix for an out-of-bounds access in a Triton kernel: its loads and stores need a mask.
fn triton_fix(location: Option<&crate::diagnosis::SourceLocation>) -> Message {
    msg!(
        "This is a Triton kernel: give the `tl.load` / `tl.store`{} a `mask=` that excludes \
         offsets past the tensor (`mask=offsets < n_elements`, with `other=` for masked loads), \
         so the last program's block stops at the end.",
        location
            .and_then(|l| l.line)
            .map(|l| msg!(" at line {}", l.to_string()))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::wrapped_index;
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, place, says};

    #[test]
    fn a_wrapped_32_bit_index_needs_a_buffer_past_2_31_elements_and_a_distance_within_them() {
        // Liger-Kernel's RMSNorm before its int64 fix (corpus `liger-rmsnorm-int32`): bf16.
        assert_eq!(wrapped_index(4_291_583_488, 4_915_200_000), Some(2));
        // The same distance before a buffer of fewer than 2^31 elements of any size: a wild
        // pointer, not an overflow.
        assert_eq!(wrapped_index(4_291_583_488, 2_000_000_000), None);
        // An index of -1 or a halo: a negative index, whatever the buffer's size.
        assert_eq!(wrapped_index(4, 4_915_200_000), None);
        // Farther back than 2^31 elements of the largest size that still overflows: no.
        assert_eq!(wrapped_index(3 << 31, 3 << 30), None);
        // Bytes: a 3 GiB byte buffer, 1.5 GiB before its start.
        assert_eq!(wrapped_index(3 << 29, 3 << 30), Some(1));
    }

    /// memcheck on `oob.cu` (`compute-sanitizer/memcheck_oob_write.log`): 4-byte writes from
    /// 1 byte past the end of a 4,000-byte buffer, in `store_one` (line 17) inlined into
    /// `write_past_end`.
    #[test]
    fn fires_on_a_write_past_the_end_of_a_global_buffer() {
        let d = fixture_case!(Memcheck, "compute-sanitizer/memcheck_oob_write.log")
            .only(RuleId::OutOfBounds);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.key, "global|write");
        assert_eq!(d.kernel.as_deref(), Some("write_past_end"));
        assert_eq!(place(&d).as_deref(), Some("oob.cu:17"));
        assert_eq!(d.figures["bytes_after"], 1);
        assert_eq!(d.figures["allocation_size"], 4000);
    }

    /// memcheck on `records.cu offbyone` (`compute-sanitizer/memcheck_shared_off_by_one.log`)
    /// with its build (`ptxas/device_records.log`): thread 32 reads `buf[32]` of a 32-float
    /// shared array, past a guard written `t > 32`. The address (byte 128 after the reserved
    /// 1 KiB) equals the kernel's 128 bytes of shared memory: an index equal to the length.
    #[test]
    fn reads_an_index_equal_to_a_shared_arrays_length_as_an_off_by_one_guard() {
        let d = fixture_case!(
            Compile, "ptxas/device_records.log";
            Memcheck, "compute-sanitizer/memcheck_shared_off_by_one.log"
        )
        .only(RuleId::OutOfBounds);
        assert_eq!(d.key, "shared|read");
        assert_eq!(place(&d).as_deref(), Some("records.cu:46"));
        assert_eq!(d.figures["index"], 32);
        assert_eq!(d.figures["shared_declared"], 128);
        let title = d.title.to_string();
        assert!(title.starts_with("Off-by-one: thread 32 reads"), "{title}");
        says(&d.fix, "t >= 32");
        // Without the build, the kernel's shared memory is unknown: no off-by-one is claimed.
        let alone = fixture_case!(Memcheck, "compute-sanitizer/memcheck_shared_off_by_one.log")
            .only(RuleId::OutOfBounds);
        assert!(!alone.figures.contains_key("index"));
        assert!(!alone.title.to_string().contains("Off-by-one"));
    }

    /// memcheck on `misaligned.cu global` (`compute-sanitizer/memcheck_misaligned_global.log`):
    /// invalid reads inside their allocation, misaligned: another rule's finding.
    #[test]
    fn stays_silent_on_a_misaligned_read_inside_its_buffer() {
        fixture_case!(Memcheck, "compute-sanitizer/memcheck_misaligned_global.log")
            .silent(RuleId::OutOfBounds);
    }
}
