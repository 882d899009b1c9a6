//! Every Markdown report renders on GitHub as it was written: rendered with comrak under
//! GitHub's options (tables, strikethrough, autolinks, task lists; raw HTML not passed through,
//! as cmark-gfm replaces it with `<!-- raw HTML omitted -->`), no text vanishes as an HTML tag
//! and nothing is bold or italic that the renderer did not mean to be.
//!
//! The reports hold raw HTML in two places on purpose, both of which GitHub keeps: a collapsed
//! section (a `<details><summary>…</summary>` line, closed by a `</details>` line) and `<br>`
//! between the entries of a table cell. Everything else that reads as HTML is a defect: the
//! `<toolkit>` of a path, the `<__half>` of a template, a `<` in a tool's message. Emphasis is
//! meant only where the renderer writes `**`; a `__global__` or `__syncthreads()` outside a
//! code span turns into bold text instead. And every table's header names its columns.

use std::path::{Path, PathBuf};

use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options, format_html, parse_document};

/// GitHub's rendering options.
fn github() -> Options<'static> {
    let mut options = Options::default();
    options.extension.table = true;
    options.extension.strikethrough = true;
    options.extension.autolink = true;
    options.extension.tasklist = true;
    options.render.r#unsafe = false;
    options
}

/// Whether an HTML node is one of the two the reports write on purpose.
fn intended_html(value: &NodeValue) -> bool {
    match value {
        NodeValue::HtmlInline(tag) => tag == "<br>",
        NodeValue::HtmlBlock(block) => {
            let line = block.literal.trim_end();
            line == "</details>"
                || line
                    .strip_prefix("<details><summary>")
                    .and_then(|rest| rest.strip_suffix("</summary>"))
                    .is_some_and(|summary| !summary.contains(['<', '>']))
        }
        _ => false,
    }
}

/// The text a node shows, its code spans included.
fn text_of<'a>(node: &'a AstNode<'a>) -> String {
    node.descendants()
        .filter_map(|n| match &n.data.borrow().value {
            NodeValue::Text(t) => Some(t.to_string()),
            NodeValue::Code(c) => Some(c.literal.clone()),
            _ => None,
        })
        .collect()
}

/// The source text from a node's first character on (a line's rest).
fn source_at<'s>(lines: &[&'s str], node: &AstNode<'_>) -> &'s str {
    let start = node.data.borrow().sourcepos.start;
    lines
        .get(start.line.saturating_sub(1))
        .and_then(|l| l.get(start.column.saturating_sub(1)..))
        .unwrap_or("")
}

/// What is wrong with `md` as GitHub renders it, each with the offending fragment.
pub fn problems(md: &str) -> Vec<String> {
    let options = github();
    let arena = Arena::new();
    let root = parse_document(&arena, md, &options);
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    let mut intended = Vec::new();
    for node in root.descendants() {
        let value = node.data.borrow().value.clone();
        match &value {
            NodeValue::HtmlInline(html) if !intended_html(&value) => {
                out.push(format!(
                    "raw HTML {html:?} in {:?}",
                    source_line(&lines, node)
                ));
            }
            NodeValue::HtmlBlock(block) if !intended_html(&value) => {
                out.push(format!("raw HTML block {:?}", block.literal));
            }
            NodeValue::HtmlInline(_) | NodeValue::HtmlBlock(_) => intended.push(node),
            NodeValue::Strong if !source_at(&lines, node).starts_with("**") => {
                out.push(format!(
                    "unintended bold {:?} in {:?}",
                    text_of(node),
                    source_line(&lines, node)
                ));
            }
            NodeValue::Emph => out.push(format!(
                "unintended emphasis {:?} in {:?}",
                text_of(node),
                source_line(&lines, node)
            )),
            NodeValue::Strikethrough => out.push(format!(
                "unintended strikethrough {:?} in {:?}",
                text_of(node),
                source_line(&lines, node)
            )),
            // A link goes where its text says: an escape inside a URL breaks it.
            NodeValue::Link(link) if link.url.contains('\\') => {
                out.push(format!(
                    "a broken link {:?} in {:?}",
                    link.url,
                    source_line(&lines, node)
                ));
            }
            // A table says what each column holds.
            NodeValue::TableRow(true)
                if node.children().any(|cell| text_of(cell).trim().is_empty()) =>
            {
                out.push(format!(
                    "a table header with an empty cell: {:?}",
                    source_line(&lines, node)
                ));
            }
            _ => {}
        }
    }
    // What GitHub's renderer drops: nothing once the intended HTML is set aside.
    for node in intended {
        node.detach();
    }
    let mut html = String::new();
    if format_html(root, &options, &mut html).is_err() {
        out.push("comrak could not render the document".to_string());
    }
    let omitted = html.matches("raw HTML omitted").count();
    if omitted > 0 && out.is_empty() {
        out.push(format!("{omitted} × raw HTML omitted"));
    }
    out
}

