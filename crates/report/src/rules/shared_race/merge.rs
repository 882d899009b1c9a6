//! Merging race drafts: the records of one missing barrier (one write site, several other
//! sites) into one draft, and writes on neighbouring lines with no racing access between them
//! into one more. Which span is the write, or a read, is read from its [`Mark`], never from its
//! label; the words of a merged draft come from [`word_block`], [`word_one_barrier`] and
//! [`word_async_sites`].

use parsers::Access;
use serde_json::json;

use crate::diagnosis::{Draft, SourceLocation};
use crate::message::{Message, Part, code, msg};
use crate::text::{is_users_file, plural};

use super::words::{async_fix, async_mechanism, word_kernel_of};
use super::{Mark, RaceDraft, push_new, short_site, short_sites};

/// Takes `d`'s records into `first`, which speaks for both: their hazards (the total, which it
/// returns), evidence, findings and inlined helpers. `d` keeps its place and spans.
fn take_records(first: &mut Draft, d: &mut Draft) -> u64 {
    let hazards = |x: &Draft| {
        x.figures
            .get("hazards")
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    };
    let total = hazards(first) + hazards(d);
    first.figures.insert("hazards".into(), json!(total));
    let evidence = std::mem::take(&mut d.evidence);
    push_new(&mut first.evidence, evidence, |a, b| a.excerpt == b.excerpt);
    first.explains.append(&mut d.explains);
    push_new(&mut first.helpers, std::mem::take(&mut d.helpers), PartialEq::eq);
    total
}

/// A place in a race: its file and line.
type Site = (String, u32);

/// A block of neighbouring writes and the sites racing with them.
type Block = (Vec<Site>, Vec<Site>);

/// A place named in a draft's key or sites, `file:line`, as a file and a line.
fn file_line(site: &str) -> Option<(&str, u32)> {
    let (file, line) = site.rsplit_once(':')?;
    Some((file, line.parse().ok()?))
}

/// The other sites a merged draft names (its `other_sites` figure), or `None` before it merged.
fn other_sites(d: &Draft) -> Option<Vec<String>> {
    let list = d.figures.get("other_sites")?.as_array()?;
    Some(
        list.iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
    )
}

/// A barrier race draft's write site and the sites racing with it.
fn write_and_sites(d: &Draft) -> Option<(Site, Vec<Site>)> {
    let mut parts = d.key.split('|');
    let (file, line) = file_line(parts.next()?)?;
    let listed: Vec<String> = other_sites(d)
        .unwrap_or_else(|| parts.next().map(str::to_string).into_iter().collect());
    let sites = listed
        .iter()
        .filter_map(|s| file_line(s).map(|(f, l)| (f.to_string(), l)))
        .collect();
    Some(((file.to_string(), line), sites))
}

/// Whether two race drafts are of one config, kernel and scope (a warp's or a block's), and so
/// may merge.
fn same_kernel(a: &Draft, b: &Draft) -> bool {
    a.config == b.config && a.kernel == b.kernel && a.figures.get("scope") == b.figures.get("scope")
}

/// Writes on neighbouring lines of one file (at most this many lines apart) are one block of
/// statements.
const NEIGHBOURING: u32 = 2;

/// Drafts of one kernel and config whose writes are neighbouring statements with no racing
/// access between them (`s_U[i] = ...; s_V[i] = ...; s_W[i] = ...;`, each racing with its own
/// reads) are one fault: the barriers that order the block's first and last write order every
/// one of them. One draft names every write and site, and where the barriers go.
pub(super) fn merge_adjacent_writes(drafts: Vec<RaceDraft>) -> Vec<RaceDraft> {
    // Per draft kept: its writes and the sites racing with them (none for an asynchronous
    // copy), and whether others merged into it.
    let mut out: Vec<(RaceDraft, Option<Block>, bool)> = Vec::new();
    for mut d in drafts {
        let block = (!d.draft.figures.contains_key("async_copy"))
            .then(|| write_and_sites(&d.draft))
            .flatten();
        let joins = block.as_ref().and_then(|(write, sites)| {
            out.iter().position(|(o, block, _)| {
                let (o, d) = (&o.draft, &d.draft);
                let Some((writes, others)) = block else {
                    return false;
                };
                let near = writes
                    .iter()
                    .any(|(f, l)| *f == write.0 && l.abs_diff(write.1) <= NEIGHBOURING);
                let lines = writes.iter().map(|w| w.1).chain([write.1]);
                let (lo, hi) = (lines.clone().min().unwrap_or(0), lines.max().unwrap_or(0));
                let inside = others
                    .iter()
                    .chain(sites)
                    .any(|(f, l)| *f == write.0 && (lo..=hi).contains(l));
                same_kernel(o, d) && near && !inside
            })
        });
        let (Some(at), Some((write, sites))) = (joins, block.clone()) else {
            out.push((d, block.map(|(write, sites)| (vec![write], sites)), false));
            continue;
        };
        let (first, block, merged) = &mut out[at];
        let (writes, others) = block.get_or_insert_default();
        *merged = true;
        writes.push(write);
        push_new(others, sites, PartialEq::eq);
        writes.sort();
        others.sort();
        let total = take_records(&mut first.draft, &mut d.draft);
        push_new(&mut first.spans, d.spans, |(a, _), (b, _)| a.location == b.location);
        let names: Vec<String> = writes.iter().map(|(f, l)| format!("{f}:{l}")).collect();
        first.draft.figures.insert("writes".into(), json!(names));
        word_block(&mut first.draft, writes, others, total);
        // The block's first write is where it is sited; every other place supports it.
        if let Some((file, line)) = writes.first() {
            first.draft.location = Some(SourceLocation {
                file: file.clone(),
                line: Some(*line),
            });
        }
        for (span, mark) in &mut first.spans {
            span.primary = first.draft.location.as_ref() == Some(&span.location)
                && *mark == Mark::Access(Access::Write);
        }
        first
            .spans
            .sort_by_key(|(s, _)| (!s.primary, s.location.file.clone(), s.location.line));
    }
    // A write raced by sites both before and after it needs a barrier on each side.
    out.into_iter()
        .map(|(mut d, block, merged)| {
            if let Some((writes, sites)) = block.filter(|_| !merged)
                && let Some(write) = writes.first()
                && sites.iter().any(|(f, l)| *f == write.0 && *l < write.1)
                && sites.iter().any(|(f, l)| *f == write.0 && *l > write.1)
                && let Some(fix) = barrier_fix(barrier_call(&d.draft), &writes, &sites)
            {
                d.draft.fix = fix;
            }
            d
        })
        .collect()
}

