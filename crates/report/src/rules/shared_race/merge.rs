//! Merging race drafts: the records of one missing barrier (one write site, several other
//! sites) into one draft, and writes on neighbouring lines with no racing access between them
//! into one more. Which span is the write, or a read, is read from its [`Mark`], never from its
//! label; the words of a merged draft come from [`word_block`], [`word_one_barrier`] and
//! [`word_async_sites`].

use parsers::Access;
use serde_json::json;

use crate::diagnosis::{Draft, SourceLocation, Span};
use crate::message::{Message, Part, code, msg};
use crate::text::plural;

use super::words::{async_fix, async_mechanism, word_kernel_of};
use super::{Mark, RaceDraft, is_users, short_site, short_sites};

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
    for item in std::mem::take(&mut d.evidence) {
        if !first.evidence.iter().any(|e| e.excerpt == item.excerpt) {
            first.evidence.push(item);
        }
    }
    first.explains.append(&mut d.explains);
    for h in std::mem::take(&mut d.helpers) {
        if !first.helpers.contains(&h) {
            first.helpers.push(h);
        }
    }
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

/// A draft that has not merged as a block: its write alone, and the sites racing with it.
fn block_of(d: &Draft) -> Option<Block> {
    write_and_sites(d).map(|(write, sites)| (vec![write], sites))
}

/// Writes on neighbouring lines of one file (at most this many lines apart) are one block of
/// statements.
const NEIGHBOURING: u32 = 2;

