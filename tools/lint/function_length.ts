/**
 * A `deno lint` rule for corral's core: no function in `core/` (tests aside)
 * runs over {@link MAX_FUNCTION_LINES} lines, so that each can be read at
 * once. deno.json names this file in `lint.plugins`, so `deno lint` (and
 * `deno task ok`) reports every such function; ./function_length_test.ts
 * feeds it functions of every shape and runs it on every file of `core/`.
 *
 * A function's length is the lines from its first to its last (a method's
 * from its name), nested functions included; its JSDoc is not counted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import plugin, { CORE_DIR } from "./function_length.ts";
 *
 * const long = `export function f() {\n${"  f();\n".repeat(80)}}\n`;
 * const found = Deno.lint.runPlugin(plugin, `${CORE_DIR}cli/x.ts`, long);
 * assert.equal(found.length, 1);
 * assert.match(found[0].message, /"f" is 82 lines/);
 * ```
 *
 * @module
 */

/** The most lines a function of `core/` may take. */
export const MAX_FUNCTION_LINES = 80;

/** The folder the rule watches (absolute path, with a trailing slash): corral's `core/`. */
export const CORE_DIR: string = decodeURIComponent(
  new URL("../../core/", import.meta.url).pathname,
);

/** Whether the rule judges `path`: a TypeScript file under `core/` that is not a test. */
export function watched(path: string): boolean {
  return path.startsWith(CORE_DIR) && /\.tsx?$/.test(path) && !/_test\.tsx?$/.test(path);
}

type _Function =
  | Deno.lint.FunctionDeclaration
  | Deno.lint.FunctionExpression
  | Deno.lint.ArrowFunctionExpression;

/** The `corral` lint plugin: its one rule, `function-length`. */
const plugin: Deno.lint.Plugin = {
  name: "corral",
  rules: {
    "function-length": {
      create(ctx) {
        if (!watched(ctx.filename)) return {};
        const text = ctx.sourceCode.text;
        const check = (node: _Function) => {
          const lines = _lines(text, node.range);
          if (lines <= MAX_FUNCTION_LINES) return;
          ctx.report({
            node,
            message: `Function "${_name(node)}" is ${lines} lines; core/ keeps each function ` +
              `to at most ${MAX_FUNCTION_LINES}`,
            hint: "Split it along its concerns into helpers (private ones prefixed `_`).",
          });
        };
        return {
          FunctionDeclaration: check,
          FunctionExpression: check,
          ArrowFunctionExpression: check,
        };
      },
    },
  },
};
export default plugin;

/** The lines a range of `text` spans, its first and last counted. */
function _lines(text: string, [start, end]: Deno.lint.Range): number {
  let lines = 1;
  for (let i = text.indexOf("\n", start); i !== -1 && i < end; i = text.indexOf("\n", i + 1)) {
    lines++;
  }
  return lines;
}

/** A function's name as a reader finds it: its own, its method's or property's, its variable's. */
function _name(node: _Function): string {
  if (node.type !== "ArrowFunctionExpression" && node.id) return node.id.name;
  const parent = node.parent;
  if (
    parent.type === "MethodDefinition" || parent.type === "Property" ||
    parent.type === "PropertyDefinition"
  ) {
    const key = parent.key;
    if (key.type === "PrivateIdentifier") return `#${key.name}`;
    if (key.type === "Identifier") return key.name;
    if (key.type === "Literal") return String(key.value);
  }
  if (parent.type === "VariableDeclarator" && parent.id.type === "Identifier") {
    return parent.id.name;
  }
  return "(anonymous)";
}
