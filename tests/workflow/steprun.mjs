// Which steps of one job run, in order, decided with GitHub's own workflow parser and expression
// evaluator (as jobgraph.mjs decides jobs): each step's `if` is evaluated against the outcomes of
// the steps before it, which the scenario gives (a step that runs gets its scenario outcome, else
// "success"; a step that does not run is "skipped").
//   node tests/workflow/steprun.mjs WORKFLOW.yml SCENARIO.json
// SCENARIO: {"job": id, "outputs": {stepId: {name: value}}, "outcomes": {stepId: "failure"}, "github": {...}}
// prints {"steps": [{id, name, if, ran, outcome}], "result": "success"|"failure"}. Step status
// functions (docs "Status check functions"): success() — no earlier step failed; failure() — one
// did; always() — true; cancelled() — false.
import { readFileSync } from "node:fs";
import { wp, Lexer, Parser, Evaluator, data, falsy } from "./actions.mjs";

const [wfPath, scPath] = process.argv.slice(2);
const sc = JSON.parse(readFileSync(scPath, "utf8"));
const parsed = wp.parseWorkflow({ name: wfPath, content: readFileSync(wfPath, "utf8") }, new wp.NoOperationTraceWriter());
const template = await wp.convertWorkflowTemplate(parsed.context, parsed.value);
const job = template.jobs.find(j => j.id.value === sc.job);
if (!job) { console.error(`steprun: no job ${sc.job}`); process.exit(2); }

const toData = v => JSON.parse(JSON.stringify(v ?? null), data.reviver);
const CONTEXTS = ["github", "inputs", "vars", "secrets", "env", "needs", "strategy", "matrix", "job", "runner", "steps"];
let failed = false;
const stepsCtx = {};
const out = [];
for (const step of job.steps) {
  const funcs = [
    { name: "success", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(!failed) },
    { name: "failure", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(failed) },
    { name: "cancelled", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(false) },
    { name: "always", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(true) },
  ];
  const expr = step.if ? step.if.expression : "success()";
  const ctx = { github: sc.github || {}, steps: stepsCtx, env: {}, vars: {}, secrets: {}, inputs: {}, needs: sc.needs || {} };
  const tree = new Parser(new Lexer(expr).lex().tokens, CONTEXTS, funcs).parse();
  const dict = new data.Dictionary(...CONTEXTS.map(k => ({ key: k, value: toData(ctx[k] ?? {}) })));
  const ran = !falsy(new Evaluator(tree, dict, new Map(funcs.map(f => [f.name, f]))).evaluate());
  const outcome = ran ? ((sc.outcomes || {})[step.id] || "success") : "skipped";
  if (outcome === "failure" && step["continue-on-error"] !== true) failed = true;
  stepsCtx[step.id] = { outcome, conclusion: outcome, outputs: ran ? ((sc.outputs || {})[step.id] || {}) : {} };
  out.push({ id: step.id, name: step.name ? String(step.name.toDisplayString?.() ?? step.name) : null, if: expr, ran, outcome });
}
console.log(JSON.stringify({ steps: out, result: failed ? "failure" : "success" }, null, 2));
