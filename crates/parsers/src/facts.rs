//! What a finding's tool states beyond its site, typed: the figures and words of its record that
//! the report's rules read (bytes past an allocation, a race's hazard type, a CUDA call's error),
//! and those `exhibit parse --json` shows. A [`Facts`] holds one group per kind of record; a group
//! is absent where no record of that kind stated any of it, and within a group each field is
//! absent where the tool did not state it. Numbers are numbers; a word the tool picks from a few
//! is an enum; only free text (an error message, a function's name) is a string.

use serde::{Deserialize, Serialize};

use crate::cuda::CudaError;
use crate::harness::Mode;

/// The facts of one finding, grouped by the kind of record that states them. A finding holds
/// one group or two, so each is boxed: an empty group costs a pointer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// compute-sanitizer text: the function the record's `at` line names, where it is not the
    /// kernel (a `__device__` helper, or an intrinsic such as `__syncwarp(unsigned int)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// memcheck's and initcheck's account of an access and the allocation near it, or of a
    /// leaked or unused allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Box<MemoryFacts>>,
    /// What all of the finding's records say together (compute-sanitizer text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Box<RecordSpread>>,
    /// racecheck's hazard count, type and category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<Box<RaceFacts>>,
    /// memcheck's "Program hit cudaErrorX (error N) due to "..." on CUDA API call to Y" (text),
    /// or an `Api` record's fields (XML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_error: Option<Box<ApiError>>,
    /// A failing test case (JUnit), a failed check of a program's `exhibit.results/1`, or a
    /// Google Benchmark run that stopped with an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<Box<TestFacts>>,
    /// A harness result's failure (`exhibit.harness/1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<Box<HarnessFacts>>,
    /// ptxas's spill line ("N bytes spill stores, M bytes spill loads") and the kernel's usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<Box<SpillFacts>>,
    /// Nsight Compute: how many metric values of the page were `nan`, said on the finding of
    /// its failed launch (`==ERROR== LaunchFailed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nan_metrics: Option<u64>,
    /// compute-sanitizer's host API access ("Host API memory access error ... on access by
    /// cudaMemcpy source"): the CUDA call and operand whose access it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_call: Option<String>,
}

impl Facts {
    /// Whether no record stated anything beyond its site.
    pub fn is_empty(&self) -> bool {
        *self == Facts::default()
    }

    /// The hazards racecheck counted over a race finding's records, where it counted them.
    pub fn race_hazards(&self) -> Option<u64> {
        self.race.as_deref().and_then(|r| r.hazards)
    }
}

/// What memcheck or initcheck says of an access and its allocation, or of an allocation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryFacts {
    /// Why the access was invalid: "Access to 0x... is out of bounds" / "is misaligned" (text),
    /// `<what><error>` (XML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_error: Option<AccessError>,
    /// "and is 13 bytes after the nearest allocation": memcheck counts the first byte past the
    /// end as 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_after: Option<u64>,
    /// "and is 4 bytes before the nearest allocation".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_before: Option<u64>,
    /// "and is inside the nearest allocation".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inside_allocation: bool,
    /// The allocation's size in bytes: "... of size 4,000 bytes" on the address line, or
    /// initcheck's "Unused memory in allocation 0x... of size 1,024 bytes".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_size: Option<u64>,
    /// A shared-memory access's address in the block's shared window ("Access to 0x480 is out
    /// of bounds" after "Invalid __shared__ read"): an offset, not a machine address. From
    /// sm_80 on, the window's first 1 KiB is reserved, so a kernel's arrays start at 0x400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_address: Option<u64>,
    /// The block of the cluster a distributed shared-memory access went to ("Access to 0x400
    /// in CTA 2 is out of bounds" after "Invalid __remote_shared__ write"; XML `<ctaRank>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cta_rank: Option<u32>,
    /// "Leaked 1,024 bytes at 0x...": the bytes of every record of the finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaked_bytes: Option<u64>,
}

/// Why memcheck found an access invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessError {
    /// "is out of bounds".
    OutOfBounds,
    /// "is misaligned".
    Misaligned,
}

impl AccessError {
    /// The error the tool's words name ("out of bounds", "misaligned"); `None` for others.
    pub fn of_words(words: &str) -> Option<AccessError> {
        let words = words.trim();
        if words.eq_ignore_ascii_case("out of bounds") {
            Some(AccessError::OutOfBounds)
        } else if words.to_ascii_lowercase().contains("misaligned") {
            Some(AccessError::Misaligned)
        } else {
            None
        }
    }
}

