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

/// The array an atomic read-modify-write on the line updates: the first argument of its
/// `atomicAdd(...)` (any `atomicXxx`), as `count + i`, `&count[i]` or `count`. `None` when the
/// line calls no atomic.
pub fn atomic_target(line: &str) -> Option<String> {
    let code = line.split("//").next().unwrap_or(line);
    let at = code.find("atomic")?;
    let rest = &code[at + "atomic".len()..];
    let open = rest.find('(')?;
    if !rest[..open]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let arg = rest[open + 1..]
        .trim_start()
        .trim_start_matches('&')
        .trim_start();
    let name: String = arg
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    is_identifier(&name).then_some(name)
}

/// Whether `name` appears on the line as a whole identifier.
pub fn names(line: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(name).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The pointer a line stores one value through, or loads one value from, with no index: `*out =
/// total;`, `out[0] = total;`, Triton's `tl.store(loss_ptr, loss)` (a bare name as the pointer,
/// no offsets added, no `mask=`, no `boundary_check=`). `None` when the access is indexed, or the
/// line is not read as either.
///
/// A bare name in `tl.store` may still hold a block of pointers (`ptrs = base + offs`) or a block
/// pointer: the caller reads it as scalar only where the records agree (one thread per program).
pub fn scalar_pointer(line: &str, write: bool) -> Option<String> {
    let code = line.split("//").next().unwrap_or(line);
    let code = code.split('#').next().unwrap_or(code);
    let op = if write { "tl.store(" } else { "tl.load(" };
    if let Some(at) = code.find(op) {
        let args = &code[at + op.len()..];
        let first = args.split([',', ')']).next()?.trim();
        let keyword = |k: &str| args.contains(k);
        return (is_identifier(first) && !keyword("mask=") && !keyword("boundary_check"))
            .then(|| first.to_string());
    }
    let target = if write {
        &code[..assignment(code)?]
    } else {
        &code[assignment(code)? + 1..]
    };
    // A compound assignment's operator is not part of the target (`*out += x`).
    let target = target
        .trim_end_matches(['+', '-', '*', '/', '|', '&', '^', '%', '<', '>'])
        .trim();
    let target = if write {
        target
    } else {
        target.trim_end_matches(';').trim()
    };
    if let Some(array) = target.strip_suffix("[0]") {
        // The name just before `[0]`, with nothing indexed or called before it on that term.
        let start = array
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |p| p + 1);
        let name = &array[start..];
        let before = array[..start].trim_end();
        let term_start = before.is_empty() || before.ends_with([')', '(', '=', ';', '{']);
        return (is_identifier(name) && term_start).then(|| name.to_string());
    }
    // `*name` as the whole target: after a statement's start or an `if (...)`.
    let star = target.rfind('*')?;
    let name = target[star + 1..].trim();
    let before = target[..star].trim_end();
    let deref = before.is_empty() || before.ends_with([')', '(', '=', ';', '{']);
    (deref && is_identifier(name)).then(|| name.to_string())
}

fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
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

    #[test]
    fn an_atomic_names_the_array_it_updates() {
        let hais = "int _offect = atomicAdd(cuda_primary_absorb_fragment_cnt + nearest_idx, 1);";
        assert_eq!(
            atomic_target(hais).as_deref(),
            Some("cuda_primary_absorb_fragment_cnt")
        );
        assert_eq!(
            atomic_target("atomicMax(&best[row], v);").as_deref(),
            Some("best")
        );
        assert_eq!(atomic_target("total += x; // not atomic"), None);
        assert_eq!(atomic_target("bool atomicity = true;"), None);
        assert!(names("for (int i=0; i<cnt[p]; i++)", "cnt"));
        assert!(!names("for (int i=0; i<cnt2[p]; i++)", "cnt"));
    }

    #[test]
    fn a_scalar_store_names_its_pointer_and_an_indexed_one_names_none() {
        let scalar = |line| scalar_pointer(line, true);
        assert_eq!(
            scalar("if (threadIdx.x == 0) *out = part[0];").as_deref(),
            Some("out")
        );
        assert_eq!(scalar("*out += total;").as_deref(), Some("out"));
        assert_eq!(scalar("sums[0] = total; // once").as_deref(), Some("sums"));
        assert_eq!(
            scalar("tl.store(loss_ptr, loss)").as_deref(),
            Some("loss_ptr")
        );
        // Indexed, offset or masked: not one slot.
        assert_eq!(scalar("out[i] = a[i] * b;"), None);
        assert_eq!(scalar("out[blockIdx.x] = total;"), None);
        assert_eq!(scalar("*(out + i) = x;"), None);
        assert_eq!(scalar("tl.store(Y + cols, y, mask=mask)"), None);
        assert_eq!(scalar("tl.store(y_ptrs, y, mask=cols < n)"), None);
        assert_eq!(
            scalar("tl.store(o_block_ptr, acc, boundary_check=(0, 1))"),
            None
        );
        assert_eq!(scalar("acc = a * b;"), None);
        // A load of one value.
        assert_eq!(
            scalar_pointer("float v = *in;", false).as_deref(),
            Some("in")
        );
        assert_eq!(
            scalar_pointer("x = tl.load(scale_ptr)", false).as_deref(),
            Some("scale_ptr")
        );
        assert_eq!(scalar_pointer("float v = a * b;", false), None);
    }
}
