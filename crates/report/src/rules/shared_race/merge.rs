//! Merging race drafts: the records of one missing barrier (one write site, several other
//! sites) into one draft, and writes on neighbouring lines with no racing access between them
//! into one more.

use serde_json::json;

use crate::diagnosis::{Draft, SourceLocation, inlined_in};
use crate::text::md_code;

use super::{ASYNC_FIX, ASYNC_MECHANISM, is_users};

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

/// A barrier race draft's write site and the sites racing with it.
fn write_and_sites(d: &Draft) -> Option<(Site, Vec<Site>)> {
    let mut parts = d.key.split('|');
    let (file, line) = file_line(parts.next()?)?;
    let listed: Vec<String> = match d.figures.get("other_sites").and_then(|v| v.as_array()) {
        Some(list) => list
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        None => parts.next().map(str::to_string).into_iter().collect(),
    };
    let sites = listed
        .iter()
        .filter_map(|s| file_line(s).map(|(f, l)| (f.to_string(), l)))
        .collect();
    Some(((file.to_string(), line), sites))
}

/// Writes on neighbouring lines of one file (at most this many lines apart) are one block of
/// statements.
const NEIGHBOURING: u32 = 2;

/// Drafts of one kernel and config whose writes are neighbouring statements with no racing
/// access between them (`s_U[i] = ...; s_V[i] = ...; s_W[i] = ...;`, each racing with its own
/// reads) are one fault: the barriers that order the block's first and last write order every
/// one of them. One draft names every write and site, and where the barriers go.
pub(super) fn merge_adjacent_writes(drafts: Vec<Draft>) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    // Per draft in `out`: its writes and the sites racing with them, when it merged.
    let mut blocks: Vec<Option<Block>> = Vec::new();
    for mut d in drafts {
        let parsed = (!d.figures.contains_key("async_copy"))
            .then(|| write_and_sites(&d))
            .flatten();
        let Some((write, sites)) = parsed else {
            out.push(d);
            blocks.push(None);
            continue;
        };
        let joins = out.iter().zip(&blocks).position(|(o, block)| {
            if o.config != d.config
                || o.kernel != d.kernel
                || o.figures.get("scope") != d.figures.get("scope")
                || o.figures.contains_key("async_copy")
            {
                return false;
            }
            let (writes, others) = match block {
                Some((w, s)) => (w.clone(), s.clone()),
                None => match write_and_sites(o) {
                    Some((w, s)) => (vec![w], s),
                    None => return false,
                },
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
        let (mut writes, mut others) = match blocks[at].take() {
            Some(block) => block,
            None => match write_and_sites(&out[at]) {
                Some((w, s)) => (vec![w], s),
                None => (Vec::new(), Vec::new()),
            },
        };
        writes.push(write);
        for s in sites {
            if !others.contains(&s) {
                others.push(s);
            }
        }
        writes.sort();
        others.sort();
        let first = &mut out[at];
        let total = take_records(first, &mut d);
        for span in d.spans {
            if !first.spans.iter().any(|s| s.location == span.location) {
                first.spans.push(crate::diagnosis::Span {
                    primary: false,
                    ..span
                });
            }
        }
        word_block(first, &writes, &others, total);
        // The block's first write is where it is sited; every other place supports it.
        if let Some((file, line)) = writes.first() {
            first.location = Some(SourceLocation {
                file: file.clone(),
                line: Some(*line),
            });
        }
        for span in &mut first.spans {
            span.primary =
                first.location.as_ref() == Some(&span.location) && span.label == "the write";
        }
        first
            .spans
            .sort_by_key(|s| (!s.primary, s.location.file.clone(), s.location.line));
        blocks[at] = Some((writes, others));
    }
    // A write raced by sites both before and after it needs a barrier on each side.
    for (d, block) in out.iter_mut().zip(&blocks) {
        if block.is_some() || d.figures.contains_key("async_copy") {
            continue;
        }
        let Some((write, sites)) = write_and_sites(d) else {
            continue;
        };
        let on_both_sides = sites.iter().any(|(f, l)| *f == write.0 && *l < write.1)
            && sites.iter().any(|(f, l)| *f == write.0 && *l > write.1);
        if on_both_sides && let Some(fix) = barrier_fix(barrier_call(d), &[write], &sites) {
            d.fix = fix.into();
        }
    }
    out
}

/// The barrier a race draft's fix adds: `__syncwarp()` for a race between lanes of one warp
/// (its `scope` figure), else `__syncthreads()`.
fn barrier_call(d: &Draft) -> &'static str {
    if d.figures.contains_key("scope") {
        "`__syncwarp()`"
    } else {
        "`__syncthreads()`"
    }
}

/// A site as the report names it: `file.cu:12`.
fn site_name((file, line): &Site) -> String {
    md_code(&format!(
        "{}:{line}",
        file.rsplit('/').next().unwrap_or(file)
    ))
}

/// Where the barriers go for writes (sorted, one file) and the sites racing with them: one after
/// the last write, before the sites that follow it, and one before the first write, after the
/// sites that precede it (the previous iteration's reads). `None` when no site is in the
/// writes' file.
fn barrier_fix(barrier: &str, writes: &[Site], others: &[Site]) -> Option<String> {
    let (first, last) = (writes.first()?, writes.last()?);
    let (before, after): (Vec<&Site>, Vec<&Site>) = others
        .iter()
        .filter(|(f, _)| *f == first.0)
        .partition(|(_, l)| *l < first.1);
    let names = |list: &[&Site]| {
        crate::text::join_words(&list.iter().map(|s| site_name(s)).collect::<Vec<_>>())
    };
    let (one, many) = if writes.len() == 1 {
        ("the write", "the write")
    } else {
        ("the last write", "the first write")
    };
    let mut steps: Vec<String> = Vec::new();
    if !after.is_empty() {
        steps.push(format!(
            "one after {one} ({}) and before the first of {}",
            site_name(last),
            names(&after)
        ));
    }
    if !before.is_empty() {
        steps.push(format!(
            "one after {} and before {many} ({}), so that no thread overwrites what another \
             has yet to read",
            names(&before),
            site_name(first)
        ));
    }
    (!steps.is_empty()).then(|| format!("Add {barrier}: {}.", steps.join("; and ")))
}

/// The title, explanation and fix of a block of neighbouring writes and the sites racing with
/// them.
fn word_block(d: &mut Draft, writes: &[Site], others: &[Site], total: u64) {
    let warp = d.figures.contains_key("scope");
    let barrier = barrier_call(d);
    let write_names = crate::text::join_words(&writes.iter().map(site_name).collect::<Vec<_>>());
    d.title = format!(
        "Shared-memory race: missing {} around the writes at {}–{} and the {} that race with \
         them",
        if warp { barrier } else { "barriers" },
        site_name(&writes[0]),
        writes.last().map(|w| w.1).unwrap_or(0),
        crate::text::plural(others.len() as u64, "site", "sites")
    ).into();
    d.figures.insert(
        "writes".into(),
        json!(
            writes
                .iter()
                .map(|(f, l)| format!("{f}:{l}"))
                .collect::<Vec<_>>()
        ),
    );
    d.explanation = format!(
        "racecheck reports {} in total between the writes at {write_names}, neighbouring \
         statements with no racing access between them, and {} ({}), each pair its own record: \
         they are one block of writes, so the same barriers order all of them. Threads there \
         may see the old or a half-written value.",
        crate::text::plural(total, "hazard", "hazards"),
        crate::text::plural(others.len() as u64, "other site", "other sites"),
        crate::text::join_words(&others.iter().map(site_name).collect::<Vec<_>>())
    ).into();
    d.fix = barrier_fix(barrier, writes, others).unwrap_or_else(|| {
        format!(
            "Add {barrier} between the writes at {write_names} and the sites that race with them."
        )
    }).into();
}

/// Drafts of one kernel and config whose races share the write site (racecheck reports each
/// read site as its own record) are one missing barrier: one draft, naming every other site.
pub(super) fn merge_sites_of_one_barrier(drafts: Vec<Draft>, repo_files: &[String]) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    for mut d in drafts {
        let write = d.key.split('|').next().unwrap_or("").to_string();
        let scope = d.figures.get("scope").cloned();
        let same = out.iter_mut().find(|o| {
            !write.is_empty()
                && o.config == d.config
                && o.kernel == d.kernel
                && o.key.split('|').next() == Some(write.as_str())
                && o.figures.get("scope") == scope.as_ref()
        });
        let Some(first) = same else {
            out.push(d);
            continue;
        };
        if d.figures.contains_key("async_copy") {
            first.figures.insert("async_copy".into(), json!(true));
        }
        let other = d.key.split('|').nth(1).unwrap_or("").to_string();
        let sites = first
            .figures
            .entry("other_sites".into())
            .or_insert_with(|| json!([first.key.split('|').nth(1).unwrap_or("")]));
        if let Some(list) = sites.as_array_mut()
            && !list.iter().any(|v| v.as_str() == Some(other.as_str()))
        {
            list.push(json!(other));
        }
        let total = take_records(first, &mut d);
        let others: Vec<String> = first
            .figures
            .get("other_sites")
            .and_then(|v| v.as_array())
            .map(|l| {
                l.iter()
                    .filter_map(|v| v.as_str())
                    .map(|site| md_code(site.rsplit('/').next().unwrap_or(site)))
                    .collect()
            })
            .unwrap_or_default();
        let write_name = md_code(write.rsplit('/').next().unwrap_or(&write));
        let n = others.len();
        let joined = crate::text::join_words(&others);
        if first.figures.contains_key("async_copy") {
            let kernel_text = first
                .kernel
                .as_deref()
                .map(|k| format!(" in {}", md_code(k)))
                .unwrap_or_default();
            let own = first
                .location
                .as_ref()
                .filter(|l| is_users(l, repo_files))
                .or(d.location.as_ref().filter(|l| is_users(l, repo_files)))
                .cloned();
            let read_there = own.as_ref().is_some_and(|own| {
                first
                    .spans
                    .iter()
                    .chain(&d.spans)
                    .any(|s| s.label == "the read" && s.location == *own)
            });
            first.title = match own {
                Some(own) => format!(
                    "cp.async race: shared memory {} at {} while an asynchronous copy into it \
                     is in flight",
                    if read_there { "read" } else { "used" },
                    md_code(&format!(
                        "{}:{}",
                        own.file.rsplit('/').next().unwrap_or(&own.file),
                        own.line.unwrap_or(0)
                    ))
                ).into(),
                None => format!(
                    "cp.async race: shared memory used while an asynchronous copy into it is in \
                     flight ({write_name})"
                ).into(),
            };
            first.explanation = format!(
                "racecheck reports {} in total{kernel_text} between the asynchronous copy at \
                 {write_name} and {n} other sites ({joined}): {ASYNC_MECHANISM}",
                crate::text::plural(total, "hazard", "hazards")
            ).into();
            first.fix = ASYNC_FIX.to_string().into();
            if first
                .location
                .as_ref()
                .is_none_or(|l| !is_users(l, repo_files))
                && let Some(own) = d.location.filter(|l| is_users(l, repo_files))
            {
                first.location = Some(own);
            }
            continue;
        }
        first.title = format!(
            "Shared-memory race: missing {} between the write at {write_name} and {} that read \
             it",
            if scope.is_some() {
                "`__syncwarp()`"
            } else {
                "barrier"
            },
            crate::text::plural(n as u64, "site", "sites")
        ).into();
        let kernel_text = match (&first.kernel, inlined_in(&first.helpers)) {
            (Some(k), Some(inlined)) => format!(" in {}, {},", md_code(k), inlined.markdown()),
            (Some(k), None) => format!(" in {}", md_code(k)),
            (None, Some(inlined)) => format!(" {},", inlined.markdown()),
            (None, None) => String::new(),
        };
        first.explanation = format!(
            "racecheck reports {} in total{kernel_text} between the write at {write_name} and \
             {n} other sites ({joined}), each its own record: they share the write, so one \
             missing barrier explains them all. Threads there may see the old or a half-written \
             value.",
            crate::text::plural(total, "hazard", "hazards")
        ).into();
        first.fix = format!(
            "Add {} after the write at {write_name} and before the first of {joined}: one \
             barrier orders every one of them.",
            barrier_call(first)
        ).into();
    }
    out
}
