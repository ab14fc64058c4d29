/**
 * `corral mcp --client-config [--http URL] [--show-token]`: print a ready
 * `mcpServers` entry for an MCP client (Claude Desktop, Cursor, Claude Code,
 * …). Over stdio it starts corral by absolute paths only (the Deno binary
 * running now, corral's `deno.json` and `main.ts`, the workspace and any
 * settings file given), so it works from a GUI app whose PATH has no `deno`
 * nor `~/.deno/bin`. Over HTTP it names the server's URL and the token's
 * file; the token itself is printed only with `--show-token`.
 *
 * @module
 */
import { join } from "node:path";
import { envVar } from "../config/env_var.ts";
import { configDir, INSTALL_DIR } from "../config/install_dir.ts";
import { HOST_PERMISSION_FLAGS } from "../sandbox/host_flags.ts";
import { cliWorkspace } from "./cli_settings.ts";
import { type CliValues, UsageError } from "./options.ts";
import { out } from "./output.ts";

/** The environment variables corral reads that a client should pass on when set. */
const _PASSED_ON = ["DENO_DIR", "CORRAL_CACHE_DIR", "CORRAL_TOOL_DIRS", "CORRAL_SERVERS_DIR"];

/** Run `corral mcp --client-config`; returns the exit code. */
export async function clientConfigCommand(values: CliValues): Promise<number> {
  const entry = values.http === undefined
    ? await stdioEntry(values)
    : await _httpEntry(values.http, values);
  out(JSON.stringify({ mcpServers: { corral: entry } }, null, 2));
  return 0;
}

/**
 * The stdio entry: `deno run` with corral's host flags, by absolute paths,
 * and the command line's letters, workspace and settings files.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stdioEntry } from "./client_config.ts";
 * const e = await stdioEntry({ r: true, workspace: await Deno.makeTempDir() } as never);
 * assert.equal(e.command, Deno.execPath());
 * assert.ok(e.args.every((a) => !a.startsWith(".")) && e.args.includes("-r"));
 * assert.ok(e.args.includes("mcp") && e.args.at(-2) === "--workspace");
 * ```
 */
export async function stdioEntry(
  values: CliValues,
): Promise<{ command: string; args: string[]; env: Record<string, string> }> {
  const ws = await cliWorkspace(values, { quiet: true });
  if (!values.workspace && ws.from.startsWith("a scratch")) {
    throw new UsageError(
      "--client-config needs the workspace the client will use: pass --workspace DIR " +
        "(corral's own folder is never one)",
    );
  }
  const letters = (["r", "w", "x", "n"] as const).filter((l) => values[l]).map((l) => `-${l}`);
  const settings = [
    ...(values.permissions ? ["--permissions", values.permissions] : []),
    ...(values.config ? ["--config", values.config] : []),
    ...(values.audit ? ["--audit", values.audit] : []),
    ...(values.toolset ?? []).flatMap((t) => ["--toolset", t]),
  ];
  const env: Record<string, string> = { CORRAL_CONFIG_DIR: configDir() };
  for (const name of _PASSED_ON) {
    const v = envVar(name);
    if (v) env[name] = v;
  }
  return {
    command: Deno.execPath(),
    args: [
      "run",
      ...HOST_PERMISSION_FLAGS,
      "--config",
      join(INSTALL_DIR, "deno.json"),
      join(INSTALL_DIR, "main.ts"),
      "mcp",
      ...letters,
      ...settings,
      "--workspace",
      ws.workspace,
    ],
    env,
  };
}

/** The HTTP entry: the URL, and the bearer token by its file (in clear only when asked). */
async function _httpEntry(http: string, values: CliValues) {
  const url = mcpUrlOf(http);
  let token = values.token ?? (envVar("CORRAL_MCP_TOKEN") || undefined);
  let where = values.token ? "--token" : "CORRAL_MCP_TOKEN";
  if (token === undefined) {
    // The same token `corral mcp --http` reads (or makes, once) in corral's config directory.
    const made = await (await import("../mcp/server_token.ts")).serverToken();
    token = made.token;
    where = made.file;
  }
  console.error(
    values["show-token"]
      ? `corral: the entry holds the bearer token in clear (from ${where}): keep it private`
      : `corral: the bearer token is in ${where}; clients that expand \${VAR} in headers ` +
        `read it from CORRAL_MCP_TOKEN (export CORRAL_MCP_TOKEN="$(cat ${where})"); ` +
        `--show-token puts it in the entry instead`,
  );
  return {
    type: "http",
    url,
    headers: {
      Authorization: `Bearer ${values["show-token"] ? token : "${CORRAL_MCP_TOKEN}"}`,
    },
  };
}

/**
 * The URL of `--http` as a client reaches it: a URL as given (its path
 * `/mcp` when it has none), or `[HOST:]PORT` of `corral mcp --http`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcpUrlOf } from "./client_config.ts";
 * assert.equal(mcpUrlOf("8765"), "http://127.0.0.1:8765/mcp");
 * assert.equal(mcpUrlOf("https://corral.example"), "https://corral.example/mcp");
 * ```
 */
export function mcpUrlOf(http: string): string {
  if (/^https?:\/\//.test(http)) {
    const u = new URL(http);
    if (u.pathname === "/" || u.pathname === "") u.pathname = "/mcp";
    return u.toString();
  }
  const m = /^(?:(.+):)?(\d+)$/.exec(http);
  if (!m) {
    throw new UsageError(`--http must be a URL or [HOST:]PORT, got "${http}"`);
  }
  const host = m[1] ?? "127.0.0.1";
  return `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${m[2]}/mcp`;
}