/// Drafts of one kernel and config whose writes are neighbouring statements with no racing
/// access between them (`s_U[i] = ...; s_V[i] = ...; s_W[i] = ...;`, each racing with its own
/// reads) are one fault: the barriers that order the block's first and last write order every
/// one of them. One draft names every write and site, and where the barriers go.
pub(super) fn merge_adjacent_writes(drafts: Vec<RaceDraft>) -> Vec<RaceDraft> {
    let mut out: Vec<RaceDraft> = Vec::new();
    // Per draft in `out`: its writes and the sites racing with them, when it merged.
    let mut blocks: Vec<Option<Block>> = Vec::new();
    for mut d in drafts {
        let parsed = (!d.draft.figures.contains_key("async_copy"))
            .then(|| write_and_sites(&d.draft))
            .flatten();
        let Some((write, sites)) = parsed else {
            out.push(d);
            blocks.push(None);
            continue;
        };
        let joins = out.iter().zip(&blocks).position(|(o, block)| {
            let o = &o.draft;
            if o.config != d.draft.config
                || o.kernel != d.draft.kernel
                || o.figures.get("scope") != d.draft.figures.get("scope")
                || o.figures.contains_key("async_copy")
            {
                return false;
            }
            let Some((writes, others)) = block.clone().or_else(|| block_of(o)) else {
                return false;
            };
            let near = writes
                .iter()
                .any(|(f, l)| *f == write.0 && l.abs_diff(write.1) <= NEIGHBOURING);
            let lines: Vec<u32> = writes.iter().map(|w| w.1).chain([write.1]).collect();
            let (lo, hi) = (
                lines.iter().copied().min().unwrap_or(0),
                lines.iter().copied().max().unwrap_or(0),
            );
            let inside = others
                .iter()
                .chain(&sites)
                .any(|(f, l)| *f == write.0 && (lo..=hi).contains(l));
            near && !inside
        });
        let Some(at) = joins else {
            out.push(d);
            blocks.push(None);
            continue;
        };
        let (mut writes, mut others) = blocks[at]
            .take()
            .or_else(|| block_of(&out[at].draft))
            .unwrap_or_default();
        writes.push(write);
        for s in sites {
            if !others.contains(&s) {
                others.push(s);
            }
        }
        writes.sort();
        others.sort();
        let first = &mut out[at];
        let total = take_records(&mut first.draft, &mut d.draft);
        for (span, mark) in d.spans {
            if !first.spans.iter().any(|(s, _)| s.location == span.location) {
                let span = Span {
                    primary: false,
                    ..span
                };
                first.spans.push((span, mark));
            }
        }
        first.draft.figures.insert(
            "writes".into(),
            json!(
                writes
                    .iter()
                    .map(|(f, l)| format!("{f}:{l}"))
                    .collect::<Vec<_>>()
            ),
        );
        word_block(&mut first.draft, &writes, &others, total);
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
        blocks[at] = Some((writes, others));
    }
    // A write raced by sites both before and after it needs a barrier on each side.
    for (d, block) in out.iter_mut().zip(&blocks) {
        let d = &mut d.draft;
        if block.is_some() || d.figures.contains_key("async_copy") {
            continue;
        }
        let Some((write, sites)) = write_and_sites(d) else {
            continue;
        };
        let on_both_sides = sites.iter().any(|(f, l)| *f == write.0 && *l < write.1)
            && sites.iter().any(|(f, l)| *f == write.0 && *l > write.1);
        if on_both_sides && let Some(fix) = barrier_fix(barrier_call(d), &[write], &sites) {
            d.fix = fix;
        }
    }
    out
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
    Message::words(
        sites
            .into_iter()
            .map(|s| Message::from(site_name(s)))
            .collect(),
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
            Message::from(barrier.clone())
        } else {
            msg!("barriers")
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
    for mut d in drafts {
        let write = d.draft.key.split('|').next().unwrap_or("").to_string();
        let scope = d.draft.figures.get("scope").cloned();
        let same = out.iter_mut().find(|o| {
            !write.is_empty()
                && o.draft.config == d.draft.config
                && o.draft.kernel == d.draft.kernel
                && o.draft.key.split('|').next() == Some(write.as_str())
                && o.draft.figures.get("scope") == scope.as_ref()
        });
        let Some(first) = same else {
            out.push(d);
            continue;
        };
        if d.draft.figures.contains_key("async_copy") {
            first.draft.figures.insert("async_copy".into(), json!(true));
        }
        let other = d.draft.key.split('|').nth(1).unwrap_or("").to_string();
        let key = first.draft.key.clone();
        let sites = first
            .draft
            .figures
            .entry("other_sites".into())
            .or_insert_with(|| json!([key.split('|').nth(1).unwrap_or("")]));
        if let Some(list) = sites.as_array_mut()
            && !list.iter().any(|v| v.as_str() == Some(other.as_str()))
        {
            list.push(json!(other));
        }
        let total = take_records(&mut first.draft, &mut d.draft);
        let others = other_sites(&first.draft).unwrap_or_default();
        if !first.draft.figures.contains_key("async_copy") {
            word_one_barrier(&mut first.draft, &write, &others, total, scope.is_some());
            continue;
        }
        let own = first
            .draft
            .location
            .as_ref()
            .filter(|l| is_users(l, repo_files))
            .or(d.draft.location.as_ref().filter(|l| is_users(l, repo_files)))
            .cloned();
        let read_there = own.as_ref().is_some_and(|own| {
            first
                .spans
                .iter()
                .chain(&d.spans)
                .any(|(s, mark)| *mark == Mark::Access(Access::Read) && s.location == *own)
        });
        let sites = AsyncSites {
            write: &write,
            others: &others,
            total,
            own: own.as_ref(),
            read_there,
        };
        word_async_sites(&mut first.draft, &sites);
        if first
            .draft
            .location
            .as_ref()
            .is_none_or(|l| !is_users(l, repo_files))
            && let Some(own) = d.draft.location.filter(|l| is_users(l, repo_files))
        {
            first.draft.location = Some(own);
        }
    }
    out
}

/// The title, explanation and fix of races sharing one write (`write`, as the key names it)
/// with `others`: one missing barrier, `__syncwarp()` where the race is within a warp.
fn word_one_barrier(d: &mut Draft, write: &str, others: &[String], total: u64, warp: bool) {
    let write_name = short_site(write);
    let joined = short_sites(others);
    d.title = msg!(
        "Shared-memory race: missing {} between the write at {} and {} that read \
         it",
        if warp {
            msg!("`__syncwarp()`")
        } else {
            msg!("barrier")
        },
        write_name.clone(),
        plural(others.len() as u64, "site", "sites")
    );
    let kernel_text = word_kernel_of(d.kernel.as_deref(), &d.helpers, ",");
    d.explanation = msg!(
        "racecheck reports {} in total{} between the write at {} and \
         {} other sites ({}), each its own record: they share the write, so one \
         missing barrier explains them all. Threads there may see the old or a half-written \
         value.",
        plural(total, "hazard", "hazards"),
        kernel_text,
        write_name.clone(),
        others.len().to_string(),
        joined.clone()
    );
    d.fix = msg!(
        "Add {} after the write at {} and before the first of {}: one \
         barrier orders every one of them.",
        barrier_call(d),
        write_name,
        joined
    );
}

/// What the words of asynchronous copies racing with several sites read.
struct AsyncSites<'a> {
    /// The copy's site, as the key names it.
    write: &'a str,
    others: &'a [String],
    total: u64,
    /// The user's own line among the sites, where there is one.
    own: Option<&'a SourceLocation>,
    /// Whether that line is a read.
    read_there: bool,
}

/// The title, explanation and fix of an asynchronous copy racing with several sites.
fn word_async_sites(d: &mut Draft, s: &AsyncSites) {
    let write_name = short_site(s.write);
    let joined = short_sites(s.others);
    let kernel_text = d
        .kernel
        .as_deref()
        .map(|k| msg!(" in {}", code(k)))
        .unwrap_or_default();
    d.title = match s.own {
        Some(own) => msg!(
            "cp.async race: shared memory {} at {} while an asynchronous copy into it \
             is in flight",
            if s.read_there { "read" } else { "used" },
            short_site(&format!("{}:{}", own.file, own.line.unwrap_or(0)))
        ),
        None => msg!(
            "cp.async race: shared memory used while an asynchronous copy into it is in \
             flight ({})",
            write_name.clone()
        ),
    };
    d.explanation = msg!(
        "racecheck reports {} in total{} between the asynchronous copy at \
         {} and {} other sites ({}): {}",
        plural(s.total, "hazard", "hazards"),
        kernel_text,
        write_name,
        s.others.len().to_string(),
        joined,
        async_mechanism()
    );
    d.fix = async_fix();
}
