/**
 * The local files a module imports, so that a sandbox can be given read
 * access to exactly those and nothing else.
 *
 * @module
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { AUTHOR_API_FILES } from "../config/mod.ts";

/**
 * An import, re-export or literal dynamic import; group 1 or 2 is its
 * specifier (global: use with `matchAll` or `replace`).
 */
export const IMPORT_SPECIFIER: RegExp =
  /(?:^|[\s;}])(?:import|export)\s*(?:type\s+)?(?:[^'";]*?\s+from\s*)?["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)/g;

/**
 * Every local file reachable from `entries` by static imports, re-exports
 * and literal dynamic imports (absolute paths, sorted). `npm:`, `jsr:`,
 * `node:` and remote specifiers are not followed. Unreadable files are kept
 * in the list (the import itself will report them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { localModuleGraph } from "./module_graph.ts";
 * const files = await localModuleGraph([new URL("../mod.ts", import.meta.url).pathname]);
 * assert.ok(files.some((f) => f.endsWith("core/tool/tool.ts")));
 * ```
 */
export async function localModuleGraph(
  entries: string[],
  importMap: Record<string, string> = {},
  read: (file: string) => Promise<string> = (file) => Deno.readTextFile(file),
): Promise<string[]> {
  const seen = new Set<string>();
  const queue = entries.map((e) => resolve(e));
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    let text: string;
    try {
      text = await read(file);
    } catch {
      continue;
    }
    for (const m of text.matchAll(IMPORT_SPECIFIER)) {
      const spec = m[1] ?? m[2];
      const target = resolveLocal(spec, file, importMap);
      if (target && !seen.has(target)) queue.push(target);
    }
  }
  return [...seen].sort();
}

/**
 * The local file `spec` names when imported from `from` (relative,
 * absolute, `file:`, a local import map entry, or corral's authoring API
 * `@corral/corral`), or null.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveLocal } from "./module_graph.ts";
 * assert.equal(resolveLocal("../b.ts", "/p/lib/a.ts"), "/p/b.ts");
 * assert.equal(resolveLocal("zod", "/p/a.ts"), null);
 * assert.ok(resolveLocal("@corral/corral", "/p/a.ts")!.endsWith("/core/mod.ts"));
 * ```
 */
export function resolveLocal(
  spec: string,
  from: string,
  importMap: Record<string, string> = {},
): string | null {
  if (spec.startsWith("./") || spec.startsWith("../")) return resolve(dirname(from), spec);
  if (spec.startsWith("file://")) return new URL(spec).pathname;
  if (isAbsolute(spec)) return spec;
  if (Object.hasOwn(AUTHOR_API_FILES, spec)) return AUTHOR_API_FILES[spec];
  for (const [key, value] of Object.entries(importMap)) {
    const hit = key.endsWith("/") ? spec.startsWith(key) : spec === key;
    if (hit && (value.startsWith("./") || value.startsWith("../") || value.startsWith("/"))) {
      return resolve(value + spec.slice(key.length));
    }
  }
  return null;
}

/**
 * The files of a module graph, each with the SHA-256 of the text it was
 * read from; a module that is no file (`npm:`, `https:`, pinned by Deno's
 * lock file) is kept under its specifier, as `"specifier"`.
 */
export type Pins = Record<string, string>;

/** Files read and hashed once for several graphs (they share core files): path → text and hash. */
export type PinMemo = Map<string, Promise<{ text: string; hash: string }>>;

/**
 * The local module graph of `entries` (as {@link localModuleGraph}), each
 * file pinned by the SHA-256 of the very text its imports were read from.
 * A file that cannot be read is pinned as `"missing"`. Graphs pinned with
 * the same `memo` read and hash each shared file once (keep a memo for one
 * discovery only: it does not see later edits).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinGraph } from "./module_graph.ts";
 * const pins = await pinGraph([new URL("./protocol.ts", import.meta.url).pathname]);
 * assert.ok(Object.values(pins).every((h) => /^[0-9a-f]{64}$/.test(h)));
 * ```
 */
export async function pinGraph(entries: string[], memo: PinMemo = new Map()): Promise<Pins> {
  const pins: Pins = {};
  const files = await localModuleGraph(entries, {}, async (file) => {
    let p = memo.get(file);
    if (!p) {
      p = Deno.readFile(file).then(async (bytes) => ({
        text: new TextDecoder().decode(bytes),
        hash: await sha256Hex(bytes),
      }));
      memo.set(file, p);
    }
    const { text, hash } = await p;
    pins[file] = hash;
    return text;
  });
  for (const f of files) pins[f] ??= "missing";
  return pins;
}

/**
 * The files of `pins` whose content is no longer what was pinned.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { changedPins, pinGraph } from "./module_graph.ts";
 * const pins = await pinGraph([new URL("./protocol.ts", import.meta.url).pathname]);
 * assert.ok((await changedPins(pins)).length === 0);
 * ```
 */
export async function changedPins(pins: Pins): Promise<string[]> {
  const changed: string[] = [];
  for (const [file, hash] of Object.entries(pins)) {
    if (!file.startsWith("/")) continue; // a package specifier (npm:, https:): Deno's lock pins it
    let now = "missing";
    try {
      now = await sha256Hex(await Deno.readFile(file));
    } catch { /* gone */ }
    if (now !== hash) changed.push(file);
  }
  return changed;
}

/** The SHA-256 of `bytes`, in hex. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
