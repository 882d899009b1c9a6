//! `host-api-error`: what memcheck's "Program hit cudaErrorX ... on CUDA API call to Y" records
//! mean, by class. A device memory allocation that failed (sizes, probing loops, suppressions);
//! the sticky-error cascade after a kernel fault (every later call and launch fails with the
//! fault's error, and later kernels never ran: the first fault is the one to fix); and a call
//! that rejected its arguments. Records no class covers are left to `sanitizer-error`.

use parsers::cuda::{ApiCall, CudaError};
use parsers::facts::ApiError;
use parsers::{Finding, FindingKind};
use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Level, Scope};
use crate::join::FindingRef;
use crate::message::{Message, code, figure, msg, quote};
use crate::text::plural;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::HostApiError,
    Role::Symptom { rank: 4 },
    "CUDA API error",
    "memcheck's failed CUDA calls by class: a device memory allocation that \
        failed, and the sticky errors every call returns after a kernel fault.",
    "crates/report/src/rules/host_api.rs",
    run,
);

/// Device-side findings: a fault that leaves the context broken.
pub(super) fn is_device_fault(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::InvalidAccess
            | FindingKind::MisalignedAccess
            | FindingKind::Trap
            | FindingKind::DeviceException
    )
}

/// The call and error a "Program hit ..." record names.
pub(super) fn api_error(finding: &Finding) -> Option<&ApiError> {
    finding.facts.api_error.as_deref()
}

/// The call that returned the error.
pub(super) fn api_call(finding: &Finding) -> Option<&str> {
    api_error(finding).and_then(|a| a.call.as_deref())
}

/// One draft per log and class.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for (source_index, source) in j.sources.iter().enumerate() {
        // The sticky errors are read even where a device-fault rule already accounts for them:
        // the cascade is worth saying, as a symptom of that fault.
        let host: Vec<(usize, &FindingRef)> = ctx
            .in_log(source_index, |k| k == FindingKind::HostApiError)
            .map(|i| (i, &j.findings[i]))
            .collect();
        if host.is_empty() {
            continue;
        }
        let device_fault = ctx.in_log(source_index, is_device_fault).next().is_some();
        let error_name =
            |f: &FindingRef| api_error(f.finding).map_or(String::new(), |a| a.name.clone());
        let error = |f: &FindingRef| api_error(f.finding).map_or(CudaError::Other, ApiError::error);
        let call_kind = |f: &FindingRef| api_call(f.finding).map(ApiCall::of_name);
        // A draft of one class of the log's records: it explains them all and quotes `first`.
        let group = |level, key: String, class: &[&(usize, &FindingRef)], (i, first): (usize, _)| {
            let mut d = ctx.finding_draft(RuleId::HostApiError, level, i, first);
            d.key = key;
            d.confidence = Confidence::High;
            d.explains = class.iter().map(|(i, _)| *i).collect();
            d
        };

        // The log's records that `keep` takes, in their order.
        let class = |keep: &dyn Fn(usize, &FindingRef) -> bool| {
            host.iter().filter(|(i, f)| keep(*i, f)).collect::<Vec<_>>()
        };

        // The sticky cascade: a kernel faulted, and every later call reports its error.
        let sticky = class(&|_, f| error(f) == CudaError::Sticky);
        if device_fault && !sticky.is_empty() {
            let calls: Vec<&str> = sticky
                .iter()
                .filter_map(|(_, f)| api_call(f.finding))
                .collect();
            let mut d = group(Level::Error, "sticky".into(), &sticky, *sticky[0]);
            word_sticky(&mut d, &error_name(sticky[0].1), &calls);
            d.figures.insert("failed_calls".into(), json!(calls.len()));
            // A symptom of the fault this log located.
            d.symptom_of = Some(Scope::Log(source.path.to_string()));
            out.push(d);
        }

        // A device memory allocation that failed, and the error calls that echo it.
        let allocation =
            class(&|i, f| !ctx.explained(i) && error(f) == CudaError::MemoryAllocation);
        let allocs = allocation.iter().filter(|(_, f)| call_kind(f) == Some(ApiCall::Allocation));
        if let Some(&&(i, first)) = allocs.clone().next() {
            let call = api_call(first.finding).unwrap_or("cudaMalloc");
            let failed = allocs.map(|(_, f)| f.finding.count).sum::<u64>();
            let mut d = group(Level::Error, "allocation".into(), &allocation, (i, first));
            d.figures.insert("failed_allocations".into(), json!(failed));
            let echoes = allocation.len().saturating_sub(1);
            word_allocation(&mut d, call, &error_name(first), failed, echoes);
            out.push(d);
        }

        // A binding's lookups of driver entry points, answered "no": its own business, unless
        // they filled the tool's print limit and hid what else it counted.
        let probes = class(&|i, f| !ctx.explained(i) && call_kind(f) == Some(ApiCall::EntryPoint));
        if let Some(&&(i, first)) = probes.first() {
            let call = api_call(first.finding).unwrap_or("cuGetProcAddress");
            let count = probes.iter().map(|(_, f)| f.finding.count).sum::<u64>();
            let printed_all_probes = !ctx
                .in_log(source_index, |k| k != FindingKind::HostApiError)
                .any(|i| super::is_error(j.findings[i].finding));
            let hidden = if printed_all_probes {
                source.log.unprinted_errors
            } else {
                0
            };
            let mut d = group(Level::Note, "entry-point-probes".into(), &probes, (i, first));
            d.figures.insert("probes".into(), json!(count));
            let tool = source.log.tool.map_or("memcheck", parsers::Tool::name);
            word_probes(&mut d, call, &error_name(first), count, hidden, tool);
            out.push(d);
        }

        // A call that rejected its arguments, and the error calls that echo it.
        let invalid = class(&|i, f| {
            !ctx.explained(i)
                && call_kind(f) != Some(ApiCall::EntryPoint)
                && matches!(
                    error(f),
                    CudaError::InvalidValue
                        | CudaError::InvalidConfiguration
                        | CudaError::InvalidDevicePointer
                        | CudaError::InvalidMemcpyDirection
                )
        });
        let echo = |f: &FindingRef| call_kind(f) == Some(ApiCall::ErrorQuery);
        if let Some(&&(i, first)) = invalid
            .iter()
            .find(|(_, f)| call_kind(f).is_some_and(|c| c != ApiCall::ErrorQuery))
        {
            let call = api_call(first.finding).unwrap_or("a CUDA call");
            let name = error_name(first);
            let said = api_error(first.finding)
                .and_then(|a| a.message.as_deref())
                .unwrap_or("invalid argument");
            let mut d = group(Level::Error, format!("invalid|{call}"), &invalid, (i, first));
            let echoes = invalid.iter().filter(|(_, f)| echo(f)).count();
            word_invalid(&mut d, call, &name, said, echoes);
            out.push(d);
        }
    }
    out
}