/// The barrier a race draft's fix adds: `__syncwarp()` for a race between lanes of one warp
/// (its `scope` figure), else `__syncthreads()`.
fn barrier_call(d: &Draft) -> Part {
    if d.figures.contains_key("scope") {
        code("__syncwarp()")
    } else {
        code("__syncthreads()")
    }
}

/// A site as the report names it: `file.cu:12`.
fn site_name((file, line): &Site) -> Part {
    short_site(&format!("{file}:{line}"))
}

/// Sites as a list in words: "`a.cu:1`, `a.cu:2` and `a.cu:3`".
fn site_names<'s>(sites: impl IntoIterator<Item = &'s Site>) -> Message {
    short_sites(
        sites
            .into_iter()
            .map(|(file, line)| format!("{file}:{line}")),
    )
}

/// Where the barriers go for writes (sorted, one file) and the sites racing with them: one after
/// the last write, before the sites that follow it, and one before the first write, after the
/// sites that precede it (the previous iteration's reads). `None` when no site is in the
/// writes' file.
fn barrier_fix(barrier: Part, writes: &[Site], others: &[Site]) -> Option<Message> {
    let (first, last) = (writes.first()?, writes.last()?);
    let (before, after): (Vec<&Site>, Vec<&Site>) = others
        .iter()
        .filter(|(f, _)| *f == first.0)
        .partition(|(_, l)| *l < first.1);
    let (one, many) = if writes.len() == 1 {
        ("the write", "the write")
    } else {
        ("the last write", "the first write")
    };
    let mut steps: Vec<Message> = Vec::new();
    if !after.is_empty() {
        steps.push(msg!(
            "one after {} ({}) and before the first of {}",
            one,
            site_name(last),
            site_names(after)
        ));
    }
    if !before.is_empty() {
        steps.push(msg!(
            "one after {} and before {} ({}), so that no thread overwrites what another \
             has yet to read",
            site_names(before),
            many,
            site_name(first)
        ));
    }
    (!steps.is_empty()).then(|| msg!("Add {}: {}.", barrier, Message::join(steps, "; and ")))
}

/// The title, explanation and fix of a block of neighbouring writes and the sites racing with
/// them.
fn word_block(d: &mut Draft, writes: &[Site], others: &[Site], total: u64) {
    let warp = d.figures.contains_key("scope");
    let barrier = barrier_call(d);
    let write_names = site_names(writes);
    d.title = msg!(
        "Shared-memory race: missing {} around the writes at {}–{} and the {} that race with \
         them",
        if warp {
            barrier.clone()
        } else {
            Part::Text("barriers".into())
        },
        site_name(&writes[0]),
        writes.last().map(|w| w.1).unwrap_or(0).to_string(),
        plural(others.len() as u64, "site", "sites")
    );
    d.explanation = msg!(
        "racecheck reports {} in total between the writes at {}, neighbouring \
         statements with no racing access between them, and {} ({}), each pair its own record: \
         they are one block of writes, so the same barriers order all of them. Threads there \
         may see the old or a half-written value.",
        plural(total, "hazard", "hazards"),
        write_names.clone(),
        plural(others.len() as u64, "other site", "other sites"),
        site_names(others)
    );
    d.fix = barrier_fix(barrier.clone(), writes, others).unwrap_or_else(|| {
        msg!(
            "Add {} between the writes at {} and the sites that race with them.",
            barrier,
            write_names
        )
    });
}

