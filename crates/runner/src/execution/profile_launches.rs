//! Which launches a profile unit measures: the one place that decides it.
//!
//! Without a launch filter ncu profiles every launch with every section; a program that loops
//! over its kernels then spends minutes under the profiler (25 launches of one loop cost 78 s of a
//! 193-s unit). Unless the stage's ncu arguments choose launches themselves ([`own_selection`]),
//! a program's profile measures the first two launches of each of its kernel functions
//! ([`DEFAULT`]): `--kernel-id ::NAME:^[12]$`, where the last field is ncu's invocation number of
//! that function, a regular expression. A kernel launched more than once is then measured at its
//! second launch, after a warm-up (and at the warm-up itself); a kernel launched once still at
//! its one launch. `--kernel-id ::NAME:2` alone would measure only second launches and leave a
//! kernel launched once unprofiled, the common case of a test binary; and ncu measures each
//! launch in replay with its caches flushed, so the first launch is a fair measurement too.
//!
//! Checked with ncu 2025.3.1 on an H100 (a program launching one kernel once, one three times
//! and one twice): `:::^[12]$` profiled five launches, each kernel's first and second; `:::2`
//! only the second launches; `regex:` before the invocation number is refused ("Invalid name
//! operator"); `--kernel-id` may be given once; and beside `--kernel-id`, `--kernel-name` is
//! ignored, so the runner's own name filter (the kernels the build defined, or all but a
//! framework's) goes into the identifier, its colons written `\x3a` since ncu splits the
//! identifier at colons. Through the runner on the same machine, a built program's default
//! profile measured its three kernels at five launches in 10.3 s, and a Triton script's its one
//! kernel at the first two of three launches, none of PyTorch's.

use report::{ProfileLaunches, TargetKind};

/// ncu's options that choose which launches it profiles (filters by launch number, kernel, range
/// or NVTX range). A stage that gives any of them keeps exactly its own arguments.
const SELECTING: &[&str] = &[
    "--launch-skip",
    "--launch-count",
    "--launch-skip-before-match",
    "--kernel-id",
    "--kernel-name",
    "--kernel-name-base",
    // The names older ncu versions gave `--kernel-name` and its base.
    "--kernel-regex",
    "--kernel-regex-base",
    "--filter-mode",
    "--range-filter",
    "--profile-from-start",
    "--nvtx",
    "--nvtx-include",
    "--nvtx-exclude",
    "--native-include",
    "--native-exclude",
    "--python-include",
    "--python-exclude",
];

/// The short forms among them: `-s` (`--launch-skip`), `-c` (`--launch-count`), `-k`
/// (`--kernel-name`).
const SELECTING_SHORT: &[&str] = &["-s", "-c", "-k"];

/// The default: each kernel function's first two launches.
pub const DEFAULT: ProfileLaunches = ProfileLaunches::FirstOfEachKernel { per_kernel: 2 };

/// The invocation numbers of [`DEFAULT`], as `--kernel-id` takes them.
const DEFAULT_INVOCATIONS: &str = "^[12]$";

/// The first of ncu's own arguments that chooses launches, if any: `--launch-count 1`,
/// `--launch-count=1`, `-c 1`, `-c1`, `-k NAME` all count.
pub fn own_selection(args: &[String]) -> Option<&str> {
    args.iter().map(String::as_str).find(|word| {
        let long = word.split_once('=').map_or(*word, |(name, _)| name);
        SELECTING.contains(&long)
            || SELECTING_SHORT
                .iter()
                .any(|short| word.strip_prefix(short).is_some())
    })
}

/// Which launches a profile unit of `target` measures, given its stage's ncu arguments.
pub fn choose(target: TargetKind, args: &[String]) -> ProfileLaunches {
    if own_selection(args).is_some() {
        ProfileLaunches::Stage
    } else if target == TargetKind::Harness {
        ProfileLaunches::HarnessOnce
    } else {
        DEFAULT
    }
}