/// A binding's entry-point lookups that the driver answered with `name`, `count` times; where
/// they filled the tool's print limit, the `hidden` errors it counted and did not print.
fn word_probes(d: &mut Draft, call: &str, name: &str, count: u64, hidden: u64, tool: &str) {
    let returned = msg!(
        "{} returned {} {}: ",
        code(call),
        quote(name),
        plural(count, "time", "times")
    );
    let probes = msg!(
        "{}a CUDA binding (cuda-python, Numba, CuPy) asking the driver for entry points by name, \
         some of which this driver does not have. The binding handles the answer; the program \
         never sees it.",
        returned.clone()
    );
    if hidden == 0 {
        d.title = msg!(
            "{}a binding probing for driver entry points, not the program's error",
            returned
        );
        d.explanation = probes;
        d.fix = msg!("Nothing to fix in the program: the records are the binding's lookups.");
        return;
    }
    d.level = Level::Warning;
    d.figures.insert("unprinted_errors".into(), json!(hidden));
    let hidden = || figure(crate::text::thousands(hidden));
    d.title = msg!(
        "{} counted {} errors it did not print: its print limit went to {}'s probes",
        tool,
        hidden(),
        code(call)
    );
    d.explanation = msg!(
        "{} Those records filled {}'s print limit, and it counted {} more errors that are not \
         in the log: more of the same lookups, or faults in the kernels; the log does not say \
         which, so nothing here reads clean.",
        probes,
        tool,
        hidden()
    );
    d.fix = msg!(
        "Run the stage again with a larger print limit (`print_limit:` in the stage, \
         compute-sanitizer's `--print-limit`), so that the errors past the probes are printed."
    );
}

/// The sticky cascade's words: after the fault every call in `calls` returned `name`.
fn word_sticky(d: &mut Draft, name: &str, calls: &[&str]) {
    let listed = Message::join(calls.iter().map(|&c| Message::from(code(c))), ", ");
    d.title = msg!(
        "Every CUDA call after the fault fails with {}: {} (a sticky error: later kernels never \
         ran, and the fault is the one to fix)",
        quote(name),
        listed
    );
    d.explanation = msg!(
        "After a kernel faults, its CUDA context is unusable: {} after it returned {} and no \
         later kernel ran, so nothing measured after the fault says anything about those calls. \
         The first fault is the one to fix.",
        plural(calls.len() as u64, "call", "calls"),
        quote(name)
    );
    d.fix = msg!(
        "Fix the device-side fault this log names first; the calls after it fail only because of \
         it."
    );
}

