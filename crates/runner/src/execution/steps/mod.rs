//! Units of a target that run several processes: the SASS inventory of every build product,
//! and the stress search for the smallest failing launch count (`stress`).

mod stress;

use std::path::{Path, PathBuf};
use std::time::Duration;

use parsers::Format;
use report::{Log, StageStatus};

use crate::evidence::rundir::slash;
use crate::execution::stages::{self, Invocation};
use crate::execution::target;
use crate::pipeline::config::ExitCodes;
use crate::process::exec::{self, Ending};
use crate::process::interrupt::Interrupt;
pub use stress::Search;

/// What every step of a unit shares.
#[derive(Clone, Copy)]
pub struct StepCx<'a> {
    pub root: &'a Path,
    /// `artifacts/<run-id>`, relative to the root.
    pub run_dir: &'a Path,
    pub timeout: Duration,
    pub grace: Duration,
    pub interrupt: &'a Interrupt,
    /// The unit's GPU (`CUDA_VISIBLE_DEVICES`), when the run spreads over GPUs.
    pub device: Option<&'a str>,
}

impl StepCx<'_> {
    /// Runs one step; what it left running is added to the unit's leftovers, and the logs cut
    /// at the output limit to its `cut`.
    pub(crate) fn run(
        &self,
        record: &mut report::Stage,
        argv: Vec<std::ffi::OsString>,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
        stdout: PathBuf,
        stderr: PathBuf,
    ) -> Result<exec::Outcome, exec::ExecError> {
        let outcome = self.spawn(argv, cwd, env, stdout, stderr)?;
        self.note(record, &outcome);
        Ok(outcome)
    }

    /// Runs one step of several running at once: the caller notes its outcome in the unit's
    /// record ([`StepCx::note`]) once they all ended.
    pub(crate) fn spawn(
        &self,
        argv: Vec<std::ffi::OsString>,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
        stdout: PathBuf,
        stderr: PathBuf,
    ) -> Result<exec::Outcome, exec::ExecError> {
        let mut command = exec::Command::new(argv, cwd, self.timeout);
        command.grace = self.grace;
        command.env = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        command
            .env
            .extend(crate::process::exec::device_env(self.device));
        command.stdout = Some(stdout);
        command.stderr = Some(stderr);
        exec::run(&command, self.interrupt)
    }

    /// Records what a step left ([`note_outcome`]) in the unit's record.
    pub(crate) fn note(&self, record: &mut report::Stage, outcome: &exec::Outcome) {
        note_outcome(record, &self.root.join(self.run_dir), outcome);
    }

    /// The records of the logs a step left in `dest` (their names and formats).
    pub(crate) fn logs(&self, dest: &Path, present: &[(String, Option<Format>)]) -> Vec<Log> {
        present
            .iter()
            .map(|(name, format)| Log {
                path: self.log_path(dest, name),
                format: *format,
            })
            .collect()
    }

    pub(crate) fn log_path(&self, dest: &Path, name: &str) -> String {
        let unit_dir = dest
            .strip_prefix(self.root.join(self.run_dir))
            .unwrap_or(dest);
        slash(&unit_dir.join(name))
    }
}

/// Records in a unit's stage what one of its processes left: the processes still running when
/// it ended (its leftovers) and the logs cut at the output limit, by path relative to
/// `run_dir`.
pub fn note_outcome(record: &mut report::Stage, run_dir: &Path, outcome: &exec::Outcome) {
    record.leftovers.extend(outcome.leftovers.iter().cloned());
    for (path, size) in &outcome.cut {
        let path = path.strip_prefix(run_dir).unwrap_or(path);
        record.cut.insert(slash(path), *size);
    }
}

