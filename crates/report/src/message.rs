//! A diagnosis's words as data: a [`Message`] is a list of [`Part`]s, each with its style (the
//! project's own words, code, a place in the source, a measured figure, words quoted from a
//! tool). A rule builds one with [`msg!`]; each emitter renders it for its format: Markdown
//! ([`Message::markdown`]: code spans, tool text escaped), plain text ([`Message::plain`]:
//! SARIF, JUnit, a terminal). No rule writes Markdown.

use serde::{Serialize, Serializer};

use crate::text::{md_code, md_text};

/// One styled piece of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The project's own words.
    Text(String),
    /// An identifier, expression, type or command: a kernel's name, `__syncthreads()`, `-G`.
    Code(String),
    /// A place in the source or a file: `attention.cu:82`, `build/ptxas.log`.
    Path(String),
    /// A measured or computed figure with its unit: `4.2 GB/s`, `3 of 8`.
    Figure(String),
    /// Words quoted from a tool or the program, as written: never read as markup.
    Quote(String),
}

impl Part {
    fn markdown(&self, out: &mut String) {
        match self {
            Part::Text(s) | Part::Figure(s) => out.push_str(s),
            Part::Code(s) | Part::Path(s) => out.push_str(&md_code(s)),
            Part::Quote(s) => out.push_str(&md_text(s)),
        }
    }

    fn plain(&self, out: &mut String) {
        match self {
            Part::Text(s) | Part::Figure(s) | Part::Code(s) | Part::Path(s) => {
                out.push_str(&s.replace(['\n', '\r'], " "))
            }
            Part::Quote(s) => out.push_str(&s.replace(['\n', '\r'], " ")),
        }
    }

    fn text(&self) -> &str {
        match self {
            Part::Text(s) | Part::Code(s) | Part::Path(s) | Part::Figure(s) | Part::Quote(s) => s,
        }
    }
}

/// Code: `code(kernel)` in a [`msg!`].
pub fn code(s: impl Into<String>) -> Part {
    Part::Code(s.into())
}

/// A place or file: `path(location)` in a [`msg!`].
pub fn path(s: impl ToString) -> Part {
    Part::Path(s.to_string())
}

/// A figure with its unit: `figure(format!("{gbps:.1} GB/s"))` in a [`msg!`].
pub fn figure(s: impl Into<String>) -> Part {
    Part::Figure(s.into())
}

/// Words quoted from a tool or the program: `quote(&finding.message)` in a [`msg!`].
pub fn quote(s: impl Into<String>) -> Part {
    Part::Quote(s.into())
}

/// A diagnosis's title, note, help, span label or evidence summary: styled parts in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message(Vec<Part>);

impl Message {
    /// An empty message.
    pub fn new() -> Message {
        Message(Vec::new())
    }