/// A failed allocation's words: `call` returned `name`, `failed` times, and `echoes` later
/// error calls repeated it.
fn word_allocation(d: &mut Draft, call: &str, name: &str, failed: u64, echoes: usize) {
    d.title = msg!(
        "Device memory allocation failed: {} returned {}",
        code(call),
        quote(name)
    );
    d.explanation = msg!(
        "{} could not get the device memory asked for ({}). This is a host-side failure, not a \
         kernel's: no launch configuration is involved.{} A program that allocates until it \
         fails (probing free memory) gets this record by design.",
        code(call),
        plural(failed, "failed allocation", "failed allocations"),
        if echoes > 0 {
            msg!(
                " The {} after it report the same error because it was not cleared.",
                plural(echoes as u64, "call", "calls")
            )
        } else {
            Message::new()
        }
    );
    d.fix = msg!(
        "Check the requested size (bytes, not elements; an unsigned size that underflowed) \
         against the device's free memory (`cudaMemGetInfo`). If the failure is expected (a \
         probing loop), query `cudaMemGetInfo` instead, or list this record in a \
         compute-sanitizer suppressions file (the sanitizer stages' `suppressions:` key)."
    );
}

/// A rejected call's words: `call` returned `name` (`said`, the error's message), and
/// `echoes` later `cudaGetLastError` calls returned it again.
fn word_invalid(d: &mut Draft, call: &str, name: &str, said: &str, echoes: usize) {
    d.title = msg!(
        "{} rejected its arguments: {} ({})",
        code(call),
        quote(name),
        quote(said)
    );
    d.explanation = msg!(
        "{} returned {} without doing its work. Unlike a kernel fault this error is not sticky: \
         the context stays usable, and the next `cudaGetLastError` returns it once{}, so a \
         check placed after a later call blames that call.",
        code(call),
        quote(name),
        if echoes > 0 {
            msg!(
                " (it did here: {})",
                plural(echoes as u64, "echo", "echoes")
            )
        } else {
            Message::new()
        }
    );
    d.fix = match ApiCall::of_name(call) {
        ApiCall::Launch => msg!(
            "Check the launch configuration: threads per block at most 1024 (and at most what \
             the kernel's registers and `__launch_bounds__` allow), grid dimensions within the \
             limits, dynamic shared memory within the default 48 KiB or the size set with \
             `cudaFuncSetAttribute`."
        ),
        ApiCall::Copy => msg!(
            "Check the arguments of {}: the byte count against both buffers, each pointer's kind \
             (device or host) against the copy kind, and that neither was freed.",
            code(call)
        ),
        _ => msg!(
            "Check the arguments {} was given against its documentation.",
            code(call)
        ),
    };
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, says};

    /// memcheck on `issue12/malloc_fail.cu huge` (`compute-sanitizer/memcheck_malloc_fail_huge.log`):
    /// `cudaMalloc` of 1 PiB returns `cudaErrorMemoryAllocation`.
    #[test]
    fn fires_on_a_device_allocation_that_failed() {
        let d = fixture_case!(Memcheck, "compute-sanitizer/memcheck_malloc_fail_huge.log")
            .only(RuleId::HostApiError);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.key, "allocation");
        assert_eq!(d.kernel, None);
        assert_eq!(d.location, None);
        assert_eq!(d.figures["failed_allocations"], 1);
        says(&d.title, "cudaErrorMemoryAllocation");
    }

    /// memcheck on `issue12/sticky.cu` (`compute-sanitizer/memcheck_sticky.log`): a kernel
    /// writes through a null pointer, and every later call returns its error.
    #[test]
    fn fires_on_the_calls_that_fail_after_a_kernel_fault_as_its_symptom() {
        let d = fixture_case!(Memcheck, "compute-sanitizer/memcheck_sticky.log")
            .only(RuleId::HostApiError);
        assert_eq!(d.key, "sticky");
        assert_eq!(d.level, Level::Error);
        assert!(d.symptom_of.is_some());
        assert!(d.figures["failed_calls"].as_u64().is_some_and(|n| n > 0));
    }

    /// memcheck on `leak.cu` (`compute-sanitizer/memcheck_leak.log`): a leak, a finding of
    /// another kind, and no failed API call.
    #[test]
    fn stays_silent_on_a_leak_with_no_failed_call() {
        fixture_case!(Memcheck, "compute-sanitizer/memcheck_leak.log").silent(RuleId::HostApiError);
    }
}

