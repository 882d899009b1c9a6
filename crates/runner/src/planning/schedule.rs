//! Which units may run at the same time.
//!
//! Every unit has a class by the resource it needs:
//! - CPU work (compile, SASS) runs beside anything but a unit that runs alone, up to `jobs`;
//! - GPU work that tolerates company (the sanitizers, check, stress; the built-in kernel's or
//!   a target's program alike) shares the GPU, up to `gpu_jobs` shares at once; a unit that
//!   runs several processes at once holds a share for each ([`shares`]);
//! - timing and profiling (bench, baseline, profile) run alone: nothing else runs beside them,
//!   so their timings and counters stay clean. That includes CPU work: launch-bound timings
//!   are host timings too (measured on an H100: SDPA's seed-shape p50 timed with events went
//!   from 42 to 108 us with four compiles beside it, its graph replays from 9.4 to 10.1 us);
//! - a unit planned as skipped takes no resource.
//!
//! Two units of a target's program may run at once: each has its own output file
//! (`EXHIBIT_OUT`) and unit directory, a program runs only once its config's build ended, and
//! the JIT caches two of them may share (`TORCH_EXTENSIONS_DIR`, `TRITON_CACHE_DIR`) lock or
//! write atomically.
//!
//! With several GPUs (`--gpus`), each GPU has its own share of GPU units and its own "alone":
//! a bench on GPU 1 waits for nothing on GPU 0, and CPU units may run beside it. A GPU unit
//! goes to the GPU with the fewest units on it.
//!
//! A unit starts once the units it depends on ended (its compile unit; for a target's SASS,
//! every program unit before it, whose JIT caches it reads). Units start in their order of
//! [`priority`]: the builds, then the GPU units that take longest (a stress search runs the
//! program several times and compute-sanitizer's racecheck is its slowest tool: on the torch
//! extension example, 50 to 68 s against 8 to 30 s for the other sanitizers, measured on an H100),
//! then the other shared GPU units, then those that run alone, each group in plan order. A unit
//! that must wait for its resource holds back every unit after it, so a unit that runs alone is
//! never starved. The scheduler decides; [`crate::execution::orchestrate`] runs the units and
//! records them in plan order whatever the order they end in, so the manifest is deterministic.

use report::StageKind;

use crate::planning::plan::{Parallel, Plan, Unit};

/// The resource a unit needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Planned as skipped: no process.
    Free,
    Cpu,
    /// Shares the GPU with other units of this class.
    SharedGpu,
    /// Has its GPU to itself; with one GPU, the machine.
    Alone,
}

/// Units sharing one GPU when its memory is unknown and `--gpu-jobs` does not say.
pub const GPU_JOBS: usize = 4;

/// The GPU memory one sharing unit is given room for: a CUDA context, a sanitizer's shadow
/// memory, a framework's tensors and caching allocator.
const GPU_MIB_PER_UNIT: u64 = 8 * 1024;

/// Units sharing one GPU when `--gpu-jobs` does not say: one per two units the machine runs at
/// once (each drives a program and a tool around it), at most one per 8 GiB of the smallest
/// GPU's memory; [`GPU_JOBS`] when no GPU's memory is known.
pub fn gpu_jobs_for(jobs: usize, gpus: &[report::Gpu]) -> usize {
    let by_cores = (jobs / 2).max(1);
    match gpus.iter().filter_map(|g| g.memory_mib).min() {
        Some(mib) => by_cores
            .min(usize::try_from(mib / GPU_MIB_PER_UNIT).unwrap_or(usize::MAX))
            .max(1),
        None => by_cores.min(GPU_JOBS),
    }
}

/// How many units may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Units at once, of any class.
    pub jobs: usize,
    /// Units sharing one GPU at once; 0: as [`gpu_jobs_for`] decides once the GPUs are known.
    pub gpu_jobs: usize,
    /// GPUs to spread GPU units over.
    pub gpus: usize,
}

impl Limits {
    /// One unit at a time: the sequential run.
    pub const SEQUENTIAL: Limits = Limits {
        jobs: 1,
        gpu_jobs: 1,
        gpus: 1,
    };
}

/// The state of one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Ended,
}

/// Decides, as units end, which units start next.
#[derive(Debug)]
pub struct Scheduler {
    classes: Vec<Class>,
    /// The GPU shares each unit holds while it runs ([`shares`]).
    shares: Vec<usize>,
    /// The unit indices in the order they are offered a start.
    order: Vec<usize>,
    dependencies: Vec<Vec<usize>>,
    states: Vec<State>,
    /// The GPU (0-based slot) each running GPU unit was given.
    placed: Vec<Option<usize>>,
    limits: Limits,
}