/// The source line a node starts on.
fn source_line(lines: &[&str], node: &AstNode<'_>) -> String {
    let line = node.data.borrow().sourcepos.start.line;
    lines
        .get(line.saturating_sub(1))
        .map(|l| l.to_string())
        .unwrap_or_default()
}

/// Panics with the report's name and every offending fragment.
pub fn assert_renders_on_github(name: &str, md: &str) {
    let found = problems(md);
    assert!(
        found.is_empty(),
        "{name}: the Markdown does not render as written on GitHub:\n{}",
        found.join("\n")
    );
}

/// The snapshot folders of the report and runner tests.
fn snapshot_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    vec![
        root.join("tests/it/snapshots"),
        root.join("../runner/tests/it/snapshots"),
    ]
}

/// A snapshot's content without its insta header.
fn snapshot_body(text: &str) -> &str {
    text.strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .map(|(_, body)| body)
        .unwrap_or(text)
}

/// Every snapshot that is a Markdown report (a diff, an explanation), by file name.
fn markdown_snapshots() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in snapshot_dirs() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .flatten();
        for entry in entries {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "snap") {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            let body = snapshot_body(&text);
            // JSON, SARIF, JUnit and SVG snapshots start with `{` or `<`.
            if !body.starts_with(['{', '<']) {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((name, body.to_string()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_markdown_snapshot_renders_as_written_on_github() {
    let snapshots = markdown_snapshots();
    assert!(
        snapshots.len() >= 30,
        "only {} Markdown snapshots found",
        snapshots.len()
    );
    let failures: Vec<String> = snapshots
        .iter()
        .filter_map(|(name, md)| {
            let found = problems(md);
            (!found.is_empty()).then(|| format!("{name}:\n  {}", found.join("\n  ")))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_check_catches_what_github_would_mangle() {
    // Tool wording as the reports quote it, unescaped.
    let found = problems("Uninitialized __global__ memory read at <toolkit>/include/x.h:3\n");
    assert!(
        found
            .iter()
            .any(|p| p.contains("unintended bold \"global\"")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("raw HTML \"<toolkit>\"")),
        "{found:?}"
    );
    let found = problems("a *pointer* and ~~gone~~\n");
    assert!(
        found.iter().any(|p| p.contains("unintended emphasis")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("strikethrough")),
        "{found:?}"
    );
    let found = problems("see https://docs.nvidia.com/x/group\\_\\_CUDART\\_\\_TYPES.html\n");
    assert!(
        found.iter().any(|p| p.contains("a broken link")),
        "{found:?}"
    );
    let found = problems("| | |\n|---|---|\n| GPU | H200 |\n");
    assert!(found.iter().any(|p| p.contains("empty cell")), "{found:?}");
    let found = problems("<details><summary>a <b>b</b></summary>\n\nx\n\n</details>\n");
    assert!(
        found.iter().any(|p| p.contains("raw HTML block")),
        "{found:?}"
    );
}

#[test]
fn intended_bold_code_spans_and_collapsed_sections_pass() {
    let md = "**Verdict:** ❌ `__global__` read\n\n\
              | Stage | Logs |\n|---|---|\n| **check** | `a.log`<br>`b.log` |\n\n\
              <details><summary>Stage executions (2)</summary>\n\n- x\n\n</details>\n\n\
              Uninitialized \\_\\_global\\_\\_ memory at \\<toolkit>/include/x.h\n";
    assert_eq!(problems(md), Vec::<String>::new());
}

#[test]
fn a_url_in_tool_text_stays_a_working_link() {
    // As PyTorch prints it after a CUDA error.
    let message = "Search for `cudaErrorLaunchFailure' in \
                   https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for \
                   more information.";
    let md = format!("{}\n", report::text::md_text(message));
    assert_eq!(problems(&md), Vec::<String>::new(), "{md}");
    let arena = Arena::new();
    let root = parse_document(&arena, &md, &github());
    let urls: Vec<String> = root
        .descendants()
        .filter_map(|n| match &n.data.borrow().value {
            NodeValue::Link(link) => Some(link.url.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        urls,
        ["https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"]
    );
}
