/**
 * corral's command line: a thin layer over the registry.
 *
 *     corral list [--json]
 *     corral schema [--format openai|anthropic|mcp]
 *     corral call NAME --args '<json object>' | --args - [--yes] [--timeout MS]
 *     corral demo
 *     corral check PATH…
 *     corral new NAME [--permissions LETTERS] [--dir DIR] [--style class|module]
 *     corral plugins [list] | corral plugins install SPEC
 *     corral mcp [--http [HOST:]PORT [--token T] [--stateless]]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ConfigError } from "./core/tool/errors.ts";
import { describeGrant } from "./core/sandbox/grant.ts";
import { colour, lettersColour, Reporter } from "./core/tool/reporter.ts";
import { Registry, type RegistryOptions, type ToolInfo } from "./core/registry/registry.ts";
import type { SchemaFormat } from "./core/tool/schema.ts";
import { type CorralConfig, loadConfig } from "./core/config/corral_config.ts";
import { installPlugin } from "./core/plugins/packages.ts";
import { DEFAULT_PLUGIN_DIR, pluginSources } from "./core/plugins/plugins.ts";
import { loadPolicy, type Policy } from "./core/config/policy.ts";
// Commands load what only they need (the MCP SDK, authoring tools, the
// audit reader) on demand, so that `corral call` starts fast.
import type { McpHandle } from "./core/mcp/mcp_server.ts";

const USAGE = `corral: a sandboxed tool host for LLM agents

Usage:
  corral list [--json]                      every tool, its letters, isolation, grant and status
  corral schema [--format openai|anthropic|mcp]
                                            the catalog as function-calling schemas (JSON)
  corral call NAME --args JSON [--yes]      run one tool in its sandbox; --args - reads stdin
  corral demo                               list the tools and run a few sandboxed calls
  corral audit PATH [--tool X] [--since ISO|1h|30m]
                                            summary of an audit log: calls and outcomes per tool
  corral check PATH...                      load plugin files (or directories) in their sandboxes
                                            and report every breach of the tool contract
  corral new NAME [--permissions LETTERS] [--dir DIR] [--style class|module]
                                            write a working tool file and its test
  corral plugins [list]                     the plugin directories, files and packages found
  corral plugins install SPEC               cache a package plugin (npm:, jsr:, https:, path),
                                            pin it in the lock file and add it to corral.json
  corral mcp                                serve the tools over MCP on stdio (stdout: protocol only)
  corral mcp --http [HOST:]PORT             serve over Streamable HTTP at /mcp (default host 127.0.0.1)

Options:
  -r -w -x -n           grant only these letters (read, write, run, net); none given: all
  --toolset NAME        also load an on-demand toolset (repeatable), e.g. --toolset net
  --permissions PATH    the policy file (default: ./permissions.json, else the shipped one);
                        for "new": the tool's permission letters
  --config PATH         the config file (default: ./corral.json when present): tool_dirs,
                        plugins, services, toolsets, audit; CORRAL_TOOL_DIRS adds directories
                        (colon-separated)
  --workspace DIR       the workspace (default: the current directory)
  --timeout MS          shorter time limit for this call (never above the policy's)
  --yes                 approve calls of tools that need confirmation
  --no-cache            do not read or write the discovery cache
  --audit PATH          append one JSON line per tool call to PATH (off by default)
  --quiet               no progress reports on stderr
  --http [HOST:]PORT    mcp: Streamable HTTP instead of stdio; PORT 0 picks a free port
  --token TOKEN         mcp --http: require "Authorization: Bearer TOKEN" (default
                        CORRAL_MCP_TOKEN); required to bind a non-loopback address
  --stateless           mcp --http: no sessions, for several instances behind a load balancer
  --max-body BYTES      mcp --http: largest request body (default 1048576); larger: 413
  --max-concurrent N    mcp: calls running at once per session (default 8); more: tool error
  --allow-origin ORIGIN mcp --http: a browser origin allowed besides loopback (repeatable)
  --watch               mcp: reload plugin files that are added, changed or removed, and
                        send notifications/tools/list_changed
  -V, --version         corral's and Deno's versions
  -h, --help            this help

Exit codes: 0 success, 1 the tool failed, 2 usage or configuration error.`;

class _UsageError extends Error {}

const _OPTIONS = {
  r: { type: "boolean", short: "r" },
  w: { type: "boolean", short: "w" },
  x: { type: "boolean", short: "x" },
  n: { type: "boolean", short: "n" },
  toolset: { type: "string", multiple: true },
  permissions: { type: "string" },
  config: { type: "string" },
  dir: { type: "string" },
  style: { type: "string" },
  workspace: { type: "string" },
  json: { type: "boolean" },
  format: { type: "string" },
  args: { type: "string" },
  timeout: { type: "string" },
  yes: { type: "boolean" },
  "no-cache": { type: "boolean" },
  audit: { type: "string" },
  tool: { type: "string" },
  since: { type: "string" },
  quiet: { type: "boolean" },
  http: { type: "string" },
  token: { type: "string" },
  stateless: { type: "boolean" },
  "max-body": { type: "string" },
  "max-concurrent": { type: "string" },
  "allow-origin": { type: "string", multiple: true },
  watch: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
} as const;

type _Values = ReturnType<typeof _parse>["values"];

function _parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: _OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new _UsageError((err as Error).message);
  }
}

function _out(text: string): void {
  console.log(text);
}

async function _registry(values: _Values, reporter: Reporter): Promise<Registry> {
  let letters = ["r", "w", "x", "n"].filter((l) => values[l as "r"]).join("");
  if (letters === "") {
    letters = "rwxn";
    reporter.line(
      "Warning: corral runs with full privileges (r w x n); limit them with -r -w -x -n",
      "yellow",
    );
  }
  const { config, workspace } = await _config(values);
  const policy = await loadPolicy({ file: values.permissions, workspace });
  const plugins = await pluginSources({ policy, config, workspace });
  _pluginWarnings = plugins.warnings;
  _pluginContext = { policy, config, workspace, dirs: plugins.dirs.map((d) => d.real) };
  for (const w of plugins.warnings) reporter.line(`Warning: ${w}`, "yellow");
  const options: RegistryOptions = {
    privileges: letters,
    toolsets: [...new Set([...config.toolsets, ...(values.toolset ?? [])])],
    policy,
    workspace,
    sources: plugins.sources,
    reporter,
  };
  if (values["no-cache"]) options.cacheDir = null;
  const audit = values.audit ?? config.audit;
  if (audit) options.auditPath = audit;
  return await Registry.create(options);
}

/** What `--watch` needs to re-scan the plugin directories. */
let _pluginContext:
  | { policy: Policy; config: CorralConfig; workspace: string; dirs: string[] }
  | undefined;

