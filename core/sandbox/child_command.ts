/**
 * The command line of a process sandbox's child: `deno run` whose
 * permission flags are the grant, `--cached-only --frozen` with a V8 heap
 * limit and corral's config (or, in a compiled binary, the binary itself
 * run as `__sandbox-child`), and the few environment variables it keeps.
 *
 * @module
 */
import { join } from "node:path";
import { compiledCorral } from "../base/mod.ts";
import { INSTALL_DIR } from "../config/mod.ts";
import { CHILD_ENTRY, type TransportSpec } from "./_transport.ts";

const _CONFIG = join(INSTALL_DIR, "deno.json");

/**
 * Whether this host is a compiled corral binary (`deno compile`): then
 * `Deno.execPath()` is corral itself, not `deno`, and a process sandbox is
 * `corral __sandbox-child`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { selfHosted } from "./child_command.ts";
 * assert.ok(selfHosted() === false); // under `deno run` / `deno test`
 * ```
 */
export function selfHosted(): boolean {
  return compiledCorral();
}

/** A permission flag of `l` (`*`: unscoped; empty: none). */
function _flag(name: string, l: string[]): string[] {
  return l.includes("*")
    ? [`--allow-${name}`]
    : l.length
    ? [`--allow-${name}=${[...new Set(l)].join(",")}`]
    : [];
}

/**
 * The child's arguments: the grant as flags, plus `sock` (the egress
 * socket inside the namespace) read and written, and `bridge` (its
 * listening address and socket) on the net list.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { childArgs } from "./child_command.ts";
 * const grant = { read: ["/ws"], write: [], run: [], net: [] };
 * const policy = { memory_mb: 128 } as never;
 * const args = childArgs({ grant, policy, read: ["/ws"], imports: [] } as never, [], []);
 * assert.ok(args.includes("--allow-read=/ws") && args.includes("--cached-only"));
 * assert.ok(!args.some((a) => a.startsWith("--allow-write")));
 * ```
 */
export function childArgs(spec: TransportSpec, sock: string[], bridge: string[]): string[] {
  const { grant: g, policy: p, read } = spec;
  if (selfHosted()) return ["__sandbox-child"];
  return [
    "run",
    "--no-prompt",
    "--cached-only",
    "--frozen",
    "--no-check",
    `--config=${_CONFIG}`,
    "--unstable-worker-options",
    ..._flag("read", [...read, ...sock]),
    ..._flag("write", [...g.write, ...sock]),
    ..._flag("run", g.run),
    ..._flag("net", [...g.net, ...bridge]),
    ..._flag("import", spec.imports),
    `--v8-flags=--max-old-space-size=${p.memory_mb}`,
    CHILD_ENTRY,
  ];
}

/**
 * The host variables a child keeps (HOME, Deno's cache, PATH, LANG,
 * NO_COLOR); everything else of the host's environment stays out.
 */
export function childEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["HOME", "DENO_DIR", "XDG_CACHE_HOME", "PATH", "LANG", "NO_COLOR"]) {
    try {
      const v = Deno.env.get(name);
      if (v !== undefined) env[name] = v;
    } catch { /* no env permission */ }
  }
  return env;
}