    /// A message from a template and its arguments (what [`msg!`] expands to): the template's
    /// words are [`Part::Text`], a word between backticks in it is [`Part::Code`], and each
    /// `{}` takes the next argument's parts (`{{` and `}}` are braces).
    pub fn template(template: &str, args: Vec<Message>) -> Message {
        let mut out = Message::new();
        let mut args = args.into_iter();
        let mut text = String::new();
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    text.push('}');
                }
                '{' if chars.peek() == Some(&'}') => {
                    chars.next();
                    out.push(Part::Text(std::mem::take(&mut text)));
                    if let Some(arg) = args.next() {
                        out.append(arg);
                    }
                }
                '`' => {
                    let span: String = chars.by_ref().take_while(|&c| c != '`').collect();
                    out.push(Part::Text(std::mem::take(&mut text)));
                    out.push(Part::Code(span));
                }
                c => text.push(c),
            }
        }
        out.push(Part::Text(text));
        debug_assert!(
            args.next().is_none(),
            "more arguments than `{{}}` in {template:?}"
        );
        out
    }

    /// Appends a part, joining it to the last one where both are the project's own words.
    pub fn push(&mut self, part: Part) {
        if part.text().is_empty() {
            return;
        }
        match (self.0.last_mut(), part) {
            (Some(Part::Text(last)), Part::Text(s)) => last.push_str(&s),
            (_, part) => self.0.push(part),
        }
    }

    /// Appends another message's parts.
    pub fn append(&mut self, other: impl ToMessage) {
        for part in other.to_message().0 {
            self.push(part);
        }
    }

    /// The message followed by another: `a.then(b)`.
    pub fn then(mut self, other: impl ToMessage) -> Message {
        self.append(other);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn parts(&self) -> &[Part] {
        &self.0
    }

    /// Replaces each code part `f` gives a replacement for: one spelling of an identifier for
    /// another (a CUDA C barrier as Numba writes it).
    pub fn map_code(&mut self, f: impl Fn(&str) -> Option<&'static str>) {
        for part in &mut self.0 {
            if let Part::Code(c) = part
                && let Some(to) = f(c)
            {
                *c = to.to_string();
            }
        }
    }

    /// As inline Markdown: code and places in code spans, quoted words escaped.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for part in &self.0 {
            part.markdown(&mut out);
        }
        out
    }

    /// As plain text, for formats that render no Markdown (SARIF, JUnit).
    pub fn plain(&self) -> String {
        let mut out = String::new();
        for part in &self.0 {
            part.plain(&mut out);
        }
        out
    }

    /// The message without the full stop it may end with.
    pub fn without_full_stop(&self) -> Message {
        let mut out = self.clone();
        if let Some(Part::Text(last)) = out.0.last_mut() {
            let kept = last.trim_end_matches('.').len();
            last.truncate(kept);
            if last.is_empty() {
                out.0.pop();
            }
        }
        out
    }

    /// Its first sentence, without the full stop: up to the first ". " in its own words (a
    /// full stop inside code or quoted text ends nothing).
    pub fn first_sentence(&self) -> Message {
        let mut out = Message::new();
        for part in &self.0 {
            match part {
                Part::Text(s) if s.contains(". ") => {
                    let head = &s[..s.find(". ").unwrap_or(s.len())];
                    out.push(Part::Text(head.to_string()));
                    return out;
                }
                part => out.push(part.clone()),
            }
        }
        out.without_full_stop()
    }

    /// The message after `prefix`, where its own words begin with it.
    pub fn strip_prefix(&self, prefix: &str) -> Option<Message> {
        let Part::Text(first) = self.0.first()? else {
            return None;
        };
        let rest = first.strip_prefix(prefix)?;
        let mut out = Message::new();
        out.push(Part::Text(rest.to_string()));
        for part in &self.0[1..] {
            out.push(part.clone());
        }
        Some(out)
    }

    /// The message with its first letter in upper case, where it begins with its own words.
    pub fn capitalised(&self) -> Message {
        let mut out = self.clone();
        if let Some(Part::Text(first)) = out.0.first_mut() {
            *first = crate::text::uppercase_first(first);
        }
        out
    }

    /// The message with its first letter in lower case, where it begins with its own words.
    pub fn uncapitalised(&self) -> Message {
        let mut out = self.clone();
        if let Some(Part::Text(first)) = out.0.first_mut() {
            *first = crate::text::lowercase_first(first);
        }
        out
    }

    /// Messages as a list in words: "a", "a and b", "a, b and c"; each named once (two sites
    /// that read the same are one site: never "at a.cu:12 and a.cu:12").
    pub fn words(items: Vec<Message>) -> Message {
        let mut unique: Vec<Message> = Vec::with_capacity(items.len());
        for m in items {
            if !unique.contains(&m) {
                unique.push(m);
            }
        }
        let n = unique.len();
        let mut out = Message::new();
        for (i, m) in unique.into_iter().enumerate() {
            if i > 0 {
                out.push(Part::Text(
                    if i + 1 == n { " and " } else { ", " }.to_string(),
                ));
            }
            out.append(m);
        }
        out
    }

    /// Messages joined by `sep` (the project's own words).
    pub fn join(messages: impl IntoIterator<Item = Message>, sep: &str) -> Message {
        let mut out = Message::new();
        for (i, m) in messages.into_iter().enumerate() {
            if i > 0 {
                out.push(Part::Text(sep.to_string()));
            }
            out.append(m);
        }
        out
    }
}

