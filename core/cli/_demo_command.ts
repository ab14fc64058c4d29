/**
 * `corral demo`: the tool table, then a few sandboxed calls on the shipped
 * defaults (a refused read outside the workspace and a plugin call in its
 * own process among them).
 *
 * @module
 */
import { join } from "node:path";
import { INSTALL_DIR } from "../config/mod.ts";
import type { Registry } from "../registry/mod.ts";
import { colour } from "../tool/mod.ts";
import { out } from "./_output.ts";
import { makeScratch } from "./_scratch.ts";
import { toolTable } from "./_tool_table.ts";

/**
 * A fresh scratch workspace for the demo (a copy of corral's README.md in a
 * temp folder): never corral's own folder, never the user's files.
 */
export async function demoWorkspace(): Promise<string> {
  const dir = await makeScratch("corral-demo-");
  await Deno.copyFile(join(INSTALL_DIR, "README.md"), join(dir, "README.md"));
  await Deno.writeTextFile(join(dir, "notes.txt"), "A scratch workspace for corral's demo.\n");
  return dir;
}

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
  out(colour(`workspace: ${registry.workspace}`, "dim", color));
  const calls: Array<[string, Record<string, unknown>, string]> = [
    ["WordCount", { filepath: "README.md" }, "count words of README.md (letters r)"],
    ["ListFiles", { path: ".", max_results: 5 }, "list the workspace (letters r)"],
    ["ReadFile", { filepath: "/etc/hostname" }, "read outside the workspace: refused"],
    [
      "RunBashCode",
      { code: "ls /home /root 2>&1; cat ~/.ssh/id_rsa 2>&1; ls", timeout: 10 },
      "bash sees only its grant (the workspace), not HOME or other folders",
    ],
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
      "\nNext: `corral list`, `corral call NAME --args '{...}'` (README, Quick start: the " +
        "corral command); the example plugins above load only here or where you name their folder",
      "cyan",
      color,
    ),
  );
  return 0;
}
