//! Text hygiene shared by every renderer: scrubbing volatile values out of quoted log lines,
//! repository-relative paths, rounding and escaping (kernel names are matched by
//! [`crate::kernel_id::KernelId`]).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Text from a program or a tool made safe for a terminal or a document: terminal escape
/// sequences are removed whole (CSI `ESC [ ... m`, OSC `ESC ] ... BEL` or `ESC \`, the other
/// string sequences, two-character `ESC x`, and their C1 forms), and so is every other control
/// character but `\n` and `\t` (C0, DEL, C1). Bidirectional controls (U+202A to U+202E,
/// U+2066 to U+2069), which reorder what a reader sees, are shown as what they are (`<U+202E>`);
/// the noncharacters U+FFFE and U+FFFF, which XML refuses, become U+FFFD.
/// Every renderer passes its output through this, and so does the runner before it writes to
/// the terminal. Text without controls is returned as it is.
pub fn strip_controls(s: &str) -> Cow<'_, str> {
    let stripped = |c: char| c.is_control() && c != '\n' && c != '\t';
    let nonchar = |c: char| matches!(c, '\u{fffe}' | '\u{ffff}');
    if !s
        .chars()
        .any(|c| stripped(c) || is_bidi_control(c) || nonchar(c))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let kind = match c {
            '\u{1b}' => match chars.peek() {
                Some('[') => Some('['),
                Some(']' | 'P' | 'X' | '^' | '_') => Some(']'),
                Some(_) => Some('x'),
                None => None,
            },
            '\u{9b}' => Some('C'),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => Some('S'),
            c if stripped(c) => None,
            // Not characters at all: XML refuses them, and a JSON reader may.
            c if nonchar(c) => {
                out.push('\u{fffd}');
                continue;
            }
            c if is_bidi_control(c) => {
                out.push_str(&format!("<U+{:04X}>", c as u32));
                continue;
            }
            c => {
                out.push(c);
                continue;
            }
        };
        match kind {
            // CSI: parameter and intermediate bytes, then one final byte.
            Some('[' | 'C') => {
                if kind == Some('[') {
                    chars.next();
                }
                while let Some(&n) = chars.peek() {
                    if !(' '..='~').contains(&n) {
                        break;
                    }
                    chars.next();
                    if ('@'..='~').contains(&n) {
                        break;
                    }
                }
            }
            // OSC and the other string sequences: up to BEL or ST (`ESC \`, U+009C), never
            // past the end of the line.
            Some(']' | 'S') => {
                if kind == Some(']') {
                    chars.next();
                }
                while let Some(&n) = chars.peek() {
                    if n == '\n' {
                        break;
                    }
                    chars.next();
                    if n == '\u{7}' || n == '\u{9c}' {
                        break;
                    }
                    if n == '\u{1b}' {
                        if chars.peek() == Some(&'\\') {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            // `ESC x`: intermediate bytes, then one final byte.
            Some(_) => {
                while chars.peek().is_some_and(|n| (' '..='/').contains(n)) {
                    chars.next();
                }
                if chars.peek().is_some_and(|n| ('0'..='~').contains(n)) {
                    chars.next();
                }
            }
            None => {}
        }
    }
    Cow::Owned(out)
}

/// A bidirectional embedding, override or isolate control: text after it may read in another
/// order than it is written (a "Trojan Source" line).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// [`strip_controls`] of an owned string, reusing it when it has no controls.
pub fn without_controls(s: String) -> String {
    match strip_controls(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(t) => t,
    }
}

/// Removes what changes from one run to the next, or from one machine to the next, from a line
/// quoted out of a raw log: device and host addresses, process ids, timestamps and absolute
/// paths (made relative to the repository when `repo_files` names the file).
pub fn scrub(line: &str, repo_files: &[String]) -> String {
    static ADDRESS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(^|[^+0-9A-Za-z_])0x[0-9a-fA-F]{6,}").expect("valid regex"));
    static PID: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(process|pid|PID)( ID)?[ :=]+\d+").expect("valid regex"));
    static TIME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
            .expect("valid regex")
    });
    // A path after a space, a bracket, a quote of either kind (`File "/home/a/x.py"`), a `=`,
    // a comma, or the `:` of a `PATH`-style list; a `file://` URL's path too.
    static PATH: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(^|[\s(\[='"`,:]|file://)(/[A-Za-z0-9._+@-]+(?:/[A-Za-z0-9._+@-]+)+)"#)
            .expect("valid regex")
    });
    let line = line.trim_end_matches(['\r', '\n']);
    let line = ADDRESS.replace_all(line, |c: &Captures| format!("{}0x…", &c[1]));
    let line = PID.replace_all(&line, |c: &Captures| format!("{} <pid>", &c[1]));
    let line = TIME.replace_all(&line, "<time>");
    let line = PATH.replace_all(&line, |c: &Captures| {
        format!("{}{}", &c[1], relative_path(&c[2], repo_files))
    });
    line.into_owned()
}

/// Whether a file as a report shows it (see [`relative_path`]) is one of the run's own input
/// files, not a toolkit or system header.
pub fn is_users_file(file: &str, repo_files: &[String]) -> bool {
    let suffix = format!("/{file}");
    repo_files
        .iter()
        .any(|f| *f == file || f.ends_with(&suffix))
}

/// A path as a report shows it: relative to the repository when it names a repository file,
/// `<toolkit>/include/...` for a CUDA header, otherwise only its last component.
pub fn relative_path(path: &str, repo_files: &[String]) -> String {
    let path = normalize(&path.replace('\\', "/"));
    // A placeholder a capture put in place of a machine path (`<repo>/kernel/x.cu`,
    // `<cuda>/include/crt/mma.hpp`).
    if let Some((_, rest)) = path.strip_prefix('<').and_then(|p| p.split_once(">/")) {
        if path.starts_with("<toolkit>") {
            return path;
        }
        let rest = relative_path(rest, repo_files);
        if repo_files.contains(&rest) {
            return rest;
        }
        return match rest.find("include/") {
            Some(i) if i == 0 || rest[..i].ends_with('/') => format!("<toolkit>/{}", &rest[i..]),
            _ => path,
        };
    }
    if !path.starts_with('/') {
        let path = path.trim_start_matches("./");
        if repo_files.iter().any(|f| f == path) {
            return path.to_string();
        }
        // A bare name the tool printed ("race.cu:12") that names exactly one input.
        let suffix = format!("/{path}");
        let mut matches = repo_files.iter().filter(|f| f.ends_with(&suffix));
        return match (matches.next(), matches.next()) {
            (Some(only), None) => only.clone(),
            _ => path.to_string(),
        };
    }
    let best = repo_files
        .iter()
        .filter(|f| !f.is_empty() && path.ends_with(&format!("/{f}")))
        .max_by_key(|f| f.len());
    if let Some(file) = best {
        return file.clone();
    }
    if let Some(i) = path.find("/include/") {
        return format!("<toolkit>{}", &path[i..]);
    }
    match path.rsplit('/').next() {
        Some(name) if !name.is_empty() => format!("<abs>/{name}"),
        _ => "<abs>".to_string(),
    }
}

/// Collapses `//` and resolves `.` and `..` segments: `<cuda>/bin/..//include/x.h` is
/// `<cuda>/include/x.h`.
fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts
                    .last()
                    .is_some_and(|p| *p != ".." && !p.starts_with('<'))
                {
                    parts.pop();
                } else {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// A number rounded to about three significant digits, without trailing noise.
/// Seconds as "12.3 s" under a minute, else "2 min 5 s" (whole seconds), rounded once: 119.6 s
/// is "2 min 0 s", never "1 min 60 s", and 59.96 s is "1 min 0 s", never "60.0 s".
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "n/a".to_string();
    }
    if (seconds * 10.0).round() < 600.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    format!("{} min {} s", whole / 60, whole % 60)
}

/// Waves of blocks per SM as ncu prints them (two decimals): 0 is under 0.01.
pub fn waves(v: f64) -> String {
    if v < 0.005 {
        "under 0.01".to_string()
    } else {
        sig3(v)
    }
}

pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_string();
    }
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 0.001 {
        format!("{x:.3}")
    } else {
        format!("{x:.1e}")
    }
}