/** Rejected plugin files and missing plugin directories of this run, for `list`. */
let _pluginWarnings: string[] = [];

async function _config(values: _Values): Promise<{ config: CorralConfig; workspace: string }> {
  let workspace: string;
  try {
    workspace = Deno.realPathSync(values.workspace ?? Deno.cwd());
    if (!Deno.statSync(workspace).isDirectory) throw new Error("not a directory");
  } catch (err) {
    const reason = err instanceof Deno.errors.NotFound
      ? "no such directory"
      : (err as Error).message;
    throw new _UsageError(`--workspace "${values.workspace ?? "."}": ${reason}`);
  }
  return { config: await loadConfig({ file: values.config, workspace }), workspace };
}

/** `mcp --watch`: reload changed plugin files and tell MCP clients. */
async function _watch(registry: Registry, reporter: Reporter, handle: McpHandle): Promise<void> {
  const ctx = _pluginContext!;
  const { watchPlugins } = await import("./core/plugins/plugin_watcher.ts");
  const watcher = await watchPlugins({
    registry,
    dirs: ctx.dirs,
    scan: async () => (await pluginSources(ctx)).sources,
    onChange: () => handle.notifyToolsChanged(),
    log: (text) => reporter.line(`corral: --watch: ${text}`),
  });
  handle.finished.finally(() => watcher.close());
  reporter.line(
    `corral: watching ${ctx.dirs.length} plugin director${ctx.dirs.length === 1 ? "y" : "ies"}`,
  );
}

