//! Units run concurrently where they may, and bench and profile run alone: stand-in tools log
//! when each process starts and ends, and the intervals are checked.

use crate::util::{Project, code, pipeline, stderr};

/// Appends `start|end <what> <seconds>` to `bin/intervals.log` around a short sleep.
const LOG: &str = r#"log() { echo "$1 $2 $(date +%s.%N)" >> "$(dirname "$0")/intervals.log"; }"#;

/// `meet`: a unit that may share the GPU waits, 5 s at most, until a second such unit runs
/// beside it, unless two have met already; `leave` when it ends. Whether two shared units
/// overlap then rests on the scheduler letting them, never on how fast a busy machine starts
/// processes (a sleep alone let a loaded machine start the second after the first ended).
/// A test of one unit at a time marks them met beforehand (`bin/meet/met`).
const MEET: &str = r#"meet() {
  d="$(dirname "$0")/meet"; mkdir -p "$d/run"; touch "$d/run/$$"; n=0
  until [ -e "$d/met" ] || [ "$(ls "$d/run" | wc -l)" -ge 2 ] || [ $n -ge 250 ]; do sleep 0.02; n=$((n+1)); done
  touch "$d/met"
}
leave() { rm -f "$(dirname "$0")/meet/run/$$"; }"#;

/// A stand-in harness (hand-written): answers the probe with "no GPU", otherwise logs its mode.
fn harness() -> String {
    format!(
        r#"#!/bin/sh
{LOG}
{MEET}
if [ "$1" = "--probe" ]; then echo "harness: no GPU (stand-in)" >&2; exit 4; fi
mode=unknown
while [ $# -gt 0 ]; do [ "$1" = "--mode" ] && mode="$2"; shift; done
log start "harness-$mode-$$@${{CUDA_VISIBLE_DEVICES:-none}}"
[ "$mode" = check ] && meet
sleep 0.4
[ "$mode" = check ] && leave
log end "harness-$mode-$$@${{CUDA_VISIBLE_DEVICES:-none}}"
"#
    )
}

/// A stand-in for compute-sanitizer or ncu (hand-written): logs, sleeps, prints a clean summary.
/// compute-sanitizer's units may share the GPU, so they meet; ncu's run alone.
fn wrapper(name: &str) -> String {
    let shares = if name == "compute-sanitizer" {
        "1"
    } else {
        "0"
    };
    format!(
        r#"#!/bin/sh
{LOG}
{MEET}
if [ "$1" = "--version" ]; then echo "{name} 0.0 (stand-in)"; exit 0; fi
log start "{name}-$$@${{CUDA_VISIBLE_DEVICES:-none}}"
[ {shares} = 1 ] && meet
sleep 0.4
[ {shares} = 1 ] && leave
log end "{name}-$$@${{CUDA_VISIBLE_DEVICES:-none}}"
echo "========= ERROR SUMMARY: 0 errors"
"#
    )
}

#[derive(Debug)]
struct Interval {
    what: String,
    start: f64,
    end: f64,
}

fn intervals(project: &Project) -> Vec<Interval> {
    let text = std::fs::read_to_string(project.root.join("bin/intervals.log")).expect("the log");
    let mut starts = std::collections::HashMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let [event, what, at] = words[..] else {
            panic!("{line}")
        };
        let at: f64 = at.parse().expect("a time");
        match event {
            "start" => {
                starts.insert(what.to_string(), at);
            }
            _ => out.push(Interval {
                what: what.to_string(),
                start: starts[what],
                end: at,
            }),
        }
    }
    out
}

fn project() -> Project {
    let project = Project::new();
    project.tool("harness", &harness());
    project.tool("compute-sanitizer", &wrapper("compute-sanitizer"));
    project.tool("ncu", &wrapper("ncu"));
    let gpu = "needs: { gpu: false, tools: [harness] }";
    project.pipeline(
        &pipeline(&format!(
            "  memcheck:\n    timeout: 30s\n    needs: {{ gpu: false, tools: [compute-sanitizer, harness] }}\n    cases: [seed, s2, s3]\n\
             \x20 check:\n    timeout: 30s\n    {gpu}\n    cases: [seed, s2, s3]\n\
             \x20 bench:\n    timeout: 30s\n    {gpu}\n    cases: [seed, s2]\n\
             \x20 profile:\n    timeout: 30s\n    needs: {{ gpu: false, tools: [ncu, harness] }}\n    cases: [seed]\n"
        ))
        .replace(
            "  seed: { shape: \"2,8,512,64\" }",
            "  seed: { shape: \"2,8,512,64\" }\n  s2: { shape: \"1,8,256,64\" }\n  s3: { shape: \"1,4,128,64\" }",
        )
        .replace(
            "    cuobjdump: bin/cuobjdump\n",
            "    cuobjdump: bin/cuobjdump\n    harness: bin/harness\n    compute-sanitizer: bin/compute-sanitizer\n    ncu: bin/ncu\n",
        ),
    );
    project
}