/// A value with a fixed number of decimals, `n/a` when not finite.
pub fn fixed(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "n/a".to_string()
    }
}

/// A float rounded for machine-readable output (JSON): six significant digits at most.
pub fn round_json(x: f64) -> serde_json::Value {
    if !x.is_finite() {
        return serde_json::Value::Null;
    }
    if x == 0.0 {
        return serde_json::json!(0.0);
    }
    let digits = 6 - 1 - x.abs().log10().floor() as i32;
    let factor = 10f64.powi(digits.clamp(-12, 12));
    serde_json::json!((x * factor).round() / factor)
}

/// A count with thousands separators, as the tools print them: `2,457,600,000`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as a report shows them: `0 B`, `512 B`, `24.0 KiB`, `1.5 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS.get(unit).unwrap_or(&"TiB"))
}

/// Escapes a value for a GitHub-flavoured markdown table cell.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Escapes text that comes from a tool, a program or the pipeline (a message, a path, a
/// kernel name) for Markdown outside a code span, so that it reads as written: nothing in it
/// starts emphasis (`__global__`, `T1 *`), an HTML tag (`<toolkit>`, `<__half>`), a link, a
/// code span, strikethrough, math, an entity or a table cell's end. An underscore inside a word
/// (`attention_fwd_f16`) cannot start emphasis and stays as it is. Line breaks become spaces.
/// A URL (`https://...`) becomes an autolink, `<https://...>`, whose text nothing rewrites:
/// escaping its underscores would break the link.
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = url_start(rest) {
        out.push_str(&md_plain(&rest[..at]));
        let url = &rest[at..];
        let len = url
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '`'))
            .unwrap_or(url.len());
        let len = url[..len]
            .trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '\''])
            .len();
        out.push('<');
        out.push_str(&url[..len]);
        out.push('>');
        rest = &url[len..];
    }
    out.push_str(&md_plain(rest));
    out
}

