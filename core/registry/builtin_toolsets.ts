/**
 * corral's built-in toolsets: declared in `toolsets/toolsets.json` (which
 * ones autoload), one folder of tool modules each.
 *
 * @module
 */
import { join } from "node:path";
import { INSTALL_DIR, type Policy } from "../config/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import type { ToolsetSource } from "./catalog.ts";

/** The folder of the built-in toolsets. */
export const TOOLSETS_DIR: string = join(INSTALL_DIR, "toolsets");

/** The built-in toolsets declared in toolsets/toolsets.json. */
export async function builtinToolsets(): Promise<
  Record<string, { autoload: boolean; description: string; tools: string[] }>
> {
  const raw = JSON.parse(await Deno.readTextFile(join(TOOLSETS_DIR, "toolsets.json")));
  delete raw.$comment;
  return raw;
}

/**
 * Every built-in tool name with its toolset, loaded or not: reserved, so a
 * plugin takes one only with `allow_override`.
 */
export async function reservedToolNames(): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const [toolset, d] of Object.entries(await builtinToolsets())) {
    for (const tool of d.tools ?? []) names.set(tool, toolset);
  }
  return names;
}

/**
 * Tool module files of a directory: sorted, skipping `_*` helpers and `*_test.*`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "node:path";
 * import { TOOLSETS_DIR, toolModules } from "./builtin_toolsets.ts";
 * const files = await toolModules(join(TOOLSETS_DIR, "files"));
 * assert.ok(files.some((f) => f.endsWith("/word_count.ts")));
 * assert.ok(!files.some((f) => f.endsWith("_test.ts") || f.includes("/_")));
 * ```
 */
export async function toolModules(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (!e.isFile && !e.isSymlink) continue;
    if (!/\.(ts|js|mjs)$/.test(e.name)) continue;
    if (e.name.startsWith("_") || /_test\.(ts|js|mjs)$/.test(e.name)) continue;
    if (e.name.endsWith(".d.ts")) continue;
    out.push(join(dir, e.name));
  }
  return out.sort();
}

/** The source of one built-in toolset under `policy`. */
export async function builtinSource(name: string, policy: Policy): Promise<ToolsetSource> {
  return {
    id: name,
    kind: "builtin",
    modules: await toolModules(join(TOOLSETS_DIR, name)),
    policy: policy.toolset(name),
  };
}

/**
 * The built-in toolsets a start loads, in order: those that autoload and
 * those named in `wanted` (an unknown name is a `ConfigError`); a toolset
 * of the policy that no built-in has is said through `warn`.
 */
export async function startingBuiltins(
  policy: Policy,
  wanted: string[],
  warn: (text: string) => void,
): Promise<ToolsetSource[]> {
  const declared = await builtinToolsets();
  const known = Object.keys(declared).join(", ");
  for (const name of wanted) {
    if (!(name in declared)) {
      throw new ConfigError(`Unknown toolset "${name}" (built-in toolsets: ${known})`);
    }
  }
  const names = Object.keys(declared).filter((n) => declared[n].autoload || wanted.includes(n));
  // A typo in the policy would silently grant nothing: say so.
  for (const name of policy.toolsetNames()) {
    if (!(name in declared)) {
      warn(
        `Warning: ${policy.origin(`toolsets.${name}`)}: toolsets.${name}: no built-in ` +
          `toolset has that name (built-in toolsets: ${known}; plugins go under "plugins")`,
      );
    }
  }
  return await Promise.all(names.map((name) => builtinSource(name, policy)));
}
