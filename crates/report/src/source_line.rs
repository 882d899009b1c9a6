//! Reading a line of the user's own source (kept by the runner at each site a tool named,
//! `Stage::site_lines`): which array an indexed access on it reads or writes. Source text, not
//! tool output: the tool says where, the line says what.

/// The array a line indexes: for a write, the indexed name on the left of its assignment
/// (`Q_reg[row][d] = val.x;` writes `Q_reg`); for a read, the first indexed name (on the right
/// of an assignment when there is one). `None` when the line indexes nothing.
pub fn indexed_array(line: &str, write: bool) -> Option<String> {
    let code = line.split("//").next().unwrap_or(line);
    let (lhs, rhs) = match assignment(code) {
        Some(at) => (&code[..at], &code[at + 1..]),
        None => (code, code),
    };
    first_indexed(if write { lhs } else { rhs }).or_else(|| first_indexed(code))
}

/// Where a plain assignment's `=` is (not `==`, `<=`, `>=`, `!=`; a compound `+=` counts).
fn assignment(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    (0..bytes.len()).find(|&i| {
        bytes[i] == b'='
            && bytes.get(i + 1) != Some(&b'=')
            && i.checked_sub(1)
                .and_then(|p| bytes.get(p))
                .is_none_or(|p| !matches!(p, b'=' | b'<' | b'>' | b'!'))
    })
}

/// The first identifier directly followed by `[`.
fn first_indexed(code: &str) -> Option<String> {
    let bytes = code.as_bytes();
    let open = (0..bytes.len()).find(|&i| {
        bytes[i] == b'['
            && i.checked_sub(1)
                .and_then(|p| bytes.get(p))
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    })?;
    let start = code[..open]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |p| p + 1);
    let name = &code[start..open];
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_array_a_line_writes_or_reads() {
        let line = "Q_reg[row_start + local_row][d] = val.x;";
        assert_eq!(indexed_array(line, true).as_deref(), Some("Q_reg"));
        let read = "float right = in[row * cols + c + 1];";
        assert_eq!(indexed_array(read, false).as_deref(), Some("in"));
        let both = "out[i] = in[i % n] * factor;";
        assert_eq!(indexed_array(both, true).as_deref(), Some("out"));
        assert_eq!(indexed_array(both, false).as_deref(), Some("in"));
        assert_eq!(
            indexed_array("acc += s_tile[ty][k] * b;", false).as_deref(),
            Some("s_tile")
        );
        assert_eq!(indexed_array("if (a <= b) return;", true), None);
    }
}
