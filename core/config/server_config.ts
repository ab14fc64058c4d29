/**
 * Hosted MCP servers in `corral.json` (`servers`): how each starts (an npm
 * package at an exact version run by Deno, a PyPI package at an exact
 * version run by python3 from a private environment, or a command), its
 * environment (secrets named, never inlined), which of its tools are
 * offered and which need confirmation. Its grant lives in `permissions.json`
 * under `servers.<name>`, like a plugin's.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../tool/mod.ts";

const _NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,31}$/;
// An exact version only: nothing is resolved at start.
const _NPM = /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*@\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$/;
const _HOST = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)$/;
const _PYPI = /^[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.+!-]*$/;

/** The zod schema of one `servers.<name>` entry. */
export const serverEntrySchema = z.object({
  $comment: z.string().optional(),
  npm: z.string().regex(_NPM, "must be an npm package at an exact version (name@1.2.3)")
    .optional().describe("npm package at an exact version, run by `deno run`"),
  pypi: z.string().regex(_PYPI, "must be a PyPI package at an exact version (name==1.2.3)")
    .optional().describe("PyPI package at an exact version, installed in a private venv"),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "must be 64 hex digits").optional()
    .describe("PyPI: the wheel's SHA-256 (pip --require-hashes)"),
  command: z.array(z.string().min(1)).min(1).optional()
    .describe("The command: for pypi the program in the venv; else the whole command line"),
  args: z.array(z.string()).optional().describe("Arguments; ${workspace} is the workspace"),
  env: z.record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a variable name"),
    z.union([
      z.string(),
      z.object({
        secret: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
        inject: z.object({
          hosts: z.array(z.string().regex(_HOST, "must be a host name or address")).min(1)
            .describe("The hosts it goes to (over TLS); the server holds a placeholder"),
          header: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "must be a header name")
            .describe("The request header it goes in"),
          format: z.string().regex(/\{\}/, 'must hold "{}" where the secret goes').optional()
            .describe('The header\'s value, "{}" for the secret (default "{}")'),
        }).strict().optional().describe(
          "Injected at egress: the server never sees the secret (docs/hosting.md, Hosting MCP servers)",
        ),
      }).strict(),
    ]),
  ).optional().describe(
    'Environment: plain values, or {"secret": "HOST_VARIABLE"} (with "inject": put in at egress)',
  ),
  tools: z.object({
    allow: z.array(z.string()).optional(),
    deny: z.array(z.string()).optional(),
  }).strict().optional().describe("Which of its tools are offered (by the server's names)"),
  confirm: z.record(z.string(), z.boolean()).optional()
    .describe("Per tool: needs confirmation (true) or not (false), over its annotations"),
  timeout_ms: z.number().int().positive().max(3_600_000).optional()
    .describe("How long starting the server may take (default 30 s)"),
}).strict();

/** The raw `servers` record of corral.json. */
export const serversSchema = z.record(z.string(), serverEntrySchema);

/** How a hosted server starts. */
export type ServerKind = "npm" | "pypi" | "command";

/** A secret of a server's environment: read from a host variable; maybe injected at egress. */
export interface EnvSecret {
  secret: string;
  /** Put in at egress, for these hosts, in this header: the server holds a placeholder. */
  inject?: { hosts: string[]; header: string; format?: string };
}

/** One hosted server, validated. */
export interface ServerEntry {
  /** Its name: the toolset's name, the prefix of colliding tool names. */
  name: string;
  kind: ServerKind;
  /** npm: `@scope/name`; pypi: the project name; command: "". */
  package: string;
  /** The exact version (npm, pypi), else "". */
  version: string;
  /** PyPI: the expected SHA-256 of the distribution. */
  sha256?: string;
  /** The command (pypi: a program of the venv; command: the whole command line). */
  command: string[];
  args: string[];
  /** Plain values, or the name of a host variable holding a secret (maybe injected at egress). */
  env: Record<string, string | EnvSecret>;
  allow?: string[];
  deny: string[];
  confirm: Record<string, boolean>;
  startTimeoutMs: number;
}

/**
 * Turn the raw `servers` record into entries; throws a {@link ConfigError}
 * naming the entry for a bad name or not exactly one of npm, pypi, command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverEntries } from "./server_config.ts";
 * const [fs] = serverEntries({ fs: { npm: "@modelcontextprotocol/server-filesystem@2026.8.31" } }, "c.json");
 * assert.ok(fs.kind === "npm" && fs.version === "2026.8.31");
 * ```
 */
export function serverEntries(
  raw: z.infer<typeof serversSchema>,
  file: string,
): ServerEntry[] {
  return Object.entries(raw).map(([name, e]) => {
    if (!_NAME.test(name)) {
      throw new ConfigError(
        `${file}: servers.${name}: a server name is a letter, then letters, digits, _ or - ` +
          `(at most 32)`,
      );
    }
    const kinds = (["npm", "pypi"] as const).filter((k) => e[k] !== undefined);
    if (kinds.length > 1 || (kinds.length === 0 && !e.command)) {
      throw new ConfigError(
        `${file}: servers.${name}: give exactly one of "npm", "pypi" or "command"`,
      );
    }
    if (e.sha256 && !e.pypi) {
      throw new ConfigError(`${file}: servers.${name}.sha256: only for "pypi" servers`);
    }
    const kind: ServerKind = kinds[0] ?? "command";
    let pkg = "", version = "";
    if (e.npm) [pkg, version] = [e.npm.slice(0, e.npm.lastIndexOf("@")), e.npm.split("@").at(-1)!];
    if (e.pypi) [pkg, version] = e.pypi.split("==");
    return {
      name,
      kind,
      package: pkg,
      version,
      ...(e.sha256 ? { sha256: e.sha256 } : {}),
      command: e.command?.map((p) => localPath(p, dirname(file))) ??
        (kind === "pypi" ? [pkg] : []),
      args: e.args ?? [],
      env: e.env ?? {},
      ...(e.tools?.allow ? { allow: e.tools.allow } : {}),
      deny: e.tools?.deny ?? [],
      confirm: e.confirm ?? {},
      startTimeoutMs: e.timeout_ms ?? 30_000,
    };
  });
}

/**
 * A word of a server's `command` that names a file beside the config
 * (`./script.mjs`, `../bin/x`): made absolute against `dir`, the config's
 * folder. Any other word stays as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { localPath } from "./server_config.ts";
 * assert.equal(localPath("./s.mjs", "/etc/c"), "/etc/c/s.mjs");
 * assert.equal(localPath("node", "/etc/c"), "node");
 * ```
 */
export function localPath(word: string, dir: string): string {
  return word.startsWith("./") || word.startsWith("../") ? resolve(dir, word) : word;
}
