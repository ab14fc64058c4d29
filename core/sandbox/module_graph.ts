/**
 * The local files a module imports, so that a sandbox can be given read
 * access to exactly those and nothing else.
 *
 * @module
 */
import { dirname, isAbsolute, resolve } from "node:path";

const _SPECIFIER =
  /(?:^|[\s;}])(?:import|export)\s*(?:type\s+)?(?:[^'";]*?\s+from\s*)?["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)/g;

/**
 * Every local file reachable from `entries` by static imports, re-exports
 * and literal dynamic imports (absolute paths, sorted). `npm:`, `jsr:`,
 * `node:` and remote specifiers are not followed. Unreadable files are kept
 * in the list (the import itself will report them).
 *
 * @example
 * ```ts
 * import { localModuleGraph } from "./module_graph.ts";
 * const files = await localModuleGraph([new URL("../mod.ts", import.meta.url).pathname]);
 * console.assert(files.some((f) => f.endsWith("core/tool/tool.ts")));
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
    for (const m of text.matchAll(_SPECIFIER)) {
      const spec = m[1] ?? m[2];
      const target = _resolveLocal(spec, file, importMap);
      if (target && !seen.has(target)) queue.push(target);
    }
  }
  return [...seen].sort();
}

function _resolveLocal(
  spec: string,
  from: string,
  importMap: Record<string, string>,
): string | null {
  if (spec.startsWith("./") || spec.startsWith("../")) return resolve(dirname(from), spec);
  if (spec.startsWith("file://")) return new URL(spec).pathname;
  if (isAbsolute(spec)) return spec;
  for (const [key, value] of Object.entries(importMap)) {
    const hit = key.endsWith("/") ? spec.startsWith(key) : spec === key;
    if (hit && (value.startsWith("./") || value.startsWith("../") || value.startsWith("/"))) {
      return resolve(value + spec.slice(key.length));
    }
  }
  return null;
}