/// The spread of a finding's records: how far past (or before) its allocation each access
/// landed, and which threads and blocks made them. The first record alone says little (records
/// come in no particular order); the spread tells a tail overshoot from an index one step too
/// far or a pointer gone wild.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordSpread {
    /// The smallest and largest "N bytes after" over the records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_after: Option<ByteRange>,
    /// The smallest and largest "N bytes before" over the records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_before: Option<ByteRange>,
    /// Distinct `thread (x,y,z) in block (x,y,z)` pairs of the records' `by thread` lines,
    /// counted up to 4,096.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_threads: Option<u64>,
    /// More distinct threads than were counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more_threads: bool,
    /// Distinct blocks among those threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_blocks: Option<u64>,
    /// The first few of those blocks (in coordinate order), at most 8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<[u32; 3]>,
}

/// The smallest and the largest of a figure over a finding's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteRange {
    pub min: u64,
    pub max: u64,
}

/// What racecheck says of a race.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceFacts {
    /// The hazards of every record of the finding: the `[512 hazards]` of each "and Write
    /// access at ..." line (1 where a line gives none), 1 for each `--racecheck-report hazard`
    /// record (text); each `<destination>`'s `<count>` (XML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazards: Option<u64>,
    /// "Potential RAW hazard detected at ..." (text), else the first RAW, WAR or WAW the
    /// record's message names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazard_type: Option<HazardType>,
    /// The category racecheck names in parentheses after the severity: "Warp Level
    /// Programming" in "Warning: (Warp Level Programming) Potential RAW hazard ...".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

/// A race's hazard type: which access came first and which second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HazardType {
    /// Read after write: a write, then a read.
    #[serde(rename = "RAW")]
    Raw,
    /// Write after read: a read, then a write.
    #[serde(rename = "WAR")]
    War,
    /// Write after write: two writes.
    #[serde(rename = "WAW")]
    Waw,
}

impl HazardType {
    /// The type racecheck's word names (`RAW`, `WAR`, `WAW`, in any case).
    pub fn of_word(word: &str) -> Option<HazardType> {
        match word.to_ascii_uppercase().as_str() {
            "RAW" => Some(HazardType::Raw),
            "WAR" => Some(HazardType::War),
            "WAW" => Some(HazardType::Waw),
            _ => None,
        }
    }

    /// The word racecheck prints for it.
    pub fn word(self) -> &'static str {
        match self {
            HazardType::Raw => "RAW",
            HazardType::War => "WAR",
            HazardType::Waw => "WAW",
        }
    }
}

/// A CUDA API call that returned an error, as memcheck reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// The error's runtime or driver name: `cudaErrorInvalidValue` in "Program hit
    /// cudaErrorInvalidValue ...".
    pub name: String,
    /// Its number: 1 in "(error 1)" (text), `<result>` (XML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u64>,
    /// The runtime's words for it: "invalid argument" in `due to "invalid argument"` (text),
    /// `<message>` (XML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The call that returned it: `cudaFree` in "on CUDA API call to cudaFree." (text), `<api>`
    /// (XML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

impl ApiError {
    /// The error, as the report tells errors apart.
    pub fn error(&self) -> CudaError {
        CudaError::of_name(&self.name)
    }
}

/// A test, check or benchmark that a user's program or test framework says failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestFacts {
    /// The test's id (JUnit's, a check's `name`), or the benchmark's `run_name` (Google
    /// Benchmark).
    pub name: String,
    /// Who reported it: the test framework (`pytest`, `GoogleTest`), or the program that
    /// wrote the `exhibit.results/1` document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// How a test case ended: failed (an assertion) or error (it raised first). JUnit only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<TestOutcome>,
    /// What it said: the failure's or error's message (JUnit), the check's `message`, the
    /// benchmark's `error_message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// GoogleTest's `value_param`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// The check's largest absolute difference from its reference, when finite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_err: Option<f64>,
    /// Which elements the test's comparison found wrong (JUnit, a standard comparison's
    /// message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<crate::mismatch::ElementMismatch>,
}

/// How a test case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    Passed,
    /// An assertion of the test did not hold.
    Failed,
    /// The test, or its setup, raised before an assertion could decide.
    Error,
    Skipped,
}

/// A harness result's failure: which result, and the figures of its check or stress run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessFacts {
    /// The result's `mode`.
    pub mode: Mode,
    /// The case, as the finding's example names it: config, dtype, shape, causal.
    pub case: String,
    /// The result's `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// The result's CUDA `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The check's `max_abs_err`, `rel_l2_err` and `tolerance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_err: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rel_l2_err: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// The check's `nan_count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nan_count: Option<u64>,
    /// The check's `unwritten`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwritten: Option<u64>,
    /// The guard regions overwritten (the check's or the stress run's `canaries_corrupted`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub canaries: Vec<String>,
    /// The stress run's `mismatched_launches`, `launches` and `sync`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatched_launches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<String>,
    /// The stress run's `first_failure`: the 1-based launch that failed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failing_launch: Option<u64>,
}

