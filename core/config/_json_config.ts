/**
 * Reading the operator's JSON files (`permissions.json`, `corral.json`):
 * plain JSON, or JSONC (comments, trailing commas) through jsonc-parser,
 * validated with a zod schema; every problem names the file and the key
 * path.
 *
 * @module
 */
import type { ParseError } from "jsonc-parser";
import { z } from "zod";
import { ConfigError } from "../tool/mod.ts";
import { closestNames } from "./closest.ts";

let _jsonc: typeof import("jsonc-parser") | undefined;

/**
 * Load the JSONC parser when `text` is not plain JSON (comments, trailing
 * commas). jsonc-parser is a CommonJS package: loading it starts Deno's
 * CommonJS loader, about 45 ms, which plain JSON never pays. The async
 * loaders call this; a synchronous caller with JSONC text calls it first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJsonConfig, readyJsonc } from "./_json_config.ts";
 * import { z } from "zod";
 * const text = '{"a": 1, // one\n}';
 * await readyJsonc(text);
 * assert.ok(parseJsonConfig(text, "x.json", z.object({ a: z.number() })).a === 1);
 * ```
 */
export async function readyJsonc(text = "/"): Promise<void> {
  if (_jsonc) return;
  try {
    JSON.parse(text);
  } catch {
    _jsonc = await import("jsonc-parser");
  }
}

function _parseJsonc(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch { /* not plain JSON: JSONC, or an error to locate */ }
  if (!_jsonc) {
    throw new TypeError(`Cannot parse ${file}: JSONC text needs await readyJsonc(text) first`);
  }
  // JSONC: comments and trailing commas are fine (jsonc-parser, VS Code's own).
  const errors: ParseError[] = [];
  const json: unknown = _jsonc.parse(text, errors, { allowTrailingComma: true });
  if (errors.length) {
    const lines = errors.slice(0, 5).map((e) => {
      const before = text.slice(0, e.offset).split("\n");
      const found = text.slice(e.offset, e.offset + Math.max(1, e.length)).split("\n")[0];
      return `${file}:${before.length}:${before.at(-1)!.length + 1}: not valid JSON: ` +
        `${_EXPECTED[_jsonc!.printParseErrorCode(e.error)] ?? "unexpected text"}` +
        (e.offset >= text.length
          ? ", found the end of the file"
          : `, found ${found.startsWith('"') ? found : JSON.stringify(found)}`);
    });
    throw new ConfigError(lines.join("\n"));
  }
  return json;
}

/** jsonc-parser's error codes, as what was expected (the code names are not for people). */
const _EXPECTED: Record<string, string> = {
  InvalidSymbol: "unexpected character",
  InvalidNumberFormat: "expected a number",
  PropertyNameExpected: "expected a key in double quotes",
  ValueExpected: "expected a value",
  ColonExpected: 'expected ":" after the key',
  CommaExpected: 'expected "," between two entries (or the closing bracket)',
  CloseBraceExpected: 'expected "}" to close the object',
  CloseBracketExpected: 'expected "]" to close the list',
  EndOfFileExpected: "expected the end of the file after the closing bracket",
  InvalidCommentToken: "expected a comment (// or /* */)",
  UnexpectedEndOfComment: 'expected "*/" to close the comment',
  UnexpectedEndOfString: "expected '\"' to close the string",
  UnexpectedEndOfNumber: "expected the rest of the number",
  InvalidUnicode: "expected four hex digits after \\u",
  InvalidEscapeCharacter: 'expected an escape such as \\n or \\" after "\\"',
  InvalidCharacter: "expected no control character inside a string",
};

/**
 * Parse the JSON (or JSONC: comments, trailing commas) text of a
 * configuration file and validate it with `schema`.
 * Throws a {@link ConfigError} with one line per problem, each naming the
 * file and the key path (`corral.json: tool_dirs[1]: Expected string, …`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { parseJsonConfig } from "./_json_config.ts";
 * const v = parseJsonConfig('{"a": 1}', "x.json", z.object({ a: z.number() }));
 * assert.ok(v.a === 1);
 * ```
 */
export function parseJsonConfig<T extends z.ZodTypeAny>(
  text: string,
  file: string,
  schema: T,
): z.infer<T> {
  const json = _parseJsonc(text, file);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) =>
      `${file}: ${formatPath(i.path)}: ${_issue(i, _knownKeys(schema, i.path))}`
    );
    throw new ConfigError(lines.join("\n"));
  }
  return parsed.data;
}

function _issue(i: z.ZodIssue, known: string[]): string {
  if (i.code === "unrecognized_keys") {
    const key = i.keys[0] ?? "";
    const near = i.keys.length === 1 && known.length
      ? closestNames(key, known, 1, Math.max(2, Math.floor(key.length / 3)))
      : [];
    return `unknown key${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `"${k}"`).join(", ")}` +
      (near.length ? ` (did you mean "${near[0]}"?)` : "");
  }
  if (i.code === "invalid_enum_value" && typeof i.received === "string") {
    const options = i.options.map(String);
    const near = closestNames(i.received, options, 1, Math.max(2, i.received.length / 2));
    return i.message + (near.length ? ` (did you mean "${near[0]}"?)` : "");
  }
  return i.message;
}

/** The keys the object schema at `path` knows (for "did you mean"). */
function _knownKeys(schema: z.ZodTypeAny, path: Array<string | number>): string[] {
  let s: z.ZodTypeAny | undefined = schema;
  const unwrap = (t: z.ZodTypeAny): z.ZodTypeAny =>
    t instanceof z.ZodOptional || t instanceof z.ZodDefault ? unwrap(t._def.innerType) : t;
  for (const step of path) {
    if (!s) return [];
    s = unwrap(s);
    if (s instanceof z.ZodObject) s = (s.shape as Record<string, z.ZodTypeAny>)[String(step)];
    else if (s instanceof z.ZodRecord) s = s._def.valueType;
    else if (s instanceof z.ZodArray) s = s._def.type;
    else return [];
  }
  if (!s) return [];
  s = unwrap(s);
  return s instanceof z.ZodObject ? Object.keys(s.shape) : [];
}

/** `["toolsets","files","read",0]` → `toolsets.files.read[0]`. */
export function formatPath(path: Array<string | number>): string {
  if (path.length === 0) return "(top level)";
  return path.map((p, i) => typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`).join("");
}