/// Where the first URL in `s` starts: `http://` or `https://` at the start of a word.
fn url_start(s: &str) -> Option<usize> {
    s.match_indices("http").map(|(i, _)| i).find(|&i| {
        let tail = &s[i..];
        let starts_word = s[..i]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '(' | '\'' | '"'));
        starts_word
            && (tail.starts_with("https://") || tail.starts_with("http://"))
            && tail.len() > "https://".len()
    })
}

/// [`md_text`] for text without URLs.
fn md_plain(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|j| chars.get(j));
        let after = chars.get(i + 1);
        let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric());
        match c {
            '\n' | '\r' => out.push(' '),
            '_' if word(before) && word(after) => out.push('_'),
            '&' if !after.is_some_and(|a| a.is_ascii_alphanumeric() || *a == '#') => out.push('&'),
            '\\' | '`' | '*' | '_' | '<' | '[' | '|' | '~' | '$' | '&' => {
                out.push('\\');
                out.push(c);
            }
            // `@user`, `@org/team`: a zero-width joiner after the `@` keeps a pull-request
            // comment from notifying anyone (an address, `a@b.c`, is no mention).
            '@' if !word(before) && word(after) => {
                out.push('@');
                out.push('\u{200d}');
            }
            c => out.push(c),
        }
    }
    out
}

