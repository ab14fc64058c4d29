/**
 * `deno task compile`: build corral as one executable with `deno compile`.
 *
 * What the binary needs beyond main.ts's static imports is named with
 * `--include`: the sandbox worker entry (started with `new Worker`), the
 * sandbox child, every built-in tool module (imported by path at run time,
 * which `deno compile` cannot see), `toolsets/toolsets.json` and the shipped
 * `permissions.json`. The host's permissions and `--unstable-worker-options`
 * are fixed at compile time. Every program corral starts is the binary
 * itself, re-run with a hidden subcommand (core/jail/self_run.ts): a
 * process sandbox (`corral __sandbox-child`, which revokes what the grant
 * does not use before any tool code loads), the tree applier
 * (`__applier`), a hosted server's egress bridge (`__egress-bridge`).
 *
 *     deno task compile              # writes ./corral
 *     deno task compile dist/corral  # another output path
 *
 * @module
 */
import { join } from "node:path";
import { INSTALL_DIR } from "../config/mod.ts";
import { toolModules } from "../registry/mod.ts";
import { HOST_FLAGS } from "../sandbox/mod.ts";
import { SELF_PROGRAMS, WRITTEN_OUT } from "../base/mod.ts";

/**
 * Files the binary must embed besides main.ts's static import graph
 * (absolute paths).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compileIncludes } from "./compile.ts";
 * const files = await compileIncludes();
 * assert.ok(files.some((f) => f.endsWith("core/sandbox/sandbox_worker.ts")));
 * assert.ok(files.some((f) => f.endsWith("core/cli/_call_command.ts")));
 * ```
 */
export async function compileIncludes(): Promise<string[]> {
  const files = [
    join(INSTALL_DIR, "core", "sandbox", "sandbox_worker.ts"),
    join(INSTALL_DIR, "core", "sandbox", "sandbox_child.ts"),
    join(INSTALL_DIR, "toolsets", "toolsets.json"),
    join(INSTALL_DIR, "permissions.json"),
  ];
  for await (const e of Deno.readDir(join(INSTALL_DIR, "toolsets"))) {
    if (e.isDirectory) files.push(...await toolModules(join(INSTALL_DIR, "toolsets", e.name)));
  }
  // Loaded by a computed specifier when a hosted server first starts.
  files.push(join(INSTALL_DIR, "core", "hosted", "hosted_server.ts"));
  // The programs a compiled corral starts as itself, and its files it writes out for a real
  // `deno run` (core/jail/self_run.ts).
  files.push(...Object.values(SELF_PROGRAMS).map((f) => join(INSTALL_DIR, f)));
  files.push(...Object.values(WRITTEN_OUT).flat().map((f) => join(INSTALL_DIR, f)));
  // main.ts loads core/cli/cli.ts, and that each command's module, by a computed specifier (only
  // the one that runs).
  files.push(join(INSTALL_DIR, "core", "cli", "cli.ts"));
  const cli = await Deno.readTextFile(join(INSTALL_DIR, "core", "cli", "cli.ts"));
  for (const m of cli.matchAll(/_load<typeof import\("([^"]+)"\)>/g)) {
    files.push(join(INSTALL_DIR, "core", "cli", m[1]));
  }
  return [...new Set(files)].sort();
}

/**
 * Folders of npm packages that `deno compile` cannot embed, by package
 * name: none is code. bintrees (prom-client → tdigest → bintrees) ships
 * `test/perf/100k`, 2 MB of numbers one per line, on which Deno 2.9.6's
 * compile overflows its stack ("thread 'tokio-runtime-worker' has
 * overflowed its stack", exit 134), whatever `RUST_MIN_STACK` says.
 */
const _UNEMBEDDABLE: Record<string, string[]> = { bintrees: ["test"] };

/**
 * The paths `deno compile` must leave out (absolute, in Deno's npm cache):
 * the {@link _UNEMBEDDABLE} folders of the packages in corral's lock.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compileExcludes } from "./compile.ts";
 * assert.ok((await compileExcludes()).some((f) => f.endsWith("/bintrees/1.0.2/test")));
 * ```
 */
export async function compileExcludes(): Promise<string[]> {
  // Deno's npm snapshot lists every package of the lock with its folder, whatever the root.
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "info",
      "--json",
      `--config=${join(INSTALL_DIR, "deno.json")}`,
      join(INSTALL_DIR, "core", "telemetry", "metrics.ts"),
    ],
    cwd: INSTALL_DIR,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  let info: { npmPackages?: Record<string, { name?: string; localPath?: string }> } = {};
  try {
    info = JSON.parse(new TextDecoder().decode(out.stdout));
  } catch { /* nothing to leave out: compile reports what it cannot embed */ }
  return Object.values(info.npmPackages ?? {}).flatMap((p) =>
    p.localPath ? (_UNEMBEDDABLE[p.name ?? ""] ?? []).map((d) => join(p.localPath!, d)) : []
  ).sort();
}

/**
 * The arguments of `deno compile` for corral, writing `output`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compileArgs } from "./compile.ts";
 * const args = await compileArgs("/tmp/corral");
 * assert.ok(args[0] === "compile" && args.includes("--unstable-worker-options"));
 * ```
 */
export async function compileArgs(output: string): Promise<string[]> {
  return [
    "compile",
    `--config=${join(INSTALL_DIR, "deno.json")}`,
    "--unstable-worker-options",
    ...HOST_FLAGS, // the permissions and V8 flags of `deno task corral`
    ...(await compileIncludes()).flatMap((f) => ["--include", f]),
    ...(await compileExcludes()).flatMap((f) => ["--exclude", f]),
    "--output",
    output,
    join(INSTALL_DIR, "main.ts"),
  ];
}

if (import.meta.main) {
  const output = Deno.args[0] ?? "corral";
  const status = await new Deno.Command(Deno.execPath(), {
    args: await compileArgs(output),
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  Deno.exit(status.code);
}