impl Scheduler {
    /// A scheduler for every unit of `plan` except those `skip` names (run elsewhere, e.g. the
    /// report).
    pub fn new(plan: &Plan, limits: Limits, skip: impl Fn(&Unit) -> bool) -> Scheduler {
        let classes: Vec<Class> = plan.units.iter().map(class).collect();
        let mut order: Vec<usize> = (0..plan.units.len()).collect();
        order.sort_by_key(|&i| plan.units.get(i).map(|u| priority(u, classes[i])));
        let dependencies = plan
            .units
            .iter()
            .enumerate()
            .map(|(i, u)| dependencies(plan, i, u))
            .collect();
        let states = plan
            .units
            .iter()
            .map(|u| {
                if skip(u) {
                    State::Ended
                } else {
                    State::Waiting
                }
            })
            .collect();
        let gpu_jobs = limits.gpu_jobs.max(1);
        Scheduler {
            placed: vec![None; classes.len()],
            shares: plan.units.iter().map(|u| shares(u, gpu_jobs)).collect(),
            classes,
            order,
            dependencies,
            states,
            limits: Limits {
                jobs: limits.jobs.max(1),
                gpu_jobs: limits.gpu_jobs.max(1),
                gpus: limits.gpus.max(1),
            },
        }
    }

    /// The units that may start now, in their order of [`priority`], each with the GPU slot it
    /// runs on (for GPU units); each is marked running.
    pub fn start(&mut self) -> Vec<(usize, Option<usize>)> {
        let mut started = Vec::new();
        for k in 0..self.order.len() {
            let i = self.order[k];
            if self.states[i] != State::Waiting {
                continue;
            }
            let ready = self.dependencies[i]
                .iter()
                .all(|&d| self.states.get(d) == Some(&State::Ended));
            if !ready {
                // Its dependencies are earlier units that have not ended: later units may go
                // ahead.
                continue;
            }
            let Some(placement) = self.place(self.classes[i], self.shares[i]) else {
                // Waiting for its resource: nothing after it overtakes it.
                break;
            };
            self.states[i] = State::Running;
            self.placed[i] = placement;
            started.push((i, placement));
        }
        started
    }

    /// Records that unit `i` ended.
    pub fn ended(&mut self, i: usize) {
        if let Some(state) = self.states.get_mut(i) {
            *state = State::Ended;
        }
        if let Some(gpu) = self.placed.get_mut(i) {
            *gpu = None;
        }
    }

    /// Records that running unit `i` is done with the GPU (a profile unit exporting its report):
    /// from now on it holds a CPU slot only.
    pub fn released(&mut self, i: usize) {
        if self.states.get(i) == Some(&State::Running)
            && let Some(class) = self.classes.get_mut(i)
            && matches!(*class, Class::SharedGpu | Class::Alone)
        {
            *class = Class::Cpu;
            if let Some(gpu) = self.placed.get_mut(i) {
                *gpu = None;
            }
        }
    }

    /// Whether any unit is running.
    pub fn busy(&self) -> bool {
        self.states.contains(&State::Running)
    }

    /// Where a unit of `class` holding `shares` of a GPU may start now: `Some(None)` off the
    /// GPU, `Some(Some(g))` on GPU slot `g`, `None` not now.
    fn place(&self, class: Class, shares: usize) -> Option<Option<usize>> {
        let running = |c: Class, gpu: Option<usize>| {
            (0..self.states.len())
                .filter(|&i| {
                    self.states[i] == State::Running
                        && self.classes[i] == c
                        && (gpu.is_none() || self.placed[i] == gpu)
                })
                .count()
        };
        let shared = |gpu: usize| -> usize {
            (0..self.states.len())
                .filter(|&i| {
                    self.states[i] == State::Running
                        && self.classes[i] == Class::SharedGpu
                        && self.placed[i] == Some(gpu)
                })
                .map(|i| self.shares[i])
                .sum()
        };
        let busy = running(Class::Cpu, None)
            + running(Class::SharedGpu, None)
            + running(Class::Alone, None);
        // With one GPU a unit that runs alone has the machine.
        let one_gpu = self.limits.gpus == 1;
        if one_gpu && running(Class::Alone, None) > 0 {
            return (class == Class::Free).then_some(None);
        }
        let gpu_free = |g: usize| {
            running(Class::Alone, Some(g)) == 0
                && shared(g) + shares.min(self.limits.gpu_jobs) <= self.limits.gpu_jobs
        };
        let gpu_idle =
            |g: usize| running(Class::Alone, Some(g)) + running(Class::SharedGpu, Some(g)) == 0;
        match class {
            Class::Free => Some(None),
            Class::Cpu => (busy < self.limits.jobs).then_some(None),
            _ if busy >= self.limits.jobs => None,
            Class::SharedGpu => (0..self.limits.gpus)
                .filter(|&g| gpu_free(g))
                .min_by_key(|&g| shared(g))
                .map(Some),
            Class::Alone if one_gpu => (busy == 0).then_some(Some(0)),
            Class::Alone => (0..self.limits.gpus).find(|&g| gpu_idle(g)).map(Some),
        }
    }
}

