//! A unit's cache key: what it runs, the files and tools it reads, and the GPU it runs on
//! ([`Key`]); a result is served only when every part of it is the same.

use std::path::Path;

use report::StageKind;

use crate::evidence::cache::Key;
use crate::evidence::hash;
use crate::evidence::rundir::slash;
use crate::execution::stages;
use crate::pipeline::config;
use crate::planning::plan::Unit;

use super::Executor;

impl Executor<'_> {
    /// The cache key of `unit`, about to run `invocation` for `stage`.
    pub(super) fn key(
        &self,
        unit: &Unit,
        stage: &config::Stage,
        invocation: &stages::Invocation,
    ) -> Key {
        let run = slash(&self.dir.relative);
        let mut key = Key {
            kind: config::kind_name(unit.kind).to_string(),
            stage: unit.name.clone(),
            command: invocation
                .display
                .iter()
                .map(|w| w.replace(&run, "<run>"))
                .collect(),
            ..Key::default()
        };
        if let Some(target) = &self.pipeline.target {
            // Every file of the target's tree, for the units that may read it (the build, a
            // program that reads more than its build's products): a changed header or script
            // never serves stale evidence. SASS keys on the products themselves. The
            // environment counts as much as the argv.
            let reads_sources = match unit.kind {
                StageKind::Compile => true,
                StageKind::Sass => false,
                _ => !target.program.reads_only_build,
            };
            if reads_sources {
                for file in
                    crate::pipeline::files::source_files(&self.pipeline.root, &target.sources)
                {
                    key.files.insert(key_path(&file), self.input_sha(&file));
                }
            }
            for (name, value) in &invocation.unit.env {
                key.command
                    .push(format!("{name}={}", value.replace(&run, "<run>")));
            }
            // What the program's exit statuses mean decides the unit's ending.
            let exits = self.exits(unit);
            if exits != config::ExitCodes::default() {
                key.command.push(format!(
                    "exit_codes: skipped {:?} broken {:?}",
                    exits.skipped, exits.broken
                ));
            }
            if let Some(compile) = unit.compile {
                // A build with no identity (it cannot happen: a dependent runs only after its
                // build succeeded) matches no earlier run.
                let identity = self
                    .build_sha(compile)
                    .unwrap_or_else(|| format!("unknown in {run}"));
                key.files.insert("<build>".into(), identity);
            }
            if unit.kind == StageKind::Sass {
                // The build's products; not the programs' JIT caches (`<build>/jit`): those
                // follow from the sources and environment already in the key, and are absent
                // when the program units were served from the cache.
                let jit = self.build_dir(unit).map(|d| {
                    let d = self.pipeline.resolve(&d.join("jit"));
                    std::path::absolute(&d).unwrap_or(d)
                });
                for dir in self.product_dirs(unit) {
                    for (product, _) in crate::execution::target::products(&[dir]) {
                        if jit.as_ref().is_some_and(|j| product.starts_with(j)) {
                            continue;
                        }
                        let name = product
                            .strip_prefix(&self.pipeline.root)
                            .map_or_else(|_| slash(&product), slash);
                        let sha = hash::file(&product).unwrap_or_default();
                        key.files.insert(name.replace(&run, "<run>"), sha);
                    }
                }
            }
        }
        if let Some(file) = &stage.suppressions {
            key.files.insert(slash(file), self.input_sha(file));
        }
        // What reads a bench's or baseline's timings from its text decides its status.
        if let Some(pattern) = &invocation.unit.timing_pattern {
            key.command.push(format!(
                "pattern={}",
                serde_json::to_string(pattern).unwrap_or_default()
            ));
        }
        if unit.kind == StageKind::Baseline {
            for word in &stage.command {
                let path = self.pipeline.resolve(Path::new(word));
                if path.is_file()
                    && let Ok(sha) = hash::file(&path)
                {
                    key.files.insert(word.clone(), sha);
                }
            }
        }
        let mut tools: Vec<&str> = stage.needs.tools.iter().map(String::as_str).collect();
        if unit.kind == StageKind::Compile {
            tools.push("ptxas");
        }
        for tool in tools {
            let version = match tool {
                "harness" => self.harness_sha(),
                _ => self
                    .preflight
                    .environment
                    .tools
                    .get(tool)
                    .cloned()
                    .unwrap_or_default(),
            };
            key.tools.insert(tool.to_string(), version);
        }
        if stage.needs.gpu {
            let env = &self.preflight.environment;
            key.gpu.extend(env.driver.clone());
            for gpu in &env.gpus {
                key.gpu.push(gpu.name.clone());
                key.gpu.extend(gpu.uuid.clone());
            }
        }
        key
    }

    /// The sha256 of an input file, relative to the pipeline's directory (empty when it cannot
    /// be read).
    fn input_sha(&self, relative: &Path) -> String {
        hash::file(&self.pipeline.resolve(relative)).unwrap_or_default()
    }

    /// The sha256 of the harness executable, computed once.
    fn harness_sha(&self) -> String {
        self.harness_hash
            .get_or_init(|| {
                self.preflight
                    .harness
                    .as_ref()
                    .ok()
                    .and_then(|argv| argv.first())
                    .and_then(|exe| hash::file(exe).ok())
                    .unwrap_or_default()
            })
            .clone()
    }
}

/// A file's path as a cache key holds it, byte-exact: `slash` where it is UTF-8, else its raw
/// bytes in hex, so two names that differ only in bytes that are not UTF-8 are two inputs.
fn key_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    match path.to_str() {
        Some(_) => slash(path),
        None => {
            let bytes = path.as_os_str().as_bytes();
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("<bytes:{hex}>")
        }
    }
}
