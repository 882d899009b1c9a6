//! Streaming line splitting over any [`BufRead`], without a copy for lines that sit whole in the
//! reader's buffer. Lines lose their `\n` and `\r\n` endings; invalid UTF-8 is replaced.

use std::borrow::Cow;
use std::io::{self, BufRead};

/// Longest line kept; the rest of a longer line (binary garbage, a runaway progress bar) is
/// dropped so memory never grows with the input.
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// Calls `f` with every line of `reader`, in order.
///
/// Each buffer the reader fills is validated as UTF-8 once, up to its last newline, and split
/// in place; only a line that straddles two buffers is copied.
pub(crate) fn for_each_line<R: BufRead>(mut reader: R, mut f: impl FnMut(&str)) -> io::Result<()> {
    let mut carry: Vec<u8> = Vec::new();
    // True while the tail of an over-long line is being skipped.
    let mut overflow = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if !carry.is_empty() {
                emit(&carry, &mut f);
            }
            return Ok(());
        }
        let len = buf.len();
        let Some(last) = memchr::memrchr(b'\n', buf) else {
            overflow |= append(&mut carry, buf);
            reader.consume(len);
            continue;
        };
        let mut start = 0;
        if !carry.is_empty() || overflow {
            // The line that began in an earlier buffer ends at the first newline here.
            let first = memchr::memchr(b'\n', buf).unwrap_or(last);
            append(&mut carry, buf.get(..first).unwrap_or_default());
            emit(&carry, &mut f);
            carry.clear();
            overflow = false;
            start = first + 1;
        }
        // Lines wholly inside this buffer, when any: `start..last`, newline-separated.
        let whole = if start <= last {
            buf.get(start..last)
        } else {
            None
        };
        match whole.map(std::str::from_utf8) {
            None => {}
            Some(Ok(text)) => {
                let mut from = 0;
                for nl in memchr::memchr_iter(b'\n', text.as_bytes()) {
                    emit_str(text.get(from..nl).unwrap_or(""), &mut f);
                    from = nl + 1;
                }
                emit_str(text.get(from..).unwrap_or(""), &mut f);
            }
            Some(Err(_)) => {
                for line in whole.unwrap_or_default().split(|&b| b == b'\n') {
                    emit(line, &mut f);
                }
            }
        }
        overflow |= append(&mut carry, buf.get(last + 1..).unwrap_or_default());
        reader.consume(len);
    }
}

/// Appends to `carry` up to [`MAX_LINE`] bytes; returns true when something was dropped.
fn append(carry: &mut Vec<u8>, bytes: &[u8]) -> bool {
    let room = MAX_LINE.saturating_sub(carry.len());
    let take = bytes.len().min(room);
    carry.extend_from_slice(bytes.get(..take).unwrap_or_default());
    take < bytes.len()
}

fn emit(line: &[u8], f: &mut impl FnMut(&str)) {
    let line = line.get(..MAX_LINE + 1).unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok(s) => emit_str(s, f),
        Err(_) => {
            let s: Cow<'_, str> = String::from_utf8_lossy(line);
            emit_str(&s, f)
        }
    }
}

fn emit_str(line: &str, f: &mut impl FnMut(&str)) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.len() <= MAX_LINE {
        f(line);
        return;
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    f(line.get(..end).unwrap_or(""));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], capacity: usize) -> Vec<String> {
        let reader = io::BufReader::with_capacity(capacity, input);
        let mut out = Vec::new();
        for_each_line(reader, |l| out.push(l.to_string())).unwrap();
        out
    }

    #[test]
    fn splits_across_buffer_boundaries_and_strips_crlf() {
        let input = b"alpha\r\nbeta\n\ngamma";
        for capacity in [1, 2, 3, 7, 64] {
            assert_eq!(lines(input, capacity), ["alpha", "beta", "", "gamma"]);
        }
    }

    #[test]
    fn caps_overlong_lines() {
        let mut input = vec![b'x'; MAX_LINE * 3];
        input.extend_from_slice(b"\nnext\n");
        let out = lines(&input, 4096);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), MAX_LINE);
        assert_eq!(out[1], "next");
    }

    #[test]
    fn replaces_invalid_utf8() {
        assert_eq!(lines(b"a\xffb\n", 16), ["a\u{fffd}b"]);
    }
}
