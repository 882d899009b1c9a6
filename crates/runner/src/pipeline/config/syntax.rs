//! Reading the file safely and saying where it is wrong: size, nesting and alias bounds, YAML errors in plain words with their line, and maps that refuse duplicate keys.

use super::*;

pub(crate) fn syntax_error(path: &Path, source: &str, error: &yaml_serde::Error) -> ConfigError {
    let text = error.to_string();
    // libyaml's reader reports bad characters by byte offset, with no line.
    if let Some((head, tail)) = text.split_once(" at position ") {
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(offset) = digits.parse::<usize>() {
            let (line, column) = line_column(&source.as_bytes()[..offset.min(source.len())]);
            return ConfigError::Syntax {
                path: path.to_path_buf(),
                line,
                column,
                message: head.to_string(),
            };
        }
    }
    match error.location() {
        Some(location) => {
            // The library appends " at line L column C"; the location leads the message instead.
            let mut message = plain_words(&without_positions(&text));
            let at = source
                .lines()
                .nth(location.line().saturating_sub(1))
                .and_then(|l| l.chars().nth(location.column().saturating_sub(1)));
            if message.contains("cannot start any token") && at == Some('\t') {
                message.push_str(": a tab; YAML indents with spaces");
            }
            if let Some(lines) = duplicate_lines(&message, source, location.line()) {
                message.push_str(&format!(" (lines {lines})"));
            }
            ConfigError::Syntax {
                path: path.to_path_buf(),
                line: location.line(),
                column: location.column(),
                message,
            }
        }
        None => ConfigError::Invalid {
            path: path.to_path_buf(),
            message: text,
        },
    }
}

