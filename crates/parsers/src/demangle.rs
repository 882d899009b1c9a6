//! Itanium C++ name demangling for kernel names.

/// Longest mangled name handed to the demangler; longer ones are kept as they are.
const MAX_MANGLED: usize = 4096;

/// Returns the demangled form of `mangled` and whether demangling applied. `extern "C"` names
/// and anything the demangler rejects come back unchanged.
pub(crate) fn demangle(mangled: &str) -> (String, bool) {
    if !mangled.starts_with("_Z") || mangled.len() > MAX_MANGLED {
        return (mangled.to_string(), false);
    }
    match cpp_demangle::Symbol::new(mangled.as_bytes()).map(|s| s.demangle()) {
        Ok(Ok(name)) if !name.is_empty() => (name, true),
        _ => (mangled.to_string(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_templates_and_keeps_c_names() {
        assert_eq!(
            demangle("_ZN7exhibit6faults10scale_tailIfLi4EEEvPT_iS2_").0,
            "void exhibit::faults::scale_tail<float, 4>(float*, int, float)"
        );
        assert_eq!(
            demangle("attention_fwd_f16"),
            ("attention_fwd_f16".to_string(), false)
        );
        assert!(!demangle("_Z!!garbage").1);
    }
}