fn overlap(a: &Interval, b: &Interval) -> bool {
    a.start < b.end && b.start < a.end
}

#[test]
fn bench_and_profile_run_alone_while_other_gpu_units_share() {
    let project = project();
    let out = project.run(&["pipeline.yaml", "--jobs", "8", "--gpu-jobs", "3"]);
    assert!(code(&out) <= 3, "{}", stderr(&out));
    let all = intervals(&project);
    let alone: Vec<&Interval> = all
        .iter()
        .filter(|i| i.what.starts_with("harness-bench") || i.what.starts_with("ncu"))
        .collect();
    // 2 bench cases and 1 profile case, one config.
    assert_eq!(alone.len(), 3, "{all:#?}");
    for a in &alone {
        for b in all.iter().filter(|b| b.what != a.what) {
            assert!(!overlap(a, b), "{} overlapped {}", a.what, b.what);
        }
    }
    // The 3 memcheck and 3 check units shared the GPU: some ran at once, never more than 3.
    let shared: Vec<&Interval> = all
        .iter()
        .filter(|i| i.what.starts_with("compute-sanitizer") || i.what.starts_with("harness-check"))
        .collect();
    assert_eq!(shared.len(), 6, "{all:#?}");
    let most = shared
        .iter()
        .map(|a| {
            shared
                .iter()
                .filter(|b| b.start <= a.start && a.start < b.end)
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(most >= 2, "no two GPU units ran at once: {shared:#?}");
    assert!(most <= 3, "more than --gpu-jobs 3 at once: {shared:#?}");
    // The manifest lists the units in plan order, whatever order they ended in.
    let manifest = project.manifest();
    let names: Vec<&str> = manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["name"].as_str().expect("a name"))
        .collect();
    // SASS after the units that run the program: their just-in-time kernels land in the build
    // directory it reads.
    let order = [
        "compile", "memcheck", "check", "bench", "profile", "sass", "report",
    ];
    let rank = |n: &str| order.iter().position(|o| *o == n).expect("a known stage");
    assert!(
        names.windows(2).all(|w| rank(w[0]) <= rank(w[1])),
        "{names:?}"
    );
    assert!(manifest["wall_ms"].as_u64().is_some());
}

#[test]
fn one_job_runs_one_unit_at_a_time() {
    let project = project();
    // One unit at a time: no second unit will come to meet the first.
    std::fs::create_dir_all(project.root.join("bin/meet")).expect("mkdir");
    std::fs::write(project.root.join("bin/meet/met"), "").expect("met");
    let out = project.run(&["pipeline.yaml", "-j", "1"]);
    assert!(code(&out) <= 3, "{}", stderr(&out));
    let all = intervals(&project);
    assert_eq!(all.len(), 9, "{all:#?}");
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!(!overlap(a, b), "{} overlapped {}", a.what, b.what);
        }
    }
}

/// A stand-in nvidia-smi (hand-written) that lists two H200s.
const NVIDIA_SMI: &str = r#"#!/bin/sh
case "$1" in
  --query-gpu=compute_cap) printf '9.0\n9.0\n' ;;
  --query-gpu=*) printf 'NVIDIA H200, GPU-0, 580.159.04, 2, 1980 MHz, 2619 MHz, Enabled, Disabled, 143771 MiB\nNVIDIA H200, GPU-1, 580.159.04, 2, 1980 MHz, 2619 MHz, Enabled, Disabled, 143771 MiB\n' ;;
  *) echo "NVIDIA-SMI (stand-in)" ;;
esac
"#;

/// The GPU an interval's process ran on (`none` when it was given none).
fn device(i: &Interval) -> &str {
    i.what.rsplit_once('@').map_or("none", |(_, d)| d)
}

fn run_on_two_gpus(project: &Project, args: &[&str]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        project.root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new(crate::util::BIN)
        .args(args)
        .current_dir(&project.root)
        .env("PATH", path)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env("XDG_CACHE_HOME", project.root.join("cache"))
        .output()
        .expect("start the runner")
}

