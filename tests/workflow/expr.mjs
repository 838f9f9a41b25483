// One `${{ }}` expression evaluated by GitHub's own evaluator (@actions/expressions), with the
// contexts given: for values a step's `env` takes on a kind of runner.
//   node tests/workflow/expr.mjs 'EXPRESSION' CONTEXTS.json   (prints the value as JSON)
import { readFileSync } from "node:fs";
import { Lexer, Parser, Evaluator, data } from "./actions.mjs";

const [expr, ctxPath] = process.argv.slice(2);
const given = JSON.parse(readFileSync(ctxPath, "utf8"));
const CONTEXTS = ["github", "inputs", "vars", "secrets", "env", "needs", "strategy", "matrix", "job", "runner", "steps"];
const dict = new data.Dictionary(...CONTEXTS.map(k => ({ key: k, value: JSON.parse(JSON.stringify(given[k] ?? {}), data.reviver) })));
const tree = new Parser(new Lexer(expr).lex().tokens, CONTEXTS, []).parse();
const value = new Evaluator(tree, dict, new Map()).evaluate();
console.log(JSON.stringify(value.coerceString ? value.coerceString() : String(value.value)));