/// Drafts of one kernel and config whose races share the write site (racecheck reports each
/// read site as its own record) are one missing barrier: one draft, naming every other site.
pub(super) fn merge_sites_of_one_barrier(
    drafts: Vec<RaceDraft>,
    repo_files: &[String],
) -> Vec<RaceDraft> {
    let mut out: Vec<RaceDraft> = Vec::new();
    let sites = |d: &Draft| {
        let mut parts = d.key.split('|');
        let write = parts.next().unwrap_or("").to_string();
        (write, parts.next().unwrap_or("").to_string())
    };
    for mut d in drafts {
        let (write, other) = sites(&d.draft);
        let same = out.iter_mut().find(|o| {
            !write.is_empty() && same_kernel(&o.draft, &d.draft) && sites(&o.draft).0 == write
        });
        let Some(first) = same else {
            out.push(d);
            continue;
        };
        if d.draft.figures.contains_key("async_copy") {
            first.draft.figures.insert("async_copy".into(), json!(true));
        }
        let mut others = other_sites(&first.draft).unwrap_or_else(|| vec![sites(&first.draft).1]);
        push_new(&mut others, [other], PartialEq::eq);
        first
            .draft
            .figures
            .insert("other_sites".into(), json!(others));
        let total = take_records(&mut first.draft, &mut d.draft);
        if !first.draft.figures.contains_key("async_copy") {
            word_one_barrier(&mut first.draft, &write, &others, total);
            continue;
        }
        let users = |l: &&SourceLocation| is_users_file(&l.file, repo_files);
        let own = (first.draft.location.as_ref().filter(users))
            .or(d.draft.location.as_ref().filter(users))
            .cloned();
        let read_there = own.as_ref().is_some_and(|own| {
            (first.spans.iter().chain(&d.spans))
                .any(|(s, mark)| *mark == Mark::Access(Access::Read) && s.location == *own)
        });
        word_async_sites(
            &mut first.draft,
            &write,
            &others,
            total,
            own.as_ref(),
            read_there,
        );
        if own.is_some() {
            first.draft.location = own;
        }
    }
    out
}

/// The title, explanation and fix of races sharing one write (`write`, as the key names it)
/// with `others`: one missing barrier, `__syncwarp()` where the race is within a warp.
fn word_one_barrier(d: &mut Draft, write: &str, others: &[String], total: u64) {
    d.title = msg!(
        "Shared-memory race: missing {} between the write at {} and {} that read it",
        if d.figures.contains_key("scope") {
            barrier_call(d)
        } else {
            Part::Text("barrier".into())
        },
        short_site(write),
        plural(others.len() as u64, "site", "sites")
    );
    let kernel = word_kernel_of(d.kernel.as_deref(), &d.helpers, ",");
    d.explanation = msg!(
        "{}, each its own record: they share the write, so one missing barrier explains them \
         all. Threads there may see the old or a half-written value.",
        word_total(total, kernel, "write", write, others)
    );
    d.fix = msg!(
        "Add {} after the write at {} and before the first of {}: one \
         barrier orders every one of them.",
        barrier_call(d),
        short_site(write),
        short_sites(others)
    );
}

/// The title, explanation and fix of an asynchronous copy at `write` (as the key names it)
/// racing with `others`; `own`, the user's own line among the sites, where there is one, and
/// whether that line is a read.
fn word_async_sites(
    d: &mut Draft,
    write: &str,
    others: &[String],
    total: u64,
    own: Option<&SourceLocation>,
    read_there: bool,
) {
    d.title = match own {
        Some(own) => msg!(
            "cp.async race: shared memory {} at {} while an asynchronous copy into it \
             is in flight",
            if read_there { "read" } else { "used" },
            short_site(&format!("{}:{}", own.file, own.line.unwrap_or(0)))
        ),
        None => msg!(
            "cp.async race: shared memory used while an asynchronous copy into it is in \
             flight ({})",
            short_site(write)
        ),
    };
    let kernel = word_kernel_of(d.kernel.as_deref(), &[], "");
    d.explanation = msg!(
        "{}: {}",
        word_total(total, kernel, "asynchronous copy", write, others),
        async_mechanism()
    );
    d.fix = async_fix();
}

/// "racecheck reports 3 hazards in total in `k` between the write at `a.cu:1` and 2 other
/// sites (`a.cu:2` and `a.cu:3`)": `what` at `write` (as the key names it) and `others`.
fn word_total(total: u64, kernel: Message, what: &str, write: &str, others: &[String]) -> Message {
    msg!(
        "racecheck reports {} in total{} between the {} at {} and {} other sites ({})",
        plural(total, "hazard", "hazards"),
        kernel,
        what,
        short_site(write),
        others.len().to_string(),
        short_sites(others)
    )
}
