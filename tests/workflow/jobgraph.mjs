// Which jobs of a workflow run in a scenario, decided with GitHub's own workflow parser and
// expression evaluator (@actions/workflow-parser, @actions/expressions from
// github.com/actions/languageservices, installed into .tools/ by tests/install_tools.sh).
//   node tests/workflow/jobgraph.mjs WORKFLOW.yml SCENARIO.json
// prints {"jobs": {id: {result, if, runs_on, matrix, error}}, "errors": [...]}; exits 1 when the
// workflow does not parse/convert. No steps run: job outputs come from scenario.outputs.
import { readFileSync } from "node:fs";
import { wp, Lexer, Parser, Evaluator, data, falsy } from "./actions.mjs";

const [wfPath, scPath] = process.argv.slice(2);
if (!wfPath || !scPath) { console.error("usage: jobgraph.mjs WORKFLOW.yml SCENARIO.json"); process.exit(2); }
const sc = JSON.parse(readFileSync(scPath, "utf8"));

// ---- parse + convert (the same two calls the language server makes) ----
const parsed = wp.parseWorkflow({ name: wfPath, content: readFileSync(wfPath, "utf8") }, new wp.NoOperationTraceWriter());
let template, fatal;
try {
  template = parsed.value && (await wp.convertWorkflowTemplate(parsed.context, parsed.value));
} catch (e) { fatal = String(e && e.message || e); }
const errors = parsed.context.errors.getErrors().map(e => e.message).concat((template?.errors || []).map(e => e.Message));
if (fatal) errors.push(fatal);
errors.splice(0, errors.length, ...new Set(errors)); // the converter repeats some parse errors
if (!template || errors.length) {
  console.log(JSON.stringify({ jobs: {}, errors }, null, 2));
  console.error(`jobgraph: ${wfPath} failed to parse/convert:\n  ` + (errors.join("\n  ") || "no template"));
  process.exit(1);
}

// ---- expression data <-> plain JSON ----
const toData = v => JSON.parse(JSON.stringify(v ?? null), data.reviver);
const toJS = d => (d === undefined ? null : JSON.parse(JSON.stringify(d, data.replacer)));
const CONTEXTS = ["github", "inputs", "vars", "secrets", "env", "needs", "strategy", "matrix", "job", "runner", "steps"];

// Evaluate one expression (no ${{ }}). `status` supplies the status functions, which are not
// built into @actions/expressions; their arity mirrors workflow-parser's job-if allowed context
// ("always(0,0)", "failure(0,MAX)", "cancelled(0,0)", "success(0,MAX)").
function evaluate(expr, ctx, status) {
  const funcs = status ? [
    { name: "success", minArgs: 0, maxArgs: Infinity, call: (...a) => new data.BooleanData(status.success(a.map(x => x.coerceString()))) },
    { name: "failure", minArgs: 0, maxArgs: Infinity, call: (...a) => new data.BooleanData(status.failure(a.map(x => x.coerceString()))) },
    { name: "cancelled", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(cancelledNow) },
    { name: "always", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(true) },
  ] : [];
  const tree = new Parser(new Lexer(expr).lex().tokens, CONTEXTS, funcs).parse();
  const dict = new data.Dictionary(...CONTEXTS.map(k => ({ key: k, value: toData(ctx[k] ?? {}) })));
  return new Evaluator(tree, dict, new Map(funcs.map(f => [f.name, f]))).evaluate(); // map keys: lowercase
}

// Evaluate a template token to plain JSON. The parser already turns "text ${{ a }} text" into a
// single BasicExpressionToken `format('text {0} text', a)`, so a scalar is either a literal or
// one expression; a lone `${{ x }}` keeps x's type (e.g. fromJSON gives a list/object).
function evalToken(tok, ctx) {
  if (tok === undefined || tok === null) return null;
  if (wp.isBasicExpression(tok)) return toJS(evaluate(tok.expression, ctx));
  if (wp.isSequence(tok)) return [...tok].map(t => evalToken(t, ctx));
  if (wp.isMapping(tok)) {
    const o = {};
    for (const { key, value } of tok) o[String(evalToken(key, ctx))] = evalToken(value, ctx);
    return o;
  }
  if (wp.isLiteral(tok)) return tok.value === undefined ? null : tok.value; // NullToken has no value
  throw new Error(`unsupported token type ${tok.type} (${tok.toDisplayString?.()})`);
}

