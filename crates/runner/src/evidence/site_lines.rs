//! The user's source lines at the places the tools named: read once, when the unit ends, from
//! the run's own inputs, and kept in the stage record (`Stage::site_lines`), so a report
//! rendered anywhere later can quote the line a fault is at (`Q_reg[row][d] = val.x;`) and say
//! which array it indexes. Only files among the run's inputs are read; a place the tool named
//! that matches none of them, or more than one, is left out.

use std::collections::BTreeMap;
use std::path::Path;

use parsers::ParsedLog;

/// The most lines one unit keeps.
const MAX_LINES: usize = 64;

/// The longest line kept, in characters.
const MAX_WIDTH: usize = 240;

/// `file:line` (the input's path, relative to the pipeline's directory) to the text of that
/// line, for every place the unit's logs name in one of the run's input files.
pub fn at_sites(
    root: &Path,
    inputs: &[String],
    parsed: &[(String, ParsedLog)],
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let places = parsed
        .iter()
        .flat_map(|(_, log)| &log.findings)
        .flat_map(|f| {
            let own = f.file.as_deref().zip(f.line);
            let frames = f
                .device_frames
                .iter()
                .chain(f.sides.iter().map(|s| &s.location))
                .chain(&f.related)
                .filter_map(|l| l.file.as_deref().zip(l.line));
            own.into_iter().chain(frames)
        });
    let mut files: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    for (file, line) in places {
        if out.len() >= MAX_LINES {
            break;
        }
        let Some(input) = input_for(root, inputs, file) else {
            continue;
        };
        let lines = files.entry(input.clone()).or_insert_with(|| {
            std::fs::read(root.join(&input)).ok().map(|b| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
        });
        let text = lines
            .as_ref()
            .and_then(|l| l.get(usize::try_from(line).ok()?.checked_sub(1)?));
        if let Some(text) = text {
            let text: String = text.trim().chars().take(MAX_WIDTH).collect();
            out.insert(format!("{input}:{line}"), text);
        }
    }
    out
}

/// The one input a tool's file name means: the same path (relative to the pipeline's directory,
/// or absolute under it), else the one input whose path ends with it.
fn input_for(root: &Path, inputs: &[String], file: &str) -> Option<String> {
    let relative = Path::new(file)
        .strip_prefix(root)
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|_| file.trim_start_matches("./").to_string());
    if inputs.contains(&relative) {
        return Some(relative);
    }
    let suffix = format!("/{}", relative.trim_start_matches('/'));
    let mut found = inputs.iter().filter(|i| i.ends_with(&suffix));
    let one = found.next()?;
    found.next().is_none().then(|| one.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_file_name_means_the_one_input_it_names() {
        let inputs: Vec<String> = ["kernels/fa.cu", "kernels/detail/cp.hpp", "a/x.cu", "b/x.cu"]
            .map(String::from)
            .to_vec();
        let root = Path::new("/srv/repo");
        assert_eq!(
            input_for(root, &inputs, "fa.cu").as_deref(),
            Some("kernels/fa.cu")
        );
        assert_eq!(
            input_for(root, &inputs, "/srv/repo/kernels/fa.cu").as_deref(),
            Some("kernels/fa.cu")
        );
        assert_eq!(
            input_for(root, &inputs, "x.cu"),
            None,
            "two inputs end with it"
        );
        assert_eq!(input_for(root, &inputs, "mma.hpp"), None, "not an input");
    }
}