/** `check`, `new` and `plugins`: commands that do not need the catalog. */
async function _authoring(command: string, values: _Values, rest: string[]): Promise<number> {
  const { config, workspace } = await _config(values);
  switch (command) {
    case "check": {
      if (rest.length === 0) {
        throw new _UsageError("check needs at least one plugin file or directory");
      }
      const policy = await loadPolicy({ file: values.permissions, workspace });
      const { checkPlugins, formatCheckReport } = await import("./core/plugins/check.ts");
      const report = await checkPlugins(rest, {
        workspace,
        policy,
        services: config.services,
        cacheDir: null,
      });
      _out(formatCheckReport(report, Deno.cwd()));
      return report.ok ? 0 : 1;
    }
    case "new": {
      if (!rest[0]) throw new _UsageError("new needs a tool name: corral new NAME --permissions r");
      let made;
      try {
        const { scaffoldTool } = await import("./core/plugins/scaffold.ts");
        made = await scaffoldTool({
          name: rest[0],
          permissions: values.permissions ?? "",
          dir: values.dir ?? config.toolDirs[0] ?? DEFAULT_PLUGIN_DIR,
          style: (values.style ?? "class") as "class" | "module",
        });
      } catch (err) {
        if (err instanceof TypeError) throw new _UsageError(err.message);
        throw err;
      }
      _out(`wrote ${made.file}\nwrote ${made.test}`);
      if (made.policyHint) {
        _out(`Plugins get no permissions by default; grant them in permissions.json:`);
        _out(`  ${made.policyHint}`);
      }
      _out(`Check it with: corral check ${made.file}`);
      return 0;
    }
    case "plugins": {
      const sub = rest[0] ?? "list";
      if (sub === "install") {
        if (!rest[1]) {
          throw new _UsageError("plugins install needs a specifier (npm:, jsr:, https: or a path)");
        }
        const configFile = config.file ?? `${workspace}/corral.json`;
        const res = await installPlugin(rest[1], { configFile });
        _out(`installed ${rest[1]}; ${res.added ? "added to" : "already in"} ${configFile}`);
        return 0;
      }
      if (sub !== "list") throw new _UsageError(`unknown plugins command "${sub}" (list, install)`);
      const policy = await loadPolicy({ file: values.permissions, workspace });
      const found = await pluginSources({ policy, config, workspace });
      for (const d of found.dirs) _out(`${d.dir}  (${d.origin}; toolsets plugin:${d.label}/...)`);
      for (const s of found.sources) _out(`  ${s.id}  ${s.modules[0]}  [${s.policy.where}]`);
      for (const w of found.warnings) _out(`  warning: ${w}`);
      return 0;
    }
  }
  return 2;
}

function _table(registry: Registry, color: boolean): void {
  const tools = registry.list();
  const width = Math.max(10, ...tools.map((t) => t.toolset.length));
  for (const t of tools) _out(_row(t, color, width));
}

function _row(t: ToolInfo, color: boolean, width = 10): string {
  const letters = colour((t.permissions || "-").padEnd(4), lettersColour(t.permissions), color);
  const status = t.status === "loaded"
    ? colour("loaded", "green", color)
    : colour(`${t.status}: ${t.reason ?? ""}`, t.status === "skipped" ? "yellow" : "red", color);
  return `${t.name.padEnd(22)} ${t.toolset.padEnd(width)} ${letters} ${
    t.isolation.padEnd(8)
  } ${status}\n${" ".repeat(23)}${
    colour(`${_relSource(t.source)}  grant: ${describeGrant(t.grant)}`, "dim", color)
  }${
    t.jail === "bwrap"
      ? colour("  jail: bwrap", "dim", color)
      : t.jail === "none"
      ? colour("  jail: NONE (subprocesses unjailed)", "yellow", color)
      : ""
  }`;
}