/// When a unit is offered a start, lowest first (ties in plan order): builds and the other CPU
/// units before the program's, the longest shared GPU units (a stress search, racecheck) before
/// the other shared ones, and the units that run alone after them all; SASS and the report,
/// which wait for the program's units, last.
pub fn priority(unit: &Unit, class: Class) -> u8 {
    match (class, unit.kind) {
        (_, StageKind::Sass | StageKind::Report) => 5,
        (Class::Free | Class::Cpu, _) => 0,
        (Class::SharedGpu, StageKind::Stress) => 1,
        (Class::SharedGpu, StageKind::Racecheck) => 2,
        (Class::SharedGpu, _) => 3,
        (Class::Alone, _) => 4,
    }
}

/// The shares of a GPU a unit holds, and so the processes it runs at once: every share for a
/// split unit (its tests), half of them for a stress search (the launch counts it probes at
/// once: the other units keep the rest), one otherwise.
pub fn shares(unit: &Unit, gpu_jobs: usize) -> usize {
    let gpu_jobs = gpu_jobs.max(1);
    match unit.parallel {
        Parallel::One => 1,
        Parallel::Tests => gpu_jobs,
        Parallel::Launches => (gpu_jobs / 2).max(1),
    }
}

/// The class of a unit.
pub fn class(unit: &Unit) -> Class {
    if unit.blocked.is_some() {
        return Class::Free;
    }
    match unit.kind.row().placement {
        report::Placement::Cpu => Class::Cpu,
        report::Placement::Alone => Class::Alone,
        report::Placement::SharedGpu => Class::SharedGpu,
    }
}

/// The units that must end before unit `i` starts.
fn dependencies(plan: &Plan, i: usize, unit: &Unit) -> Vec<usize> {
    let mut deps: Vec<usize> = unit.compile.into_iter().collect();
    if unit.kind == StageKind::Sass {
        deps.extend(
            plan.units
                .iter()
                .enumerate()
                .take(i)
                .filter(|(_, u)| !matches!(u.kind, StageKind::Sass | StageKind::Report))
                .map(|(j, _)| j),
        );
    }
    deps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(kind: StageKind, split: bool) -> Unit {
        let parallel = if split {
            Parallel::Tests
        } else {
            Parallel::One
        };
        Unit {
            stage: 0,
            name: format!("{kind:?}"),
            kind,
            config: None,
            arch: None,
            case: None,
            cases: Vec::new(),
            compile: None,
            blocked: None,
            dir: "u".into(),
            serves: Vec::new(),
            parallel,
            profiles_baseline: None,
        }
    }

    #[test]
    fn a_split_unit_holds_every_share_of_its_gpu() {
        let plan = Plan {
            units: vec![
                unit(StageKind::Check, false),
                unit(StageKind::Memcheck, true),
                unit(StageKind::Racecheck, false),
            ],
        };
        let limits = Limits {
            jobs: 8,
            gpu_jobs: 4,
            gpus: 1,
        };
        let mut s = Scheduler::new(&plan, limits, |_| false);
        // Racecheck starts first (priority), then the check; the split memcheck waits for both.
        let first: Vec<usize> = s.start().into_iter().map(|(i, _)| i).collect();
        assert_eq!(first, vec![2, 0]);
        s.ended(2);
        assert!(s.start().is_empty(), "the split unit waits for the check");
        s.ended(0);
        let next: Vec<usize> = s.start().into_iter().map(|(i, _)| i).collect();
        assert_eq!(next, vec![1]);
        s.ended(1);
        assert!(!s.busy());
    }
}
