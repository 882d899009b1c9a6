//! `nvdisasm -gi -c` of a cubin: SASS with its line table. Each function opens with a
//! `//--------------------- .text.NAME ---` banner; a `//## File "PATH", line N` comment gives
//! the source line of the instructions after it; a call is `CALL.ABS.NOINC `(CALLEE)` or
//! `CALL.REL.NOINC `(CALLEE)`. What is kept is where each function calls which: in a `-G` build
//! the toolkit's intrinsics (`nvcuda::wmma::load_matrix_sync`) are functions of their own, and a
//! fault a sanitizer places inside one is the user's call of it.

use crate::demangle::demangle;
use std::collections::BTreeSet;

use crate::model::{CallSite, Format, Inlined, ParsedLog};

/// Parses an `nvdisasm -g` listing line by line.
pub(crate) struct LinesParser {
    log: ParsedLog,
    function: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    instructions: u64,
    seen: BTreeSet<Inlined>,
}

impl LinesParser {
    pub(crate) fn new() -> LinesParser {
        LinesParser {
            log: ParsedLog::new(Format::SassLines, None),
            function: None,
            file: None,
            line: None,
            instructions: 0,
            seen: BTreeSet::new(),
        }
    }

    pub(crate) fn line(&mut self, line: &str) {
        let text = line.trim();
        if let Some(rest) = text.strip_prefix("//---------------------") {
            let section = rest.trim().trim_end_matches('-').trim();
            self.function = section.strip_prefix(".text.").map(|name| demangle(name).0);
            self.file = None;
            self.line = None;
        } else if let Some(rest) = text.strip_prefix("//## File \"") {
            // `//## File "/path/x.cu", line 28` (and, with -gi, `inlined at ...` after it: the
            // first place is the instruction's own).
            if let Some((file, after)) = rest.split_once('"') {
                self.file = Some(file.to_string());
                self.line = line_number(after);
                // `... inlined at "B", line 219`: one level of the inlining.
                if let Some(at) = after.split_once(" inlined at \"").map(|(_, at)| at)
                    && let Some((at_file, at_after)) = at.split_once('"')
                    && let (Some(line), Some(at_line)) = (self.line, line_number(at_after))
                {
                    let edge = Inlined {
                        file: file.to_string(),
                        line,
                        at_file: at_file.to_string(),
                        at_line,
                    };
                    if !self.seen.contains(&edge) {
                        self.seen.insert(edge.clone());
                        self.log.inlined.push(edge);
                    }
                }
            }
        } else if text.starts_with("/*") && text.contains("*/") {
            self.instructions += 1;
            if let Some(callee) = call_target(text)
                && let Some(caller) = &self.function
            {
                let site = CallSite {
                    caller: caller.clone(),
                    callee: demangle(callee).0,
                    file: self.file.clone(),
                    line: self.line,
                };
                if !self.log.call_sites.contains(&site) {
                    self.log.call_sites.push(site);
                }
            }
        }
    }

    pub(crate) fn finish(mut self) -> ParsedLog {
        self.log.complete = self.instructions > 0;
        self.log
    }
}

/// The line number of `, line 28 ...`.
fn line_number(after: &str) -> Option<u32> {
    after
        .trim_start_matches(',')
        .trim()
        .strip_prefix("line ")
        .and_then(|l| {
            l.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
        })
}

/// The callee of a `CALL.ABS.NOINC `(NAME)` or `CALL.REL.NOINC `(NAME)` instruction.
fn call_target(instruction: &str) -> Option<&str> {
    let at = instruction.find("CALL.")?;
    let rest = &instruction[at..];
    let open = rest.find("`(")?;
    let name = &rest[open + 2..];
    let close = name.find(')')?;
    Some(&name[..close])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_kept_with_the_line_they_are_made_at() {
        // `nvdisasm -g -c` of examples/real-code-classes' wmma_local_debug (nvcc 13.0, sm_90,
        // -G -lineinfo), trimmed to the lines that matter.
        let listing = "\
//--------------------- .text._Z12tile_productPK6__halfS1_Pf --------------------------
\t//## File \"/repo/src/wmma_local.cu\", line 27
        /*0c60*/                   MOV R21, 32@hi((_Z12tile_productPK6__halfS1_Pf + .L_x_1@srel)) ;
        /*0c70*/                   CALL.ABS.NOINC `(_ZN44_INTERNAL_cdd6b98b_13_wmma_local_cu_808077a26nvcuda4wmma16load_matrix_syncERNS1_8fragmentINS1_8matrix_aELi16ELi16ELi16E6__halfNS1_9row_majorEEEPKS4_j) ;
\t//## File \"/repo/src/wmma_local.cu\", line 28
        /*0e30*/                   CALL.ABS.NOINC `(_ZN44_INTERNAL_cdd6b98b_13_wmma_local_cu_808077a26nvcuda4wmma16load_matrix_syncERNS1_8fragmentINS1_8matrix_bELi16ELi16ELi16E6__halfNS1_9col_majorEEEPKS4_j) ;
";
        let mut p = LinesParser::new();
        for l in listing.lines() {
            p.line(l);
        }
        let log = p.finish();
        assert!(log.complete);
        assert_eq!(log.call_sites.len(), 2, "{:#?}", log.call_sites);
        let a = &log.call_sites[0];
        assert_eq!(
            a.caller,
            "tile_product(__half const*, __half const*, float*)"
        );
        assert!(a.callee.contains("load_matrix_sync"), "{}", a.callee);
        assert!(a.callee.contains("matrix_a"), "{}", a.callee);
        assert_eq!(a.file.as_deref(), Some("/repo/src/wmma_local.cu"));
        assert_eq!(a.line, Some(27));
        assert_eq!(log.call_sites[1].line, Some(28));
    }
}