function _relSource(source: string): string {
  const root = new URL(".", import.meta.url).pathname;
  return source.startsWith(root) ? source.slice(root.length) : source;
}

function _color(): boolean {
  try {
    return !Deno.env.get("NO_COLOR") && Deno.stdout.isTerminal();
  } catch {
    return false;
  }
}

async function _readStdin(): Promise<string> {
  return await new Response(Deno.stdin.readable).text();
}

function _parseArgsJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new _UsageError(`--args is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new _UsageError('--args must be a JSON object, like \'{"filepath": "README.md"}\'');
  }
  return value;
}

async function _askOnTerminal(tool: ToolInfo, args: unknown): Promise<boolean> {
  const prompt = `Run ${tool.name} ${JSON.stringify(args)}? [y/N] `;
  Deno.stderr.writeSync(new TextEncoder().encode(prompt));
  const buf = new Uint8Array(256);
  const n = await Deno.stdin.read(buf);
  const answer = n ? new TextDecoder().decode(buf.subarray(0, n)).trim().toLowerCase() : "";
  return answer === "y" || answer === "yes";
}

async function _call(
  values: _Values,
  name: string | undefined,
  registry: Registry,
): Promise<number> {
  if (!name) throw new _UsageError("call needs a tool name: corral call NAME --args '{...}'");
  if (values.args === undefined) {
    throw new _UsageError(`call needs --args (a JSON object, or - for stdin)`);
  }
  const args = _parseArgsJson(values.args === "-" ? await _readStdin() : values.args);
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      throw new _UsageError(
        `--timeout must be a positive number of milliseconds, got "${values.timeout}"`,
      );
    }
  }
  const interactive = values.args !== "-" && Deno.stdin.isTerminal();
  const confirm = values.yes ? () => true : interactive ? _askOnTerminal : undefined;
  let result;
  try {
    result = await registry.call(name, args, { timeoutMs, confirm });
  } catch (err) {
    if (err instanceof TypeError) throw new _UsageError(err.message);
    throw err;
  }
  _out(JSON.stringify(result, null, 2));
  return result.success ? 0 : 1;
}

async function _demo(registry: Registry, color: boolean): Promise<number> {
  _out(
    colour(
      "corral: every tool call below runs in a sandbox holding only its letters.\n",
      "cyan",
      color,
    ),
  );
  _table(registry, color);
  const readme = new URL("./README.md", import.meta.url).pathname;
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
    _out(
      colour(`\n$ corral call ${name} --args '${JSON.stringify(args)}'   # ${what}`, "dim", color),
    );
    const result = await registry.call(name, args);
    _out(JSON.stringify(result, null, 2).slice(0, 1200));
  }
  _out(
    colour(
      "\nNext: `deno task corral list`, `deno task corral call NAME --args '{...}'`",
      "cyan",
      color,
    ),
  );
  return 0;
}

/** `corral audit PATH [--tool X] [--since ISO|1h|30m]`: the summary table. */
async function _auditCommand(values: _Values, rest: string[]): Promise<number> {
  if (!rest[0]) throw new _UsageError("audit needs the path of an audit log: corral audit PATH");
  const { formatAuditSummary, parseSince, readAudit, summarizeAudit } = await import(
    "./core/guard/audit.ts"
  );
  let since: Date | undefined;
  try {
    since = values.since === undefined ? undefined : parseSince(values.since);
  } catch (err) {
    throw new _UsageError((err as Error).message);
  }
  let read;
  try {
    read = await readAudit(rest[0], { tool: values.tool, since });
  } catch (err) {
    throw new ConfigError(`cannot read audit log "${rest[0]}": ${(err as Error).message}`);
  }
  _out(formatAuditSummary(summarizeAudit(read.records)));
  if (read.bad) _out(`(${read.bad} unreadable line${read.bad === 1 ? "" : "s"} skipped)`);
  return 0;
}