#[test]
fn gpu_units_spread_over_gpus_and_run_alone_on_their_own_gpu() {
    let project = project();
    project.tool("nvidia-smi", NVIDIA_SMI);
    let out = run_on_two_gpus(
        &project,
        &["pipeline.yaml", "--gpus", "all", "--gpu-jobs", "2"],
    );
    assert!(code(&out) <= 3, "{}", stderr(&out));
    let all = intervals(&project);
    assert_eq!(all.len(), 9, "{all:#?}");
    let used: std::collections::BTreeSet<&str> = all.iter().map(device).collect();
    assert_eq!(used, ["0", "1"].into_iter().collect(), "{all:#?}");
    for a in all
        .iter()
        .filter(|i| i.what.starts_with("harness-bench") || i.what.starts_with("ncu"))
    {
        for b in all
            .iter()
            .filter(|b| b.what != a.what && device(b) == device(a))
        {
            assert!(
                !overlap(a, b),
                "{} overlapped {} on its GPU",
                a.what,
                b.what
            );
        }
    }
    // Never more than --gpu-jobs 2 on one GPU.
    for a in &all {
        let together = all
            .iter()
            .filter(|b| device(b) == device(a) && b.start <= a.start && a.start < b.end)
            .count();
        assert!(
            together <= 2,
            "{together} units at once on GPU {}",
            device(a)
        );
    }
    // The manifest names each GPU unit's GPU.
    let manifest = project.manifest();
    for stage in manifest["stages"].as_array().expect("stages") {
        let gpu_unit = ["memcheck", "check", "bench", "profile"]
            .contains(&stage["kind"].as_str().unwrap_or(""));
        assert_eq!(stage["device"].is_string(), gpu_unit, "{stage:#}");
    }
}

