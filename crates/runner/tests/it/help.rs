//! `--help` and docs/commands.md list the same subcommands and flags, and the same values of a
//! flag whose values the docs spell out (`--format md\|json`, which every command that takes
//! `--format` does): neither can drift from the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::util::BIN;

/// What one subcommand's help lists: its flags (long, and short where it has one) and, for a
/// flag with a fixed set, its possible values.
#[derive(Debug, Default)]
struct Listed {
    flags: BTreeMap<String, Option<String>>,
    values: BTreeMap<String, BTreeSet<String>>,
}

fn help(args: &[&str]) -> String {
    let out = std::process::Command::new(BIN)
        .args(args)
        .output()
        .expect("run the runner");
    assert!(out.status.success(), "exhibit {args:?} failed");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The lines of one section (`Commands:`, `Options:`) of a clap help text.
fn section<'h>(text: &'h str, title: &str) -> Vec<&'h str> {
    text.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// The flags of `exhibit SUBCOMMAND -h` (short help: possible values inline).
fn listed(subcommand: &str) -> Listed {
    let text = help(&[subcommand, "-h"]);
    let mut listed = Listed::default();
    for line in section(&text, "Options:") {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (short, long) = match words.as_slice() {
            [short, long, ..] if short.len() == 3 && short.ends_with(',') => {
                (Some(short.trim_end_matches(',').to_string()), *long)
            }
            [long, ..] => (None, *long),
            [] => continue,
        };
        if !long.starts_with("--") || long == "--help" || long == "--version" {
            continue;
        }
        listed.flags.insert(long.to_string(), short);
        if let Some(values) = line
            .split("[possible values: ")
            .nth(1)
            .and_then(|v| v.split(']').next())
        {
            listed.values.insert(
                long.to_string(),
                values.split(", ").map(str::to_string).collect(),
            );
        }
    }
    listed
}

/// docs/commands.md's table of commands: each row's subcommand and its first cell.
fn documented() -> BTreeMap<String, String> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/commands.md");
    let text = std::fs::read_to_string(docs).expect("docs/commands.md");
    text.lines()
        .filter(|l| l.starts_with("| `exhibit"))
        .map(|row| {
            let cell = row
                .trim_start_matches("| ")
                .split(" | ")
                .next()
                .unwrap_or_default()
                .to_string();
            let name = cell
                .trim_start_matches("`exhibit ")
                .split([' ', '`'])
                .next()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_string();
            (name, cell)
        })
        .collect()
}

/// The `--flags` a docs cell names, with the values it spells out (`--format md\|json`).
fn flags_in(cell: &str) -> BTreeMap<String, Option<BTreeSet<String>>> {
    let words: Vec<&str> = cell
        .split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | '`'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut flags = BTreeMap::new();
    for (i, word) in words.iter().enumerate() {
        let Some(name) = word.strip_prefix("--") else {
            continue;
        };
        let flag = format!(
            "--{}",
            name.trim_end_matches(|c: char| !c.is_alphanumeric())
        );
        let values = words
            .get(i + 1)
            .filter(|v| v.contains("\\|") && !v.starts_with('-'))
            .map(|v| v.split("\\|").map(str::to_string).collect());
        flags.insert(flag, values);
    }
    flags
}

#[test]
fn help_and_docs_list_the_same_subcommands_flags_and_values() {
    let top = help(&["--help"]);
    let subcommands: BTreeSet<String> = section(&top, "Commands:")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    let docs = documented();
    let in_docs: BTreeSet<String> = docs.keys().cloned().collect();
    assert_eq!(
        subcommands, in_docs,
        "subcommands in `exhibit --help` (left) and docs/commands.md's table (right)"
    );
    let run = listed("run");
    // The options of a run, which `exhibit bisect` takes too and whose row says so.
    let run_options: BTreeSet<&String> = run.flags.keys().collect();
    for name in &subcommands {
        let cell = &docs[name];
        let documented = flags_in(cell);
        if name == "harness" {
            // Its arguments are the harness's own: `exhibit harness --help` is the harness's.
            assert!(documented.is_empty(), "{cell}");
            continue;
        }
        let listed = listed(name);
        for (flag, short) in &listed.flags {
            let shared = name == "bisect" && run_options.contains(flag);
            let named = documented.contains_key(flag)
                || short.as_ref().is_some_and(|s| {
                    cell.split(|c: char| c.is_whitespace() || c == '[')
                        .any(|w| w == s)
                });
            assert!(
                named || shared && cell.contains("the run options"),
                "`exhibit {name} -h` lists {flag}, which docs/commands.md's row does not: {cell}"
            );
        }
        for (flag, values) in &documented {
            assert!(
                listed.flags.contains_key(flag),
                "docs/commands.md names `exhibit {name} {flag}`, which its help does not list"
            );
            if let (Some(values), Some(listed)) = (values, listed.values.get(flag)) {
                assert_eq!(
                    values, listed,
                    "the values of `exhibit {name} {flag}`: docs (left) and help (right)"
                );
            }
        }
        // Every output format a command takes is spelled out where the command is.
        if let Some(values) = listed.values.get("--format") {
            assert_eq!(
                documented.get("--format").cloned().flatten().as_ref(),
                Some(values),
                "docs/commands.md's row for `exhibit {name}` spells out --format's values: {cell}"
            );
        }
    }
}

/// `exhibit harness` is listed by `--help`, and still hands its arguments to the harness.
#[test]
fn runner_harness_is_listed_and_runs_the_harness() {
    let top = help(&["--help"]);
    assert!(
        section(&top, "Commands:")
            .iter()
            .any(|l| l.trim_start().starts_with("harness ")),
        "{top}"
    );
    let out = std::process::Command::new(BIN)
        .args(["harness", "--help"])
        .output()
        .expect("run the runner");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("--cubin"), "{text}");
}
