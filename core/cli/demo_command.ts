/**
 * `corral demo`: the tool table, then a few sandboxed calls on the shipped
 * defaults (a refused read outside the workspace and a plugin call in its
 * own process among them).
 *
 * @module
 */
import type { Registry } from "../registry/registry.ts";
import { colour } from "../tool/reporter.ts";
import { out } from "./output.ts";
import { toolTable } from "./tool_table.ts";

/** Run `corral demo`; returns the exit code. */
export async function demoCommand(registry: Registry, color: boolean): Promise<number> {
  out(
    colour(
      "corral: every tool call below runs in a sandbox holding only its letters.\n",
      "cyan",
      color,
    ),
  );
  for (const row of toolTable(registry.list(), color)) out(row);
  const readme = new URL("../../README.md", import.meta.url).pathname;
  const calls: Array<[string, Record<string, unknown>, string]> = [
    ["WordCount", { filepath: readme }, "count words of README.md (letters r)"],
    ["ListFiles", { path: ".", max_results: 5 }, "list the workspace (letters r)"],
    ["ReadFile", { filepath: "/etc/hostname" }, "read outside the workspace: refused"],
    [
      "Slugify",
      { text: "Hello from a process sandbox!" },
      "a plugin, in its own process (no letters)",
    ],
  ];
  for (const [name, args, what] of calls) {
    if (!registry.get(name)) continue;
    out(
      colour(`\n$ corral call ${name} --args '${JSON.stringify(args)}'   # ${what}`, "dim", color),
    );
    const result = await registry.call(name, args);
    out(JSON.stringify(result, null, 2).slice(0, 1200));
  }
  out(
    colour(
      "\nNext: `deno task corral list`, `deno task corral call NAME --args '{...}'`",
      "cyan",
      color,
    ),
  );
  return 0;
}