/// ncu's words for the runner's choice, given the kernel-name filter the runner would otherwise
/// pass as `--kernel-name-base BASE --kernel-name FILTER` (`regex:...` or an exact name); `None`
/// when the choice adds no words (the stage's own, the harness's one launch).
pub fn words(launches: ProfileLaunches, filter: Option<(&str, &str)>) -> Option<Vec<String>> {
    let ProfileLaunches::FirstOfEachKernel { per_kernel } = launches else {
        return None;
    };
    debug_assert_eq!(per_kernel, 2, "the invocation numbers are those of DEFAULT");
    let mut words = Vec::new();
    let name = match filter {
        Some((base, filter)) => {
            words.extend(["--kernel-name-base".to_string(), base.to_string()]);
            // `regex:EXPR` is a name operator and its operand, each a field of the identifier;
            // an exact name is a field alone.
            match filter.strip_prefix("regex:") {
                Some(expr) => format!("regex:{}", without_colons(expr)),
                None => without_colons(filter),
            }
        }
        None => String::new(),
    };
    words.push("--kernel-id".to_string());
    words.push(format!("::{name}:{DEFAULT_INVOCATIONS}"));
    Some(words)
}

/// A regular expression with its colons written `\x3a`, so that ncu does not split the kernel
/// identifier inside it (`at::` in the framework filter).
fn without_colons(expr: &str) -> String {
    expr.replace(':', r"\x3a")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &str) -> Vec<String> {
        words.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_launch_count_in_either_form_is_the_stages_own_selection() {
        for given in [
            "--launch-count 1",
            "--launch-count=1",
            "-c 1",
            "-c1",
            "--launch-skip 3 --section SpeedOfLight",
            "--section SpeedOfLight --launch-skip=3",
            "-s 3",
            "--launch-skip-before-match 2",
        ] {
            assert!(own_selection(&args(given)).is_some(), "{given}");
        }
    }

    #[test]
    fn a_kernel_filter_is_the_stages_own_selection() {
        for given in [
            "-k attn",
            "-kregex:attn",
            "--kernel-name regex:attn --metrics x",
            "--kernel-name=regex:attn",
            "--kernel-name-base mangled",
            "--kernel-id ::attn:2",
            "--kernel-id=:::1",
            "--kernel-regex attn",
            "--range-filter :[1-3]:",
            "--nvtx --nvtx-include Forward",
            "--nvtx-exclude=Init",
            "--profile-from-start off",
            "--filter-mode per-launch-config",
        ] {
            assert!(own_selection(&args(given)).is_some(), "{given}");
        }
    }

    #[test]
    fn sections_metrics_and_sets_choose_no_launch() {
        for given in [
            "",
            "--section SpeedOfLight --section Occupancy",
            "--set full",
            "--metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "--cache-control none --replay-mode application",
            "--import-source=yes",
        ] {
            assert_eq!(own_selection(&args(given)), None, "{given}");
        }
    }

    #[test]
    fn the_stage_the_harness_and_a_program_each_get_their_choice() {
        let own = args("--launch-count 1");
        assert_eq!(choose(TargetKind::Program, &own), ProfileLaunches::Stage);
        assert_eq!(choose(TargetKind::Harness, &own), ProfileLaunches::Stage);
        let none = args("--section SpeedOfLight");
        assert_eq!(
            choose(TargetKind::Harness, &none),
            ProfileLaunches::HarnessOnce
        );
        assert_eq!(choose(TargetKind::Program, &none), DEFAULT);
    }

    #[test]
    fn the_default_puts_the_name_filter_into_the_kernel_id() {
        assert_eq!(
            words(DEFAULT, None).unwrap(),
            ["--kernel-id", ":::^[12]$"].map(String::from)
        );
        assert_eq!(
            words(
                DEFAULT,
                Some(("mangled", "regex:^(_Z4axpbPKfPfi|_Z6reducePKfPfi)$"))
            )
            .unwrap(),
            [
                "--kernel-name-base",
                "mangled",
                "--kernel-id",
                "::regex:^(_Z4axpbPKfPfi|_Z6reducePKfPfi)$:^[12]$"
            ]
            .map(String::from)
        );
        // The framework filter's colons would split the identifier.
        let words = words(
            DEFAULT,
            Some(("demangled", "regex:^(?!(void )?(at::|c10::)).*")),
        )
        .unwrap();
        assert_eq!(
            words[3],
            r"::regex:^(?!(void )?(at\x3a\x3a|c10\x3a\x3a)).*:^[12]$"
        );
        assert_eq!(super::words(ProfileLaunches::Stage, None), None);
        assert_eq!(super::words(ProfileLaunches::HarnessOnce, None), None);
    }
}