/// The message without the positions libyaml writes into it (" at line L column C"): the
/// error's own location leads the message instead.
pub(crate) fn without_positions(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some((head, tail)) = rest.split_once(" at line ") {
        out.push_str(head);
        let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let line = digits(tail);
        let after_line = &tail[line..];
        match after_line.strip_prefix(" column ") {
            Some(col) if line > 0 && digits(col) > 0 => rest = &col[digits(col)..],
            _ => {
                out.push_str(" at line ");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// serde's words for the Rust types it expected, in the pipeline's words.
pub(crate) fn plain_words(message: &str) -> String {
    let message = message
        .replace(
            "expected struct RawPipeline",
            "expected a mapping with `kernel` or `target`, `toolchain`, `matrix`, `cases` and \
             `stages`",
        )
        .replace("expected field identifier", "expected a key name");
    match message.split_once("expected struct ") {
        Some((head, rest)) => {
            let name: String = rest
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            let tail = &rest[name.len()..];
            format!(
                "{head}expected a mapping (the {} section){tail}",
                name.to_lowercase()
            )
        }
        None => message,
    }
}

/// For a duplicate-key error, the lines (from the map's own line on) where that key is written,
/// so the message names both places.
pub(crate) fn duplicate_lines(message: &str, source: &str, from: usize) -> Option<String> {
    let (_, rest) = message
        .split_once("duplicate key `")
        .or_else(|| message.split_once("duplicate field `"))?;
    let key = rest.split_once('`')?.0;
    let found: Vec<String> = source
        .lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .filter(|(_, line)| {
            line.match_indices(key).any(|(at, _)| {
                let before = line.get(..at).unwrap_or("").trim_end();
                let after = line.get(at + key.len()..).unwrap_or("").trim_start();
                after.starts_with(':')
                    && (before.is_empty() || before.ends_with('{') || before.ends_with(','))
            })
        })
        .map(|(i, _)| (i + 1).to_string())
        .take(2)
        .collect();
    (found.len() == 2).then(|| found.join(" and "))
}

/// Finds the line and column of a dotted key such as `stages.memcheck.cases[0]` in block-style
/// YAML: each segment is looked for as `segment:` below the previous one, more indented.
pub(crate) fn locate(text: &str, key: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut indent: Option<usize> = None;
    let mut found = None;
    let segments: Vec<&str> = key.split('.').collect();
    let mut next = 0;
    while next < segments.len() {
        // A name may hold dots (`manifest.json`, `.hidden`): the shortest run of segments that
        // is a key here, else the rest of them.
        let (index, column, used) = (next + 1..=segments.len()).find_map(|end| {
            let joined = segments[next..end].join(".");
            let name = joined.split('[').next().unwrap_or(&joined);
            locate_segment(&lines, from, indent, name).map(|(i, c)| (i, c, end))
        })?;
        found = Some((index + 1, column + 1));
        from = index + 1;
        indent = Some(column);
        next = used;
    }
    found
}

/// The line and column of `name:` from line `from` on, inside the block indented past
/// `indent`, or in a flow mapping on the line before.
pub(crate) fn locate_segment(
    lines: &[&str],
    from: usize,
    indent: Option<usize>,
    name: &str,
) -> Option<(usize, usize)> {
    if name.is_empty() {
        return None;
    }
    lines
        .iter()
        .enumerate()
        .skip(from)
        .take_while(|(i, line)| {
            // Stop at the end of the enclosing block.
            let _ = i;
            indent.is_none_or(|ind| {
                line.trim().is_empty()
                    || line.trim_start().starts_with('#')
                    || line.len() - line.trim_start().len() > ind
            })
        })
        .find_map(|(i, line)| {
            let trimmed = line.trim_start();
            let col = line.len() - trimmed.len();
            let rest = trimmed.strip_prefix(name)?;
            let rest = rest.strip_prefix('"').unwrap_or(rest);
            (rest.starts_with(':') && indent.is_none_or(|ind| col > ind)).then_some((i, col))
        })
        .or_else(|| {
            // A flow mapping on the previous key's line: `seed: { shape: "..." }`.
            let line = lines.get(from.checked_sub(1)?)?;
            let start = indent? + 1;
            let col = line.get(start..)?.find(&format!("{name}:"))? + start;
            let boundary = line[..col].trim_end();
            (boundary.ends_with('{') || boundary.ends_with(',')).then_some((from - 1, col))
        })
}

/// A pipeline file is a few kilobytes; anything past this is refused before parsing.
pub const MAX_PIPELINE_BYTES: u64 = 1 << 20;

/// Flow collections nest a few levels in a pipeline; the YAML parser's time grows with the
/// square of the depth, so deeper ones are refused before it runs.
pub const MAX_NESTING: usize = 64;

/// Reads a pipeline file: a regular file of at most [`MAX_PIPELINE_BYTES`], never a directory,
/// FIFO or device (which could block).
pub(crate) fn read(path: &Path) -> Result<String, ConfigError> {
    let refuse = |message: String| ConfigError::NotAPipeline {
        path: path.to_path_buf(),
        message,
    };
    let read_error = |error| ConfigError::Read {
        path: path.to_path_buf(),
        error,
    };
    let meta = std::fs::metadata(path).map_err(read_error)?;
    if meta.is_dir() {
        return Err(refuse(
            "is a directory; expected a pipeline file (YAML)".into(),
        ));
    }
    if !meta.is_file() {
        return Err(refuse(
            "is not a regular file (a FIFO, socket or device); expected a pipeline file (YAML)"
                .into(),
        ));
    }
    if meta.len() > MAX_PIPELINE_BYTES {
        return Err(refuse(format!(
            "is {} bytes; a pipeline file is at most {MAX_PIPELINE_BYTES} bytes (1 MiB)",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(read_error)?;
    String::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(&e.as_bytes()[..e.utf8_error().valid_up_to()]);
        ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: "not UTF-8 text".into(),
        }
    })
}

/// The 1-based line and column just after `before`.
pub(crate) fn line_column(before: &[u8]) -> (usize, usize) {
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// Refuses flow collections (`[`, `{`) nested deeper than [`MAX_NESTING`], outside quoted
/// scalars and comments. Brackets inside plain scalars count too: a false alarm needs 64 of
/// them unclosed.
pub(crate) fn check_nesting(path: &Path, text: &str) -> Result<(), ConfigError> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    // The byte before, ignoring nothing: quotes open a scalar only after a separator.
    let mut previous = b'\n';
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'#' if previous.is_ascii_whitespace() => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                previous = b'\n';
                continue;
            }
            b'"' | b'\''
                if matches!(previous, b' ' | b'\t' | b'\n' | b'[' | b'{' | b',' | b':') =>
            {
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' if b == b'"' => i += 1,
                        b'\'' if b == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
                        c if c == b => break,
                        _ => {}
                    }
                    i += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    let (line, column) = line_column(&bytes[..i]);
                    return Err(ConfigError::Syntax {
                        path: path.to_path_buf(),
                        line,
                        column,
                        message: format!(
                            "collections nested more than {MAX_NESTING} levels deep; a pipeline \
                             nests a few, so the file is refused before parsing"
                        ),
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = b;
        i += 1;
    }
    Ok(())
}

/// What a pipeline may expand to through its aliases (`&name` ... `*name`): scalar text plus
/// `NODE_BYTES` per node. A pipeline is a few kilobytes; a file of aliases to aliases (or to one
/// long string) can expand to gigabytes, so the expansion is counted, without keeping it, before
/// the pipeline is read.
pub const MAX_EXPANDED_BYTES: usize = 4 << 20;

/// What each node (scalar, sequence, mapping) counts towards [`MAX_EXPANDED_BYTES`].
pub(crate) const NODE_BYTES: usize = 16;

/// Walks the document as the deserializer replays it (aliases expanded) and refuses it once
/// its expansion passes [`MAX_EXPANDED_BYTES`], or the YAML library's own bound on alias
/// repetitions, with the position where it did. Any other error is left to the typed parse,
/// which says it in the pipeline's words.
pub(crate) fn check_expansion(path: &Path, text: &str) -> Result<(), ConfigError> {
    let mut left = MAX_EXPANDED_BYTES;
    let walked =
        Expansion { left: &mut left }.deserialize(yaml_serde::Deserializer::from_str(text));
    let Err(error) = walked else { return Ok(()) };
    let exceeded = left == 0 || error.to_string().contains("repetition limit exceeded");
    if !exceeded {
        return Ok(());
    }
    let message = format!(
        "the document expands to more than {MAX_EXPANDED_BYTES} bytes through its aliases \
         (`*name`); a pipeline is a few kilobytes, so it is refused"
    );
    Err(match error.location() {
        Some(at) => ConfigError::Syntax {
            path: path.to_path_buf(),
            line: at.line(),
            column: at.column(),
            message,
        },
        None => ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        },
    })
}

/// A [`serde::de::DeserializeSeed`] that visits every node and keeps none, counting each
/// against `left`; it fails when `left` runs out (and leaves it at 0).
pub(crate) struct Expansion<'a> {
    left: &'a mut usize,
}

impl Expansion<'_> {
    fn take<E: de::Error>(self, bytes: usize) -> Result<(), E> {
        match self.left.checked_sub(bytes + NODE_BYTES) {
            Some(rest) => {
                *self.left = rest;
                Ok(())
            }
            None => {
                *self.left = 0;
                Err(E::custom("expansion limit"))
            }
        }
    }

    fn again(&mut self) -> Expansion<'_> {
        Expansion {
            left: &mut *self.left,
        }
    }
}

impl<'de> de::DeserializeSeed<'de> for Expansion<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Expansion<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take(0)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take(0)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take(0)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take(0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.take(v.len())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take(0)
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take(0)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.again().take(0)?;
        while seq.next_element_seed(self.again())?.is_some() {}
        Ok(())
    }
    fn visit_map<A: de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.again().take(0)?;
        while map.next_key_seed(self.again())?.is_some() {
            map.next_value_seed(self.again())?;
        }
        Ok(())
    }
    fn visit_enum<A: de::EnumAccess<'de>>(mut self, data: A) -> Result<(), A::Error> {
        // A tagged node (`!tag value`): the tag, then the value.
        let ((), variant) = data.variant_seed(self.again())?;
        de::VariantAccess::newtype_variant_seed(variant, self)
    }
}

