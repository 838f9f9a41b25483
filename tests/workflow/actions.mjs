// GitHub's own workflow parser and expression evaluator (@actions/workflow-parser and
// @actions/expressions from github.com/actions/languageservices, installed into .tools/ by
// tests/install_tools.sh), loaded once for jobgraph.mjs, steps.mjs and steprun.mjs.
import { register } from "node:module";

// The packages' dist/ imports its schema JSON without `with {type: "json"}` (it expects a bundler;
// actions/languageservices#387), which plain Node refuses: add the attribute in a load hook.
register("data:text/javascript," + encodeURIComponent(`export async function load(url, ctx, next) {
  if (url.endsWith(".json") && !(ctx.importAttributes || {}).type)
    ctx = { ...ctx, importAttributes: { ...ctx.importAttributes, type: "json" } };
  return next(url, ctx);
}`));
const mods = new URL("../../.tools/node_modules/@actions/", import.meta.url);
export const wp = await import(new URL("workflow-parser/dist/index.js", mods));
export const { Lexer, Parser, Evaluator, data } = await import(new URL("expressions/dist/index.js", mods));
export const { falsy } = await import(new URL("expressions/dist/result.js", mods));