/// Inline Markdown as this crate writes it ([`md_text`], [`md_code`]) back as plain text: code
/// spans without their fences, escapes without their backslash, autolinks without brackets.
pub fn plain_text(md: &str) -> String {
    let chars: Vec<char> = md.chars().collect();
    let mut out = String::with_capacity(md.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' if chars.get(i + 1).is_some_and(|n| n.is_ascii_punctuation()) => {
                out.extend(chars.get(i + 1));
                i += 2;
            }
            '`' => {
                // A code span: its fence, its text (unpadded), the same fence.
                let fence = chars[i..].iter().take_while(|&&x| x == '`').count();
                let body_start = i + fence;
                let close = (body_start..chars.len()).find(|&j| {
                    chars[j..].iter().take_while(|&&x| x == '`').count() == fence
                        && chars.get(j.wrapping_sub(1)) != Some(&'`')
                });
                match close {
                    Some(end) => {
                        let body: String = chars[body_start..end].iter().collect();
                        let unpadded = body
                            .strip_prefix(' ')
                            .and_then(|b| b.strip_suffix(' '))
                            .filter(|b| !b.trim().is_empty())
                            .unwrap_or(&body);
                        out.push_str(unpadded);
                        i = end + fence;
                    }
                    None => {
                        out.extend(&chars[i..body_start]);
                        i = body_start;
                    }
                }
            }
            '<' if chars[i..].iter().collect::<String>().starts_with("<http") => {
                let end = chars[i..].iter().position(|&x| x == '>').map(|p| i + p);
                match end {
                    Some(end) => {
                        out.extend(&chars[i + 1..end]);
                        i = end + 1;
                    }
                    None => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Text as a Markdown code span, fenced with more backticks than it holds in a row (and padded
/// with a space where it starts or ends with one), so any text shows verbatim. Line breaks
/// become spaces; in a table cell, pass the result through [`md_cell`].
pub fn md_code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    if s.is_empty() {
        return String::new();
    }
    let fence = "`".repeat(longest_run(&s, '`') + 1);
    let pad = s.starts_with('`')
        || s.ends_with('`')
        || (s.starts_with(' ') && s.ends_with(' ') && !s.trim().is_empty());
    let pad = if pad { " " } else { "" };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// The fence of a fenced code block quoting `lines`: three backticks, or one more than the
/// longest run of backticks in them, so the quote shows verbatim.
pub fn code_fence(lines: &[String]) -> String {
    let longest = lines.iter().map(|l| longest_run(l, '`')).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// The longest run of `c` in `s`.
fn longest_run(s: &str, c: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// Text for the inside of an HTML element the Markdown writes (a `<summary>`): no Markdown
/// is read there, so code-span backticks go and `<`, `>` and `&` are escaped for HTML.
pub fn html_text(s: &str) -> String {
    xml_escape(&s.replace('`', ""))
}

/// Escapes text for XML attribute values and character data, without terminal escape
/// sequences ([`strip_controls`]).
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in strip_controls(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0, nor U+FFFE and U+FFFF.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => out.push('?'),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The first 16 hex digits of the sha256 of `parts` joined by NUL bytes.
/// A kernel's name for a sentence: a CUTLASS or framework template can run to a thousand
/// characters, so past 60 its outermost template arguments are elided: `device_kernel<…>`.
pub fn short_kernel(name: &str) -> String {
    const MAX: usize = 60;
    if name.chars().count() <= MAX {
        return name.to_string();
    }
    match name.find('<') {
        Some(open) if open > 0 => format!("{}<…>", &name[..open]),
        _ => {
            let mut short: String = name.chars().take(MAX).collect();
            short.push('…');
            short
        }
    }
}

pub fn short_hash(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([0u8]);
        }
        hasher.update(p.as_bytes());
    }
    let digest = hasher.finalize();
    digest
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

/// `a`, `a and b`, `a, b and c`.
pub fn join_words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `1 error`, `2 errors`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The text with its first character in lower case, to continue a sentence with a title.
pub fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The text with its first character in upper case, to start a sentence with a clause.
pub fn uppercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_once() {
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(59.94), "59.9 s");
        assert_eq!(duration(59.96), "1 min 0 s");
        assert_eq!(duration(119.6), "2 min 0 s");
        assert_eq!(duration(125.4), "2 min 5 s");
        assert_eq!(duration(f64::NAN), "n/a");
    }

    #[test]
    fn strip_controls_removes_escape_sequences_and_controls() {
        assert!(matches!(strip_controls("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            strip_controls("\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7}after"),
            "red after"
        );
        assert_eq!(
            strip_controls("a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b"),
            "alinkb"
        );
        assert_eq!(strip_controls("\u{1b}(Bx\u{1b}7y\u{1b}"), "xy");
        assert_eq!(strip_controls("\u{9b}2Jz\u{9d}0;t\u{9c}w\u{85}v"), "zwv");
        assert_eq!(strip_controls("bell\u{7}\rback\u{8}\u{7f}"), "bellback");
        // An unterminated title ends at the line's end, never swallowing the next line.
        assert_eq!(strip_controls("\u{1b}]0;title\nnext"), "\nnext");
        assert_eq!(
            strip_controls("CUDA error: \u{fffd} an illegal memory access"),
            "CUDA error: \u{fffd} an illegal memory access"
        );
    }

    // Hand-written lines in the shape of compute-sanitizer's and ncu's, not tool output: they
    // pin what the scrubber does to each kind of volatile value.
    #[test]
    fn scrub_removes_addresses_paths_and_pids() {
        let files = vec!["kernel/faults/oob.cu".to_string()];
        let line =
            "=========     at attention_fwd_f16+0x1b0 in /opt/checkout/kernel/faults/oob.cu:57";
        assert_eq!(
            scrub(line, &files),
            "=========     at attention_fwd_f16+0x1b0 in kernel/faults/oob.cu:57"
        );
        let line = "=========     Address 0x7f3c5e000200 is 0 bytes after the nearest allocation";
        assert_eq!(
            scrub(line, &files),
            "=========     Address 0x… is 0 bytes after the nearest allocation"
        );
        assert_eq!(
            scrub("==PROF== Connected to process 41234 (/usr/bin/x)", &files),
            "==PROF== Connected to process <pid> (<abs>/x)"
        );
        assert_eq!(
            scrub(
                "warning: /usr/local/cuda/include/crt/mma.hpp(91): Warning",
                &files
            ),
            "warning: <toolkit>/include/crt/mma.hpp(91): Warning"
        );
        // Paths in a traceback's double quotes, a file URL and a PATH-style list.
        assert_eq!(
            scrub(
                r#"  File "/home/alice/proj/kernel/faults/oob.cu", line 3"#,
                &files
            ),
            r#"  File "kernel/faults/oob.cu", line 3"#
        );
        let said = scrub("see file:///home/alice/notes/run.txt", &files);
        assert!(!said.contains("alice"), "{said}");
        let said = scrub("PATH=/usr/bin:/home/alice/.local/bin:/opt/x/bin", &files);
        assert!(!said.contains("alice"), "{said}");
        assert_eq!(
            relative_path("<cuda>/bin/..//include/crt/mma.hpp", &files),
            "<toolkit>/include/crt/mma.hpp"
        );
        assert_eq!(
            relative_path("<repo>/kernel/faults/oob.cu", &files),
            "kernel/faults/oob.cu"
        );
        assert_eq!(relative_path("oob.cu", &files), "kernel/faults/oob.cu");
        assert_eq!(
            relative_path(
                "/usr/local/cuda/bin/../targets/x86_64-linux/include/crt/mma.hpp",
                &files
            ),
            "<toolkit>/include/crt/mma.hpp"
        );
    }

    #[test]
    fn numbers_round_for_reports() {
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(1234.5), "1234");
        assert_eq!(sig3(0.01234), "0.012");
        assert_eq!(sig3(0.000123), "1.2e-4");
        assert_eq!(round_json(123.456789), serde_json::json!(123.457));
        assert_eq!(bytes(24576), "24.0 KiB");
    }

    #[test]
    fn mentions_bidi_controls_and_noncharacters_are_made_inert() {
        assert_eq!(md_text("ask @octocat"), "ask @\u{200d}octocat");
        assert_eq!(md_text("mail a@b.example"), "mail a@b.example");
        assert_eq!(md_text("a lone @ sign"), "a lone @ sign");
        assert_eq!(strip_controls("x\u{202e}y\u{2066}z"), "x<U+202E>y<U+2066>z");
        assert_eq!(strip_controls("a\u{ffff}b"), "a\u{fffd}b");
        assert_eq!(xml_escape("a\u{fffe}b"), "a\u{fffd}b");
    }

    #[test]
    fn plain_text_undoes_the_markdown_this_crate_writes() {
        for text in [
            "Invalid __local__ read of size 16 at *p[3] & <x>",
            "a `quoted` word, a back\\slash, 50% | 1_000 ~ $5",
            "see https://docs.nvidia.com/cuda/ for more",
        ] {
            assert_eq!(plain_text(&md_text(text)), text);
        }
        assert_eq!(plain_text(&md_code("Q_reg[i]")), "Q_reg[i]");
        assert_eq!(plain_text(&md_code("a `b` c")), "a `b` c");
        assert_eq!(
            plain_text(&format!(
                "Use {} at {}.",
                md_code("__syncthreads()"),
                md_text("a.cu:20")
            )),
            "Use __syncthreads() at a.cu:20."
        );
    }

    #[test]
    fn markdown_escaping_keeps_tool_text_as_written() {
        assert_eq!(
            md_text("Invalid __global__ read at <toolkit>/include/x.h"),
            "Invalid \\_\\_global\\_\\_ read at \\<toolkit>/include/x.h"
        );
        assert_eq!(md_text("attention_fwd_f16"), "attention_fwd_f16");
        assert_eq!(
            md_text("f(const void *, int) [4] a|b ~x~ $y$ &amp; & `z`"),
            "f(const void \\*, int) \\[4] a\\|b \\~x\\~ \\$y\\$ \\&amp; & \\`z\\`"
        );
        assert_eq!(md_text("two\nlines"), "two lines");
        assert_eq!(md_code("__syncthreads()"), "`__syncthreads()`");
        assert_eq!(md_code("a `b` c"), "``a `b` c``");
        assert_eq!(md_code("`b`"), "`` `b` ``");
        assert_eq!(code_fence(&["x ``` y".to_string()]), "````".to_string());
        assert_eq!(
            html_text("Check `k<4>` & more"),
            "Check k&lt;4&gt; &amp; more"
        );
    }
}