/// A semantic error with the line and column of its key, found in the text.
pub(crate) fn located(error: ConfigError, text: &str) -> ConfigError {
    match error {
        ConfigError::Semantic {
            path,
            at: None,
            key,
            message,
        } => ConfigError::Semantic {
            at: locate(text, &key),
            path,
            key,
            message,
        },
        other => other,
    }
}

/// A map that refuses a key given twice (YAML itself lets the last one win silently).
pub(crate) struct UniqueMap<K, V>(pub(crate) BTreeMap<K, V>);

impl<'de, K, V> Deserialize<'de> for UniqueMap<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V2<K, V>(std::marker::PhantomData<(K, V)>);
        impl<'de, K, V> Visitor<'de> for V2<K, V>
        where
            K: Deserialize<'de> + Ord + fmt::Display,
            V: Deserialize<'de>,
        {
            type Value = UniqueMap<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = map.next_key::<K>()? {
                    if out.contains_key(&key) {
                        return Err(de::Error::custom(format!(
                            "duplicate key `{key}`: name each once"
                        )));
                    }
                    let value = map.next_value()?;
                    out.insert(key, value);
                }
                Ok(UniqueMap(out))
            }
        }
        deserializer.deserialize_map(V2(std::marker::PhantomData))
    }
}

/// `deserialize_with` for maps whose keys must be unique.
pub(crate) fn unique<'de, D, K, V>(deserializer: D) -> Result<BTreeMap<K, V>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    UniqueMap::deserialize(deserializer).map(|m| m.0)
}