#[test]
fn more_gpus_than_the_machine_shows_is_a_usage_error() {
    let project = project();
    project.tool("nvidia-smi", NVIDIA_SMI);
    let out = run_on_two_gpus(&project, &["pipeline.yaml", "--gpus", "3"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--gpus 3: 2 GPUs visible (0, 1)"),
        "{}",
        stderr(&out)
    );
    let out = run_on_two_gpus(&project, &["pipeline.yaml", "--gpus", "two"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("expected `all` or a number of GPUs"),
        "{}",
        stderr(&out)
    );
}

/// A stand-in nvcc (hand-written) that logs its interval; configs with BLOCK_M=128 compile
/// for 1.5 s.
const SLOW_NVCC: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
log() { echo "$1 $2 $(date +%s.%N)" >> "$(dirname "$0")/intervals.log"; }
out=""; slow=0
for a in "$@"; do [ "$a" = "-DBLOCK_M=128" ] && slow=1; done
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
log start "nvcc-$slow-$$"
[ "$slow" = 1 ] && sleep 1.5
printf '\177ELF stand-in cubin\n' > "$out"
log end "nvcc-$slow-$$"
"#;

/// With one GPU a bench has the machine: a compile beside it would disturb launch-bound
/// timings, which are host timings too. The small config's bench is ready once its compile
/// ended, while the big config still compiles; it waits for that compile.
#[test]
fn a_unit_that_runs_alone_has_the_machine_not_only_the_gpu() {
    let project = project();
    project.tool("nvcc", SLOW_NVCC);
    let yaml = std::fs::read_to_string(project.root.join("pipeline.yaml")).expect("pipeline");
    project.pipeline(&yaml.replace(
        "    small: { HEAD_DIM: 64, BLOCK_M: 64 }",
        "    small: { HEAD_DIM: 64, BLOCK_M: 64 }\n    big: { HEAD_DIM: 64, BLOCK_M: 128 }",
    ));
    let out = project.run(&["pipeline.yaml", "--jobs", "8", "--only", "compile,bench"]);
    assert!(code(&out) <= 3, "{}", stderr(&out));
    let all = intervals(&project);
    let compiles: Vec<&Interval> = all.iter().filter(|i| i.what.starts_with("nvcc")).collect();
    assert_eq!(compiles.len(), 2, "{all:#?}");
    assert_eq!(
        compiles
            .iter()
            .filter(|c| c.what.starts_with("nvcc-1-"))
            .count(),
        1,
        "{all:#?}"
    );
    let benches: Vec<&Interval> = all
        .iter()
        .filter(|b| b.what.starts_with("harness-bench"))
        .collect();
    assert_eq!(benches.len(), 4, "{all:#?}");
    for (i, a) in benches.iter().enumerate() {
        for b in all.iter().filter(|b| b.what != a.what) {
            assert!(!overlap(a, b), "{} overlapped {}", a.what, b.what);
        }
        for b in &benches[i + 1..] {
            assert!(!overlap(a, b), "{} overlapped {}", a.what, b.what);
        }
    }
}

/// A target's program units share the GPU like the built-in kernel's: memcheck and check of
/// three configs run side by side (never more than `--gpu-jobs`), while its bench and profile
/// have the machine.
#[test]
fn a_targets_program_units_share_the_gpu_and_its_timings_run_alone() {
    let project = Project::new();
    project.tool("compute-sanitizer", &wrapper("compute-sanitizer"));
    project.tool("ncu", &wrapper("ncu"));
    project.write(
        "src/app.sh",
        &format!(
            "{LOG}\n{MEET}\nlog start \"program-$1-$$\"\n[ \"$1\" = check ] && meet\nsleep 0.4\n\
             [ \"$1\" = check ] && leave\nlog end \"program-$1-$$\"\n"
        )
        .replace("$(dirname \"$0\")", "$(dirname \"$0\")/../bin"),
    );
    let cpu = "needs: { gpu: false }";
    project.pipeline(&format!(
        "target:\n  sources: [src]\n  program:\n    command: [sh, src/app.sh, check]\n\
         toolchain:\n  provision: false\n  tools:\n    compute-sanitizer: bin/compute-sanitizer\n    ncu: bin/ncu\n\
         matrix:\n  configs: {{ a: {{}}, b: {{}}, c: {{}} }}\n\
         stages:\n\
         \x20 memcheck:\n    timeout: 30s\n    needs: {{ gpu: false, tools: [compute-sanitizer] }}\n\
         \x20 check:\n    timeout: 30s\n    {cpu}\n\
         \x20 bench:\n    timeout: 30s\n    {cpu}\n    command: [sh, src/app.sh, bench]\n\
         \x20 profile:\n    timeout: 30s\n    needs: {{ gpu: false, tools: [ncu] }}\n"
    ));
    let out = project.run(&["pipeline.yaml", "--jobs", "8", "--gpu-jobs", "4"]);
    assert!(code(&out) <= 3, "{}", stderr(&out));
    let all = intervals(&project);
    let alone: Vec<&Interval> = all
        .iter()
        .filter(|i| i.what.starts_with("program-bench") || i.what.starts_with("ncu"))
        .collect();
    assert_eq!(alone.len(), 6, "{all:#?}");
    for a in &alone {
        for b in all.iter().filter(|b| b.what != a.what) {
            assert!(!overlap(a, b), "{} overlapped {}", a.what, b.what);
        }
    }
    let shared: Vec<&Interval> = all
        .iter()
        .filter(|i| i.what.starts_with("compute-sanitizer") || i.what.starts_with("program-check"))
        .collect();
    assert_eq!(shared.len(), 6, "{all:#?}");
    let most = shared
        .iter()
        .map(|a| {
            shared
                .iter()
                .filter(|b| b.start <= a.start && a.start < b.end)
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(most >= 2, "no two program units ran at once: {shared:#?}");
    assert!(most <= 4, "more than --gpu-jobs 4 at once: {shared:#?}");
}

/// Without `--gpu-jobs`, the GPU is shared by one unit per two at once, as its memory allows.
#[test]
fn the_gpu_is_shared_as_the_cores_and_its_memory_allow() {
    use runner::planning::schedule::{GPU_JOBS, gpu_jobs_for};
    let gpu = |mib: Option<u64>| report::Gpu {
        name: "stand-in".into(),
        uuid: None,
        sm_count: None,
        compute_capability: None,
        sm_clock_mhz: None,
        mem_clock_mhz: None,
        ecc: None,
        mig: None,
        memory_mib: mib,
    };
    // 16 cores and an 80 GB H100: 8 at once.
    assert_eq!(gpu_jobs_for(16, &[gpu(Some(81_559))]), 8);
    // An 8 GiB laptop GPU holds one, whatever the cores.
    assert_eq!(gpu_jobs_for(16, &[gpu(Some(8_192))]), 1);
    // The smallest of several GPUs decides.
    assert_eq!(
        gpu_jobs_for(32, &[gpu(Some(143_771)), gpu(Some(24_576))]),
        3
    );
    // Memory unknown: the cores, at most the default.
    assert_eq!(gpu_jobs_for(64, &[gpu(None)]), GPU_JOBS);
    assert_eq!(gpu_jobs_for(2, &[]), 1);
}
