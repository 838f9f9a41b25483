// Every job's steps as GitHub reads them, with GitHub's own workflow parser
// (@actions/workflow-parser from github.com/actions/languageservices, installed into .tools/ by
// tests/install_tools.sh; the same parse + convert calls as jobgraph.mjs).
//   node tests/workflow/steps.mjs WORKFLOW.yml
// prints {"on": {event: filters}, "env": {...}, "jobs": [{id, env, runs_on, steps: [{id, name, run,
// uses, with, if, env, continue_on_error}]}], "errors": [...]}; exits 1 when the workflow does not parse/convert. A value
// is its literal text, or `${{ expression }}` as the parser has it ("a ${{ b }}" becomes format()).
import { readFileSync } from "node:fs";
import { wp } from "./actions.mjs";

const [wfPath] = process.argv.slice(2);
if (!wfPath) { console.error("usage: steps.mjs WORKFLOW.yml"); process.exit(2); }
const parsed = wp.parseWorkflow({ name: wfPath, content: readFileSync(wfPath, "utf8") }, new wp.NoOperationTraceWriter());
let template, fatal;
try {
  template = parsed.value && (await wp.convertWorkflowTemplate(parsed.context, parsed.value));
} catch (e) { fatal = String(e && e.message || e); }
const errors = [...new Set(parsed.context.errors.getErrors().map(e => e.message)
  .concat((template?.errors || []).map(e => e.Message), fatal ? [fatal] : []))];
if (!template || errors.length) {
  console.log(JSON.stringify({ env: {}, jobs: [], errors }, null, 2));
  console.error(`steps: ${wfPath} failed to parse/convert:\n  ` + (errors.join("\n  ") || "no template"));
  process.exit(1);
}

const text = tok => {
  if (tok === undefined || tok === null) return null;
  if (typeof tok !== "object") return tok;
  if (wp.isBasicExpression(tok)) return "${{ " + tok.expression + " }}";
  if (wp.isSequence(tok)) return [...tok].map(text);
  if (wp.isMapping(tok)) {
    const o = {};
    for (const { key, value } of tok) o[String(text(key))] = text(value);
    return o;
  }
  if (wp.isLiteral(tok)) return tok.value === undefined ? null : tok.value;
  return tok.toDisplayString ? tok.toDisplayString() : String(tok);
};

// The converter keeps no step's `with:`; it is read from the parsed (schema-checked) tokens, whose
// steps are the converted ones in the same order.
const get = (tok, key) => tok && wp.isMapping(tok) ? [...tok].find(p => String(text(p.key)) === key)?.value : undefined;
const rawSteps = id => {
  const steps = get(get(get(parsed.value, "jobs"), id), "steps");
  return steps && wp.isSequence(steps) ? [...steps] : [];
};

const jobs = template.jobs.map(job => ({
  id: job.id.value,
  env: text(job.env) || {},
  runs_on: text(job["runs-on"]),
  steps: (job.steps || []).map((s, i) => ({
    id: s.id, name: text(s.name), run: text(s.run), uses: text(s.uses), with: text(get(rawSteps(job.id.value)[i], "with")) || {},
    if: text(s.if),
    env: text(s.env) || {},
    continue_on_error: text(s["continue-on-error"]) ?? false,
  })),
}));
// template.events is plain JSON already (the converter's EventsConfig: paths, branches, types, inputs)
console.log(JSON.stringify({ on: template.events, env: text(template.env) || {}, jobs, errors }, null, 2));