/** Run the CLI with `argv`; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  // Hidden: a compiled corral re-runs itself as a process sandbox.
  if (argv[0] === "__sandbox-child") {
    const { runSandboxChild } = await import("./core/sandbox/sandbox_child.ts");
    await runSandboxChild();
    return 0;
  }
  const reporter0 = new Reporter();
  try {
    const { values, positionals } = _parse(argv);
    if (values.version) {
      let version = "(unknown version)";
      try {
        version = JSON.parse(await Deno.readTextFile(new URL("./deno.json", import.meta.url)))
          .version;
      } catch { /* a compiled binary may not carry deno.json */ }
      _out(`corral ${version} (Deno ${Deno.version.deno})`);
      return 0;
    }
    if (values.help || positionals.length === 0) {
      (values.help ? _out : (t: string) => reporter0.line(t))(USAGE);
      return values.help ? 0 : 2;
    }
    const [command, ...rest] = positionals;
    if (command === "audit") return await _auditCommand(values, rest);
    const known = ["list", "schema", "call", "demo", "check", "new", "plugins", "mcp", "audit"];
    if (!known.includes(command)) {
      throw new _UsageError(`unknown command "${command}" (commands: ${known.join(", ")})`);
    }
    if (["check", "new", "plugins"].includes(command)) {
      return await _authoring(command, values, rest);
    }
    const reporter = new Reporter({ quiet: values.quiet });
    const registry = await _registry(values, reporter);
    try {
      const color = _color();
      switch (command) {
        case "list": {
          if (values.json) {
            _out(JSON.stringify(
              registry.list().map((t) => ({
                name: t.name,
                toolset: t.toolset,
                permissions: t.permissions,
                status: t.status,
                reason: t.reason ?? null,
                source: t.source,
                isolation: t.isolation,
                jail: t.jail ?? null,
                grant: t.grant,
              })),
              null,
              2,
            ));
          } else {
            _table(registry, color);
            for (const p of registry.problems) {
              _out(colour(`skipped module: ${p.message}`, "yellow", color));
            }
            for (const w of _pluginWarnings) _out(colour(`skipped plugin: ${w}`, "yellow", color));
          }
          return 0;
        }
        case "schema": {
          const format = (values.format ?? "openai") as SchemaFormat;
          if (!["openai", "anthropic", "mcp"].includes(format)) {
            throw new _UsageError(`--format must be openai, anthropic or mcp, got "${format}"`);
          }
          _out(JSON.stringify(registry.schemas(format), null, 2));
          return 0;
        }
        case "call":
          return await _call(values, rest[0], registry);
        case "demo":
          return await _demo(registry, color);
        case "mcp": {
          const { runMcpCommand } = await import("./core/mcp/mcp_server.ts");
          return await runMcpCommand(registry, {
            http: values.http,
            token: values.token,
            stateless: values.stateless,
            maxBody: values["max-body"],
            maxConcurrent: values["max-concurrent"],
            allowOrigin: values["allow-origin"],
            onServe: values.watch ? (handle) => _watch(registry, reporter, handle) : undefined,
          });
        }
      }
      return 2;
    } finally {
      await registry.close();
    }
  } catch (err) {
    if (err instanceof _UsageError) {
      reporter0.line(`corral: ${err.message}\nRun "corral --help" for usage.`);
      return 2;
    }
    if (err instanceof ConfigError) {
      reporter0.line(`corral: ${err.message}`);
      return 2;
    }
    reporter0.line(`corral: internal error: ${(err as Error)?.stack ?? err}`);
    return 3;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