/// The line table of a product's device code, for the call sites a `-G` build keeps: its
/// cubins extracted (`cuobjdump -xelf all`, in a scratch directory removed after) and each
/// disassembled with `nvdisasm -gi -c` (lines, with one level of inlining each) into `lines`
/// under `dest`. Returns how many cubins.
fn line_table(
    record: &mut report::Stage,
    invocation: &Invocation,
    product: &Path,
    nvdisasm: &Path,
    dest: &Path,
    lines: &str,
    cx: &StepCx<'_>,
) -> Result<usize, String> {
    // Absolute: the tools run inside it and are handed paths from it.
    let scratch = dest.join(format!(".{lines}.cubins"));
    let scratch = std::path::absolute(&scratch).unwrap_or(scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("create a scratch directory: {e}"))?;
    let cuobjdump = invocation.argv.first().cloned().unwrap_or_default();
    let product = std::path::absolute(product).unwrap_or_else(|_| product.to_path_buf());
    let extract = vec![
        cuobjdump,
        "-xelf".into(),
        "all".into(),
        product.clone().into_os_string(),
    ];
    let is_cubin = product.extension().is_some_and(|x| x == "cubin");
    let result = (|| {
        if is_cubin {
            // A cubin (a JIT cache's) is disassembled as it is.
            std::fs::copy(&product, scratch.join("product.cubin")).map_err(|e| e.to_string())?;
        } else {
            cx.run(
                record,
                extract,
                &scratch,
                &invocation.env,
                scratch.join("xelf.log"),
                scratch.join("xelf.err"),
            )
            .map_err(|e| format!("cuobjdump -xelf failed to {e}"))?;
        }
        let mut cubins: Vec<PathBuf> = std::fs::read_dir(&scratch)
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "cubin"))
            .collect();
        cubins.sort();
        let mut table = Vec::new();
        for cubin in &cubins {
            let out = scratch.join("nvdisasm.out");
            cx.run(
                record,
                vec![
                    nvdisasm.as_os_str().to_owned(),
                    "-gi".into(),
                    "-c".into(),
                    cubin.clone().into_os_string(),
                ],
                &scratch,
                &invocation.env,
                out.clone(),
                scratch.join("nvdisasm.err"),
            )
            .map_err(|e| format!("nvdisasm failed to {e}"))?;
            let text = std::fs::read(&out).unwrap_or_default();
            if text.is_empty() {
                // Say what the disassembler said instead.
                let said =
                    std::fs::read_to_string(scratch.join("nvdisasm.err")).unwrap_or_default();
                let said = said
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("nothing");
                return Err(format!("nvdisasm printed no listing; it said: {said}"));
            }
            table.extend(text);
        }
        if cubins.is_empty() {
            return Err("cuobjdump extracted no cubin".to_string());
        }
        std::fs::write(dest.join(lines), &table).map_err(|e| e.to_string())?;
        Ok(cubins.len())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The cubin a JIT cache file holds, written to `dir` as `<name>.cubin`: in a CuPy cache file,
/// all that follows its hash; in a Numba cache file (a pickle), the first ELF image in it, as
/// long as its headers say.
fn cached_cubin(
    product: &Path,
    kind: target::ProductKind,
    dir: &Path,
    name: &str,
) -> Result<PathBuf, String> {
    let bytes = std::fs::read(product).map_err(|e| e.to_string())?;
    let cubin = match kind {
        target::ProductKind::CupyCache(prefix) => bytes
            .get(prefix..)
            .ok_or_else(|| "shorter than its hash".to_string())?,
        _ => {
            let at = bytes
                .windows(4)
                .position(|w| w == b"\x7fELF")
                .ok_or_else(|| "no cubin in it (compiled for no GPU yet?)".to_string())?;
            let image = &bytes[at..];
            &image[..elf_end(image).clamp(64, image.len())]
        }
    };
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let path = dir.join(format!("{name}.cubin"));
    // CuPy 14 keeps the cubin a byte short of its last program header (measured on an H200:
    // program headers at 7,144 + 5 x 56 in 7,423 bytes); the driver loads it, cuobjdump
    // reads it only whole.
    let mut cubin = cubin.to_vec();
    let short = elf_end(&cubin).saturating_sub(cubin.len());
    if short <= 64 {
        cubin.resize(cubin.len() + short, 0);
    }
    std::fs::write(&path, cubin).map_err(|e| e.to_string())?;
    Ok(std::path::absolute(&path).unwrap_or(path))
}

/// Where a 64-bit little-endian ELF file's headers say it ends: past its program headers and
/// its section headers, whichever is further; 0 where the header is not whole.
fn elf_end(elf: &[u8]) -> usize {
    let u64_at = |at: usize| {
        elf.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    };
    let u16_at = |at: usize| {
        elf.get(at..at + 2)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u16::from_le_bytes)
    };
    let table = |offset: usize, size: usize, count: usize| {
        let end = u64_at(offset).saturating_add(u64::from(u16_at(size)) * u64::from(u16_at(count)));
        usize::try_from(end).unwrap_or(usize::MAX)
    };
    table(0x20, 0x36, 0x38).max(table(0x28, 0x3a, 0x3c))
}

