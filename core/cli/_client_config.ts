/**
 * `corral mcp --client-config [--http URL] [--show-token]`: print a ready
 * `mcpServers` entry for an MCP client (Claude Desktop, Cursor, Claude Code,
 * …). Over stdio it starts corral by absolute paths only (the Deno binary
 * running now, corral's `deno.json` and `main.ts`, the workspace and any
 * settings file given), so it works from a GUI app whose PATH has no `deno`
 * nor `~/.deno/bin`. Over HTTP it names the server's URL and reads the token
 * from `${CORRAL_MCP_TOKEN}`; for a server running at that URL, stderr says
 * where that server takes its token from (core/mcp/token_source.ts). The
 * token itself is printed only with `--show-token`.
 *
 * @module
 */
import { join } from "node:path";
import { configDir, envVar, INSTALL_DIR } from "../config/mod.ts";
import { runningServer, type ServerRecord, TOKEN_VAR, tokenMatches } from "../mcp/mod.ts";
import { HOST_FLAGS } from "../sandbox/mod.ts";
import { cliWorkspace } from "./_cli_settings.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { out } from "./_output.ts";

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
 * import { stdioEntry } from "./_client_config.ts";
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
      ...HOST_FLAGS,
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

/**
 * The HTTP entry: the URL, and the bearer token by `${CORRAL_MCP_TOKEN}` (in
 * clear only with `--show-token`). For a server running at that URL, the
 * token is the one it takes, and stderr says where that comes from (its
 * environment, its token file, its `--token`); else the one this shell
 * gives (`--token`, `CORRAL_MCP_TOKEN`), else the token file a server
 * started without either would use.
 */
async function _httpEntry(http: string, values: CliValues) {
  const url = mcpUrlOf(http);
  const server = await runningServer(url);
  const here = values.token ?? (envVar(TOKEN_VAR) || undefined);
  const hereFrom = values.token !== undefined ? "--token" : TOKEN_VAR;
  const { token, note } = server
    ? await _forRunning(server, here, hereFrom)
    : await _forNone(url, here, hereFrom);
  if (server?.source.kind === "none") {
    console.error(`corral: ${note}`);
    return { type: "http", url };
  }
  if (values["show-token"] && token === undefined) {
    throw new UsageError(`${note}; --show-token cannot print a token corral does not hold here`);
  }
  console.error(
    `corral: ${note}; ` +
      (values["show-token"]
        ? "the entry holds the token in clear: keep it private"
        : `the entry reads it from \${${TOKEN_VAR}} (clients that expand variables in headers); ` +
          `--show-token puts it in the entry instead`),
  );
  return {
    type: "http",
    url,
    headers: { Authorization: `Bearer ${values["show-token"] ? token : `\${${TOKEN_VAR}}`}` },
  };
}

/** The token of a running server, as this shell can know it, and where it comes from. */
async function _forRunning(
  server: ServerRecord,
  here: string | undefined,
  hereFrom: string,
): Promise<{ token?: string; note: string }> {
  const at = `the server running at ${server.url} (pid ${server.pid})`;
  const held = here !== undefined && tokenMatches(server, here);
  const check = here === undefined
    ? ""
    : held
    ? ` (${hereFrom} here holds it)`
    : ` (${hereFrom} here is NOT that token: the server would answer 401)`;
  switch (server.source.kind) {
    case "none":
      return { note: `${at} takes no token (--no-token): the entry has no header` };
    case "env":
      return {
        token: held ? here : undefined,
        note: `${at} takes the token in ${server.source.variable} of its own environment; ` +
          `set ${TOKEN_VAR} to the same value where the client runs${check}`,
      };
    case "flag":
      return {
        token: held ? here : undefined,
        note: `${at} takes the token given with --token on its command line; set ` +
          `${TOKEN_VAR} to it where the client runs${check}`,
      };
    case "file": {
      const file = server.source.file;
      const text = (await Deno.readTextFile(file).catch(() => "")).trim();
      const ok = text !== "" && tokenMatches(server, text);
      return {
        token: ok ? text : undefined,
        note: `${at} takes the token in ${file}` +
          (ok ? "" : " (which no longer holds it: restart the server)") +
          `; where the client runs: export ${TOKEN_VAR}="$(cat ${file})"`,
      };
    }
  }
}

/** No server at that URL now: this shell's token, else the file a server would make. */
async function _forNone(
  url: string,
  here: string | undefined,
  hereFrom: string,
): Promise<{ token?: string; note: string }> {
  if (here !== undefined) {
    return {
      token: here,
      note: `no corral server serves ${url} now; one started with the same ${hereFrom} ` +
        `accepts this entry`,
    };
  }
  // The same token `corral mcp --http` reads (or makes, once) when given none.
  const made = await (await import("../mcp/server_token.ts")).serverToken();
  return {
    token: made.token,
    note: `no corral server serves ${url} now; the token is in ${made.file}, which ` +
      `corral mcp --http started without --token or ${TOKEN_VAR} uses; where the client ` +
      `runs: export ${TOKEN_VAR}="$(cat ${made.file})"`,
  };
}

/**
 * The URL of `--http` as a client reaches it: a URL as given (its path
 * `/mcp` when it has none), or `[HOST:]PORT` of `corral mcp --http`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcpUrlOf } from "./_client_config.ts";
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