impl From<Part> for Message {
    fn from(part: Part) -> Message {
        let mut m = Message::new();
        m.push(part);
        m
    }
}

/// As inline Markdown, the report's text form (what [`Message::markdown`] gives).
impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.markdown())
    }
}

/// A message equals its Markdown text.
impl PartialEq<&str> for Message {
    fn eq(&self, other: &&str) -> bool {
        self.markdown() == *other
    }
}

/// An argument of [`msg!`]: the project's own words (`String`, `&str`), a styled [`Part`] or
/// another message.
pub trait ToMessage {
    fn to_message(self) -> Message;
}

impl ToMessage for Message {
    fn to_message(self) -> Message {
        self
    }
}

impl ToMessage for &Message {
    fn to_message(self) -> Message {
        self.clone()
    }
}

impl ToMessage for Part {
    fn to_message(self) -> Message {
        self.into()
    }
}

impl ToMessage for String {
    fn to_message(self) -> Message {
        Part::Text(self).into()
    }
}

impl ToMessage for &String {
    fn to_message(self) -> Message {
        Part::Text(self.clone()).into()
    }
}

impl ToMessage for &str {
    fn to_message(self) -> Message {
        Part::Text(self.to_string()).into()
    }
}

/// JSON carries a message as its inline Markdown, the report's documented text format.
impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.markdown())
    }
}

/// A [`Message`] from a template: its words, `code` between backticks, and `{}` for each
/// argument (any [`ToMessage`]: a [`Part`] such as [`code`] or [`quote`], the project's own
/// words as a `String`, another message).
///
/// `msg!("the kernel {} reads `smem` past its end", code(kernel))`
macro_rules! msg {
    ($template:literal $(, $arg:expr)* $(,)?) => {
        $crate::message::Message::template(
            $template,
            vec![$($crate::message::ToMessage::to_message($arg)),*],
        )
    };
}
pub(crate) use msg;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_in_words_names_each_item_once() {
        let at = |l: &str| msg!("{}", path(l));
        let sites = Message::words(vec![at("a.cu:12"), at("a.cu:12"), at("a.cu:14")]);
        assert_eq!(sites.markdown(), "`a.cu:12` and `a.cu:14`");
        assert_eq!(
            Message::words(vec![at("a.cu:12"), at("a.cu:12")]).markdown(),
            "`a.cu:12`"
        );
    }

    #[test]
    fn a_template_styles_its_code_and_takes_its_arguments_in_order() {
        let m = msg!(
            "a `__syncthreads()` in {} at {}, {} {{x}}",
            code("attention_fwd"),
            path("a.cu:12"),
            quote("Invalid __shared__ read of size 4")
        );
        assert_eq!(
            m.markdown(),
            "a `__syncthreads()` in `attention_fwd` at `a.cu:12`, Invalid \\_\\_shared\\_\\_ \
             read of size 4 {x}"
        );
        assert_eq!(
            m.plain(),
            "a __syncthreads() in attention_fwd at a.cu:12, Invalid __shared__ read of size 4 {x}"
        );
    }

    #[test]
    fn words_join_into_one_part_and_empty_parts_vanish() {
        let m = msg!("a {}{} b", "x", String::new()).then(" c");
        assert_eq!(m.parts(), &[Part::Text("a x b c".into())]);
        assert!(msg!("").is_empty());
    }
}