/// The source page of the kernels without line information, SASS only.
const SASS_PAGE: &str = "source.sass.csv";

/// `cuobjdump -sass` on every product of a target's build (executables, shared libraries,
/// objects, cubins, JIT caches), one log per product that holds device code, listed in
/// `products.log`. No product with device code makes the unit inconclusive.
pub fn sass(
    record: &mut report::Stage,
    invocation: &Invocation,
    dirs: &[PathBuf],
    dest: &Path,
    nvdisasm: Option<&Path>,
    cx: StepCx<'_>,
) {
    let products = target::products(dirs);
    let run_dir = cx.root.join(cx.run_dir);
    let run_dir = std::path::absolute(&run_dir).unwrap_or(run_dir);
    let mut listing = String::new();
    let mut with_code = 0usize;
    // The first words of a listing with no function in it, for saying what the tool printed.
    let mut silent: Option<String> = None;
    let mut duration = Duration::ZERO;
    // CuPy's and Numba's cache files, as the cubins they hold, for the tools.
    let plain_dir = dest.join(".jit-cubins");
    for (product, kind) in &products {
        if cx.interrupt.is_set() {
            record.status = StageStatus::Interrupted;
            record.reason = Some("interrupted".into());
            break;
        }
        let base = dirs
            .iter()
            .find(|d| product.starts_with(d))
            .map_or(cx.root, PathBuf::as_path);
        let name = target::product_log_name(product, base);
        let cached = matches!(
            kind,
            target::ProductKind::CupyCache(_) | target::ProductKind::NumbaCache
        );
        let input = if cached {
            match cached_cubin(product, *kind, &plain_dir, &name) {
                Ok(p) => p,
                Err(e) => {
                    listing.push_str(&format!("{}: failed to read: {e}\n", slash(product)));
                    continue;
                }
            }
        } else {
            product.clone()
        };
        let mut argv = invocation.argv.clone();
        argv.push(input.clone().into_os_string());
        let shown = product
            .strip_prefix(&run_dir)
            .map_or_else(|_| slash(product), |p| format!("<run>/{}", slash(p)));
        let outcome = cx.run(
            record,
            argv,
            cx.root,
            &invocation.env,
            dest.join(&name),
            dest.join("stderr.log"),
        );
        let text = crate::evidence::rundir::read_lossy(&dest.join(&name)).unwrap_or_default();
        let kernels = text.matches("Function : ").count();
        match outcome {
            Ok(o) => duration += o.duration,
            Err(e) => {
                listing.push_str(&format!("{shown}: failed to {e}\n"));
                continue;
            }
        }
        if kernels == 0 {
            if silent.is_none() {
                silent = text
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(|l| l.chars().take(120).collect::<String>());
            }
            let _ = std::fs::remove_file(dest.join(&name));
            listing.push_str(&format!("{shown}: no device code\n"));
            continue;
        }
        with_code += 1;
        listing.push_str(&format!("{shown}: {kernels} kernels -> {name}\n"));
        record.logs.push(Log {
            path: cx.log_path(dest, &name),
            format: Some(Format::Sass),
        });
        if let Some(nvdisasm) = nvdisasm {
            let lines = format!("{name}.lines");
            match line_table(record, invocation, &input, nvdisasm, dest, &lines, &cx) {
                Ok(cubins) => {
                    listing.push_str(&format!(
                        "{shown}: line table of {cubins} cubins -> {lines}\n"
                    ));
                    record.logs.push(Log {
                        path: cx.log_path(dest, &lines),
                        format: Some(Format::SassLines),
                    });
                }
                Err(why) => listing.push_str(&format!("{shown}: no line table: {why}\n")),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&plain_dir);
    let _ = std::fs::write(dest.join(&invocation.stdout), &listing);
    record.logs.push(Log {
        path: cx.log_path(dest, &invocation.stdout),
        format: None,
    });
    record.duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if record.status == StageStatus::Interrupted {
        return;
    }
    if with_code == 0 {
        record.status = StageStatus::Inconclusive;
        let n = products.len();
        let files = if n == 1 { "file" } else { "files" };
        record.reason = Some(match &silent {
            Some(first) => format!(
                "{} printed no SASS function (no `Function :` section) for {n} {files}: nothing \
                 to inspect; its output begins `{first}`",
                invocation.tool
            ),
            None => format!("no build product holds device code ({n} {files} looked at)"),
        });
        return;
    }
    let parsed: Vec<parsers::ParsedLog> = record
        .logs
        .iter()
        .filter(|l| l.format == Some(Format::Sass))
        .filter_map(|l| {
            crate::evidence::rundir::read_lossy(&cx.root.join(cx.run_dir).join(&l.path)).ok()
        })
        .map(|text| parsers::parse(Format::Sass, &text))
        .collect();
    let traps: u64 = parsed
        .iter()
        .flat_map(|p| &p.kernels)
        .filter_map(|k| k.sass.as_ref())
        .map(|s| s.bpt_trap)
        .sum();
    record.status = StageStatus::Passed;
    record.reason = Some(format!(
        "{with_code} of {} products hold device code{}",
        products.len(),
        if traps > 0 {
            format!("; {traps} BPT.TRAP")
        } else {
            String::new()
        }
    ));
}

/// A profile unit (a target's or the built-in kernel's), once ncu ran the program (`profiled`: how that ended, run by the
/// orchestrator's launcher, here or as a cluster job) and wrote its report into the unit
/// directory (kept for the Nsight Compute GUI): its details page and its source page are
/// exported from the report as CSV (`ncu.csv`, `source.csv`). The unit's status is decided
/// from the profiling run's ending and all three logs; its reason says what the profiling cost.
pub fn profile(
    record: &mut report::Stage,
    invocation: &Invocation,
    dest: &Path,
    profiled: Result<exec::Outcome, String>,
    exits: &ExitCodes,
    cx: StepCx<'_>,
) {
    let outcome = match profiled {
        Ok(o) => o,
        Err(e) => {
            record.status = StageStatus::Failed;
            record.reason = Some(format!("failed to {e}"));
            return;
        }
    };
    note_outcome(record, &cx.root.join(cx.run_dir), &outcome);
    record.duration_ms = u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX);
    if let Ending::Exited(code) = outcome.ending {
        record.exit_code = Some(code);
    }
    let report = dest.join(format!("{}.ncu-rep", stages::PROFILE_REPORT));
    // Absolute: the exports run in the pipeline's directory, not the runner's.
    let report = std::path::absolute(&report).unwrap_or(report);
    if let Some(ncu) = invocation.argv.first()
        && report.is_file()
    {
        for (page, out, extra) in [
            ("details", "ncu.csv", &[][..]),
            ("source", "source.csv", &["--print-source", "cuda,sass"][..]),
        ] {
            let mut argv: Vec<std::ffi::OsString> = vec![ncu.clone(), "--import".into()];
            argv.push(report.clone().into_os_string());
            argv.extend(["--csv", "--page", page].map(Into::into));
            argv.extend(extra.iter().map(Into::into));
            let _ = cx.run(
                record,
                argv,
                cx.root,
                &invocation.env,
                dest.join(out),
                dest.join(format!("{page}.stderr.log")),
            );
        }
        // A kernel built without line information (a framework's, a library's) has no CUDA
        // source page: ncu only warns. Its SASS page alone still gives its instruction mix.
        let source =
            crate::evidence::rundir::read_lossy(&dest.join("source.csv")).unwrap_or_default();
        if source.contains("No lineinfo available") {
            let mut argv: Vec<std::ffi::OsString> = vec![ncu.clone(), "--import".into()];
            argv.push(report.clone().into_os_string());
            argv.extend(["--csv", "--page", "source", "--print-source", "sass"].map(Into::into));
            let _ = cx.run(
                record,
                argv,
                cx.root,
                &invocation.env,
                dest.join(SASS_PAGE),
                dest.join("source.stderr.log"),
            );
        }
    }
    let gathered = stages::gather(dest, invocation);
    let (status, reason) = stages::decide(
        report::StageKind::Profile,
        &invocation.tool,
        cx.timeout,
        outcome.ending,
        &gathered,
        exits,
    );
    let cost = format!("profiling took {:.1} s", outcome.duration.as_secs_f64());
    record.status = status;
    record.reason = Some(match reason {
        Some(r) => format!("{r}; {cost}"),
        None => cost,
    });
    record.logs = cx.logs(dest, &gathered.present);
    if dest.join(SASS_PAGE).is_file() {
        record.logs.push(Log {
            path: cx.log_path(dest, SASS_PAGE),
            format: Some(Format::NcuSource),
        });
    }
    if report.is_file() {
        record.logs.push(Log {
            path: cx.log_path(dest, &format!("{}.ncu-rep", stages::PROFILE_REPORT)),
            format: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A kernel-cache file CuPy 14.2 wrote on an H200 (`examples/cupy`'s reference run): a
    /// 40-character hash, then a cubin a byte short of its last program header. It is read as
    /// CuPy's, and the cubin given to the tools is whole.
    /// `examples/numba`'s reference run keeps the `.nbc` file of its `cache=True` kernel (an
    /// H200, numba-cuda 0.30.4): the cubin comes out of the pickle whole.
    #[test]
    fn a_numba_cache_file_gives_a_whole_cubin() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/numba/reference/artifacts");
        let cache = std::fs::read_dir(&dir)
            .expect("the reference run")
            .flatten()
            .map(|e| e.path().join("build/default/sm_90/jit/numba"))
            .find(|p| p.is_dir())
            .expect("its Numba cache");
        let products = target::products(std::slice::from_ref(&cache));
        assert_eq!(products.len(), 1, "{products:?}");
        let (path, kind) = &products[0];
        assert_eq!(*kind, target::ProductKind::NumbaCache);
        let scratch = tempfile::tempdir().expect("a directory");
        let cubin = cached_cubin(path, *kind, scratch.path(), "block_sum").expect("a cubin");
        let bytes = std::fs::read(cubin).expect("written");
        assert!(bytes.starts_with(b"\x7fELF"));
        assert_eq!(bytes.len(), elf_end(&bytes));
        assert!(bytes.len() < std::fs::read(path).expect("cache").len());
    }

    #[test]
    fn a_cupy_cache_file_gives_a_whole_cubin() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cupy/reference/artifacts");
        let cache = std::fs::read_dir(&dir)
            .expect("the reference run")
            .flatten()
            .map(|e| e.path().join("build/default/sm_90/jit/cupy"))
            .find(|p| p.is_dir())
            .expect("its CuPy cache");
        let products = target::products(std::slice::from_ref(&cache));
        assert_eq!(products.len(), 1, "{products:?}");
        let (path, kind) = &products[0];
        assert_eq!(*kind, target::ProductKind::CupyCache(40));
        let scratch = tempfile::tempdir().expect("a directory");
        let cubin = cached_cubin(path, *kind, scratch.path(), "smooth").expect("a cubin");
        let bytes = std::fs::read(cubin).expect("written");
        assert!(bytes.starts_with(b"\x7fELF"));
        assert_eq!(bytes.len(), elf_end(&bytes));
        assert_eq!(
            bytes.len(),
            std::fs::read(path).expect("cache").len() - 40 + 1
        );
    }
}