// ---- contexts ----
// inputs: a workflow_dispatch run gets every declared input, defaults filled in; other events
// (schedule, push, ...) have an empty inputs context.
// Read from the parsed tokens: the converted events drop `type: number` inputs' defaults.
const inputs = {};
const find = (t, k) => (t && wp.isMapping(t) ? t.find(k) : undefined);
const declared = find(find(find(parsed.value, "on"), "workflow_dispatch"), "inputs");
if (sc.event_name === "workflow_dispatch" && declared)
  for (const { key, value } of declared) {
    const d = find(value, "default"), type = find(value, "type")?.value;
    if (!d || !wp.isLiteral(d) || d.value === undefined) continue;
    inputs[key.value] = type === "boolean" ? String(d.value) === "true" : type === "number" ? Number(d.value) : d.value;
  }
Object.assign(inputs, sc.inputs || {});
const repo = sc.repository || "owner/repo";
const github = {
  event_name: sc.event_name, ref: sc.ref || "refs/heads/main", ref_name: sc.ref_name ?? (sc.ref || "refs/heads/main").replace(/^refs\/(heads|tags)\//, ""),
  event: sc.event || {}, repository: repo, repository_owner: repo.split("/")[0], run_id: "1", run_number: "1",
  run_attempt: "1", workflow: "x", sha: "0".repeat(40), actor: "octocat", server_url: "https://github.com",
  api_url: "https://api.github.com", workspace: "/home/runner/work/x/x", ...(sc.github || {}),
};
const base = { github, inputs, vars: sc.vars || {}, secrets: sc.secrets || {} };
// Workflow-level env: evaluated with github/inputs/vars/secrets (no env context there); env values
// are strings (a boolean expression result becomes "true"/"false").
const env = {};
if (template.env && wp.isMapping(template.env))
  for (const { key, value } of template.env) {
    try {
      const d = wp.isBasicExpression(value) ? evaluate(value.expression, base) : toData(evalToken(value, base));
      env[String(evalToken(key, base))] = d.coerceString();
    } catch (e) { console.error(`jobgraph: env.${key}: ${e.message} (GitHub would fail the run)`); }
  }
base.env = env;

// ---- matrix expansion (docs: "Using a matrix for your jobs"; "Expanding or adding matrix
// configurations" for include; "Excluding matrix configurations" for exclude) ----
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
function expandMatrix(m) {
  if (m === null || typeof m !== "object" || Array.isArray(m)) throw new Error("Unexpected value for matrix: expected a mapping");
  const { include = [], exclude = [], ...vectors } = m;
  let combos = [{}];
  for (const [k, v] of Object.entries(vectors)) {
    if (!Array.isArray(v)) throw new Error(`Matrix vector '${k}' must be a sequence`);
    // GitHub refuses an empty vector: "Matrix vector 'x' does not contain any values".
    if (v.length === 0) throw new Error(`Matrix vector '${k}' does not contain any values`);
    combos = combos.flatMap(c => v.map(x => ({ ...c, [k]: x })));
  }
  const hasVectors = Object.keys(vectors).length > 0;
  // exclude: drop each combination that matches every key of some exclude entry (partial match).
  if (hasVectors) combos = combos.filter(c => !(exclude || []).some(e => Object.entries(e).every(([k, x]) => same(c[k], x))));
  else combos = [];
  // include: an entry's pairs are added to every combination whose ORIGINAL matrix values it
  // does not overwrite (added values may be overwritten); an entry added to none becomes a new
  // combination (which later include entries do not extend: the docs' fruit/animal example).
  const origs = combos.map(c => ({ ...c })), extra = [];
  for (const inc of include || []) {
    let added = false;
    combos.forEach((c, i) => {
      if (Object.entries(inc).every(([k, x]) => !(k in origs[i]) || same(origs[i][k], x))) { Object.assign(c, inc); added = true; }
    });
    if (!added) extra.push({ ...inc });
  }
  combos = combos.concat(extra);
  if (combos.length === 0) throw new Error(hasVectors ? "Matrix has no combinations after 'exclude'" : "Matrix must define at least one vector");
  return combos;
}

// ---- jobs in topological order of `needs` ----
const byId = new Map(template.jobs.map(j => [j.id.value, j]));
const needsOf = id => (byId.get(id).needs || []).map(n => n.value);
const order = [], seen = new Set();
const visit = (id, path = []) => {
  if (seen.has(id)) return;
  if (path.includes(id)) throw new Error(`needs cycle: ${[...path, id].join(" -> ")}`);
  for (const n of needsOf(id)) if (byId.has(n)) visit(n, [...path, id]);
  seen.add(id); order.push(id);
};
for (const id of byId.keys()) visit(id);

// The run is cancelled (scenario.cancelled) before any job's `if` is decided, or after the jobs named
// in scenario.decided_before_cancel (those started and ended as scenario.results says).
let cancelledNow = false;
const results = {}, outputs = {}, out = {};
const ancestors = id => { const s = new Set(); const walk = i => needsOf(i).forEach(n => { if (!s.has(n)) { s.add(n); walk(n); } }); walk(id); return s; };
for (const id of order) {
  const job = byId.get(id), needs = needsOf(id);
  cancelledNow = !!sc.cancelled && !(sc.decided_before_cancel || []).includes(id);
  // `if` as written: the converter wraps a condition without a status function as
  // `success() && (<if>)` (docs: "a default status check of success() is applied unless you
  // include one of these functions") and an absent `if` becomes `success()` (range undefined).
  const ifTok = job.if, written = ifTok && ifTok.range ? (ifTok.source ?? ifTok.expression) : null;
  const rec = { result: "skipped", if: written, runs_on: null, matrix: null, error: null };
  out[id] = rec;
  const ctx = { ...base, needs: Object.fromEntries(needs.map(n => [n, { result: results[n] ?? "skipped", outputs: outputs[n] || {} }])) };
  // Job-level status functions (docs "Status check functions"): success() — every direct need
  // succeeded (a skipped/failed/cancelled need makes it false, so a job without a status function
  // is skipped) and the run is not cancelled; failure() — any ancestor job failed; cancelled() —
  // the run was cancelled; always() — true. With arguments they look at the named jobs only.
  const status = {
    success: a => !cancelledNow && (a.length ? a : needs).every(n => results[n] === "success"),
    failure: a => [...(a.length ? a : ancestors(id))].some(n => results[n] === "failure"),
  };
  try {
    const cond = evaluate(ifTok ? ifTok.expression : "success()", ctx, status);
    // A falsy result (false, 0, '', null; the package's own `falsy`) skips the job.
    if (falsy(cond)) { results[id] = "skipped"; continue; }
  } catch (e) { rec.result = results[id] = "failure"; rec.error = `if: ${e.message}`; continue; }
  try {
    // strategy (maybe one whole `${{ fromJSON(...) }}`) is evaluated before the job starts; a bad
    // or empty matrix fails the job without running it.
    const strategy = job.strategy ? evalToken(job.strategy, ctx) : null;
    const m = strategy && strategy.matrix;
    if (m !== undefined && m !== null) rec.matrix = expandMatrix(m);
    // runs-on may use matrix: evaluated with the first combination (reported once).
    const n = rec.matrix ? rec.matrix.length : 1, ff = strategy?.["fail-fast"] ?? true;
    const mctx = { ...ctx, matrix: rec.matrix ? rec.matrix[0] : {}, strategy: { "fail-fast": ff, "job-index": 0, "job-total": n, "max-parallel": strategy?.["max-parallel"] ?? n } };
    rec.runs_on = job["runs-on"] !== undefined ? evalToken(job["runs-on"], mctx) : null;
  } catch (e) { rec.result = results[id] = "failure"; rec.error = e.message; rec.matrix = null; continue; }
  rec.result = results[id] = (sc.results || {})[id] || "success";
  outputs[id] = { ...((sc.outputs || {})[id] || {}) };
}
console.log(JSON.stringify({ jobs: out, errors }, null, 2));
