//! A kernel's identity across tools: the one name ptxas, compute-sanitizer, Nsight Compute and
//! the harness all spell their own way.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::LazyLock;

use regex::Regex;

/// The name a kernel is matched by across tools: the demangled name without return type,
/// parameter list, namespace qualifiers, whitespace or C-style casts in template arguments.
/// ptxas's `void ns::k<float, 4>(float*, int)`, compute-sanitizer's
/// `void ns::k<float, (int)4>(T1 *, int)` and Nsight Compute's `void k<float, 4>(T1 *, int)`
/// all are `k<float,4>`.
///
/// Made only by [`KernelId::of`]. The join (`join`) makes one for every finding,
/// kernel view, result and metric it indexes, so rules compare these instead of normalising the
/// tools' strings again.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct KernelId(String);

impl KernelId {
    /// The identity of a kernel as any tool spells it.
    pub fn of(name: &str) -> KernelId {
        // A C-style cast of a template argument, `(int)4` or `(cute::GMMA::Major)0`, to the
        // value alone, as Nsight Compute prints it.
        static CAST: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\(\s*[A-Za-z_][\w:]*(?:\s+[A-Za-z_][\w:]*)*\s*\)\s*(-?[0-9])")
                .expect("valid regex")
        });
        // A namespace qualifier inside the template arguments (`cutlass::gemm::GemmUniversal`,
        // `at::ReduceOp`): Nsight Compute's details page drops them, its source page and the
        // compiler keep them.
        static QUALIFIER: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"(?:\(anonymous namespace\)|\b[A-Za-z_]\w*)::").expect("valid regex")
        });
        let name = name.trim();
        let mut depth = 0i32;
        let mut end = name.len();
        for (i, c) in name.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                // `(anonymous namespace)::` qualifies the name; it does not open the
                // parameter list.
                '(' if depth <= 0 && i > 0 && !name[i..].starts_with("(anonymous namespace)") => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let head = name.get(..end).unwrap_or(name).trim();
        // The return type, when present, is separated from the name by a space outside
        // templates; namespace qualifiers end in `::` outside templates.
        let mut depth = 0i32;
        let mut start = 0;
        let bytes = head.as_bytes();
        for (i, c) in head.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                ' ' if depth <= 0 => start = i + 1,
                ':' if depth <= 0 && bytes.get(i + 1) == Some(&b':') => start = i + 2,
                _ => {}
            }
        }
        // Numba's ABI tags after a kernel's Python name: compute-sanitizer's
        // `block_sum[abi:v1,cw51c...]`, Nsight Compute's `block_sum[v1,cw51c...]`, and the
        // SASS's demangled `block_sum[abi:v1][abi:cw51c...]`.
        static NUMBA_ABI: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"(?:\[(?:abi:)?v\d+,\w+\]|\[abi:v\d+\]\[abi:\w+\])$").expect("valid regex")
        });
        let base = head.get(start..).unwrap_or(head);
        let base = NUMBA_ABI.replace(base, "");
        let base = QUALIFIER.replace_all(&base, "");
        let base = squeeze_spaces(&CAST.replace_all(&base, "$1"));
        KernelId(bools_as_digits(&base))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Deref for KernelId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for KernelId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Sets and maps keyed by id are looked up by `&str` too (the order and hash are the string's).
impl Borrow<str> for KernelId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<KernelId> for String {
    fn from(id: KernelId) -> String {
        id.0
    }
}

impl PartialEq<str> for KernelId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for KernelId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for KernelId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

/// Whitespace dropped where it separates nothing (`T1 *`, `<float, 4>`), one space kept
/// between two words (`unsigned int`, `void at::f`, `const at::Tensor&`): tools differ in the
/// first, never in the second, and a name without it reads `unsignedint`.
fn squeeze_spaces(name: &str) -> String {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.chars() {
        if c.is_whitespace() {
            gap = true;
            continue;
        }
        if gap && word(c) && out.chars().next_back().is_some_and(word) {
            out.push(' ');
        }
        gap = false;
        out.push(c);
    }
    out
}

/// A `bool` template argument as a digit, the way Nsight Compute prints it (`reduce6<int, 256,
/// 1>`), where the compiler's demangler says `true` (`reduce6<int, 256, true>`) and a sanitizer
/// `(bool)1`: one instantiation, one name.
fn bools_as_digits(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while !rest.is_empty() {
        let at_argument = out.ends_with(['<', ',']);
        let word = ["true", "false"].into_iter().find(|w| {
            at_argument && rest.starts_with(w) && rest[w.len()..].starts_with([',', '>'])
        });
        match word {
            Some(w) => {
                out.push(if w == "true" { '1' } else { '0' });
                rest = &rest[w.len()..];
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numba's kernel as racecheck, Nsight Compute and the SASS named it (`examples/numba`, on an
    /// H200):
    /// the Python function's name.
    #[test]
    fn a_numba_kernel_is_its_python_functions_name() {
        let tag = "v1,cw51cXTLSUwv1sDUaKthqaNgoKmjgMVuW1AiA8rAEg2UjxRKtuAI0FEA2gSVRE8cSMKQdIgkgJq2YBJIfrWtVofFgLqVAjQm1YGSQJ5xrSYA";
        let sanitizer = format!(
            "__main__::block_sum[abi:{tag}](Array<float, (int)1, C, mutable, aligned>, \
             Array<float, (int)1, C, mutable, aligned>)"
        );
        let ncu = format!(
            "block_sum[{tag}](Array<float, 1, C, mutable, aligned>, Array<float, 1, C, mutable, \
             aligned>)"
        );
        // cuobjdump's, demangled, from the cubin `@cuda.jit(cache=True)` keeps.
        let (v, hash) = tag.split_once(',').expect("two tags");
        let sass = format!(
            "__main__::block_sum[abi:{v}][abi:{hash}](Array<float, 1, C, mutable, aligned>, \
             Array<float, 1, C, mutable, aligned>)"
        );
        assert_eq!(KernelId::of(&sanitizer), "block_sum");
        assert_eq!(KernelId::of(&ncu), "block_sum");
        assert_eq!(KernelId::of(&sass), "block_sum");
    }

    #[test]
    fn kernel_names_match_without_signature() {
        assert_eq!(
            KernelId::of("void attention_fwd_f16(const void*, int)"),
            "attention_fwd_f16"
        );
        assert_eq!(KernelId::of("attention_fwd_f16"), "attention_fwd_f16");
        assert_eq!(KernelId::of("void k<64, 128>(float*)"), "k<64,128>");
        assert_eq!(
            KernelId::of("void exhibit::faults::scale_tail<float, 4>(float*, int, float)"),
            KernelId::of("void scale_tail<float, (int)4>(T1 *, int, T1)")
        );
        assert_ne!(
            KernelId::of("attention_fwd_f16"),
            KernelId::of("attention_fwd_bf16")
        );
        // A bool argument: `(bool)1` (sanitizers), `true` (the compiler's demangler) and `1`
        // (Nsight Compute, cuda-samples' reduce6 on an H100) are one instantiation.
        assert_eq!(KernelId::of("k<(bool)1>").to_string(), "k<1>");
        assert_eq!(
            KernelId::of("void reduce6<int, 256, 1>(T1 *, T1 *, unsigned int)"),
            KernelId::of("void reduce6<int, 256, true>(int*, int*, unsigned int)")
        );
        assert_eq!(KernelId::of("k<falsey,true>").to_string(), "k<falsey,1>");
        // Spaces between two words stay; the others go.
        assert_eq!(
            KernelId::of(
                "void at::reduce_kernel<512, 1, at::ReduceOp<float, unsigned int, 4>>(T3)"
            )
            .to_string(),
            "reduce_kernel<512,1,ReduceOp<float,unsigned int,4>>"
        );
        // CUTLASS's Hopper GEMM as the compiler and the source page spell it (qualified,
        // enum arguments cast) and as Nsight Compute's details page does (neither): one kernel.
        assert_eq!(
            KernelId::of(
                "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, \
                 int, int>, cute::C<(int)4>, cute::MMA_64x128x16_F32F16F16_SS<\
                 (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1>, \
                 cutlass::epilogue::thread::LinearCombination<cutlass::half_t, 1, float, \
                 (cutlass::FloatRoundStyle)2>>>(T1::Params)"
            ),
            KernelId::of(
                "void device_kernel<GemmUniversal<tuple<int, int, int>, C<4>, \
                 MMA_64x128x16_F32F16F16_SS<0, 1>, LinearCombination<half_t, 1, float, 2>>>\
                 (T1::Params)"
            )
        );
        assert_eq!(
            KernelId::of("void k<unsigned int, 4>(T1 *)"),
            KernelId::of("void k<unsigned  int,4>(unsigned int*)")
        );
        // An anonymous namespace is a qualifier, not the parameter list.
        assert_eq!(
            KernelId::of(
                "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, \
                 float>(int, float, const T1 *, T2 *)"
            )
            .to_string(),
            "vectorized_layer_norm_kernel<float,float>"
        );
    }
}