/// A kernel's register spill, as ptxas reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpillFacts {
    /// "N bytes spill stores".
    pub store_bytes: u64,
    /// "M bytes spill loads".
    pub load_bytes: u64,
    /// The architecture compiled for ("Compiling entry function 'K' for 'sm_90'").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// "Used N registers".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u32>,
    /// The `-maxrregcount` override ptxas reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_registers_override: Option<u32>,
    /// The kernel's mangled name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
}

#[cfg(test)]
mod tests {
    //! Each fact a rule reads, from a real log of the tool that states it.

    use super::{AccessError, ApiError, ByteRange, HazardType};
    use crate::model::{Finding, FindingKind, Format};

    fn findings(format: Format, log: &str, kind: FindingKind) -> Vec<Finding> {
        let parsed = crate::parse(format, log);
        parsed
            .findings
            .into_iter()
            .filter(|f| f.kind == kind)
            .collect()
    }

    /// `oob.cu` reads past a 1,000-float buffer: eight threads of block 7, the first "1 bytes
    /// after the nearest allocation ... of size 4,000 bytes", the last 29 bytes after it.
    #[test]
    fn memcheck_states_how_far_past_its_allocation_an_access_landed() {
        let log = include_str!("../fixtures/compute-sanitizer/memcheck_oob_read.log");
        let [f] = &findings(Format::ComputeSanitizer, log, FindingKind::InvalidAccess)[..] else {
            panic!("one invalid access expected");
        };
        let memory = f.facts.memory.as_deref().expect("memory facts");
        assert_eq!(memory.bytes_after, Some(1));
        assert_eq!(memory.allocation_size, Some(4000));
        assert_eq!(memory.access_error, Some(AccessError::OutOfBounds));
        let spread = f.facts.spread.as_deref().expect("the records' spread");
        assert_eq!(spread.bytes_after, Some(ByteRange { min: 1, max: 29 }));
        assert_eq!(
            (spread.distinct_threads, spread.distinct_blocks),
            (Some(8), Some(1))
        );
        assert_eq!(spread.blocks, [[7, 0, 0]]);
    }

    /// racecheck's hazard form: "Error: Potential RAW hazard detected at __shared__ ...", its
    /// type read from the header; the default form names no type, and its hazards are the
    /// `[512 hazards]` of both other sides.
    #[test]
    fn racecheck_states_the_hazard_type_and_count() {
        let log = include_str!("../fixtures/compute-sanitizer/racecheck_race_hazard.log");
        let [f] = &findings(Format::ComputeSanitizer, log, FindingKind::Race)[..] else {
            panic!("one race expected");
        };
        let race = f.facts.race.as_deref().expect("race facts");
        assert_eq!(race.hazard_type, Some(HazardType::Raw));
        assert_eq!(race.hazards, Some(f.count));

        let log = include_str!("../fixtures/compute-sanitizer/racecheck_race.log");
        let [f] = &findings(Format::ComputeSanitizer, log, FindingKind::Race)[..] else {
            panic!("one race expected");
        };
        assert_eq!(f.facts.race_hazards(), Some(1024));
    }

    /// memcheck's "Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch
    /// failure" on CUDA API call to cudaDeviceSynchronize." is the same fact in the text and
    /// the XML form.
    #[test]
    fn memcheck_states_the_call_that_returned_an_error_in_both_forms() {
        let expected = ApiError {
            name: "cudaErrorLaunchFailure".into(),
            code: Some(719),
            message: Some("unspecified launch failure".into()),
            call: Some("cudaDeviceSynchronize".into()),
        };
        for (format, log) in [
            (
                Format::ComputeSanitizer,
                include_str!("../fixtures/compute-sanitizer/memcheck_oob_read.log"),
            ),
            (
                Format::ComputeSanitizerXml,
                include_str!("../fixtures/compute-sanitizer-xml/memcheck_oob.xml"),
            ),
        ] {
            let errors: Vec<ApiError> = findings(format, log, FindingKind::HostApiError)
                .into_iter()
                .filter_map(|f| f.facts.api_error.map(|a| *a))
                .collect();
            assert_eq!(errors.first(), Some(&expected), "{format:?}");
            assert_eq!(
                errors.first().map(ApiError::error),
                Some(crate::cuda::CudaError::Sticky)
            );
        }
    }
}
