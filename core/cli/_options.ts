/**
 * The syntax of corral's command line: its help text, its options, and the
 * error a command throws for bad usage (exit code 2).
 *
 * @module
 */
import { parseArgs } from "node:util";

/** `corral --help`. */
export const USAGE = `corral: a sandboxed tool host for LLM agents

Usage:
  corral list [--json]                      every tool, its letters, isolation, grant and status
  corral stats [--json]                     every sandbox of the loaded tools started, and its
                                            memory: RSS and PSS of its processes (a server shows
                                            its live ones at /metrics: corral_sandbox_rss_bytes)
  corral schema [NAME] [--format openai|anthropic|mcp]
                                            the catalog (or one tool) as function-calling schemas
                                            (JSON); a NAME that did not load says why
  corral call NAME [--args JSON] [--yes]    run one tool in its sandbox; --args - reads stdin;
                                            no --args: {}, so the tool's defaults (a required
                                            parameter left out is named)
  corral changes [list] [--json]            the changes held for review (--hold, "hold": true) of
                                            the workspace: ID, tool, when, what
  corral changes show ID                    each held change as a diff, with what applying it now
                                            would do (apply, refused, conflict: judged as a call's)
  corral changes apply ID | drop ID         apply them, judged again against the tree as it is now
                                            (the user's edits since stay, as conflicts) | discard
  corral demo                               list the tools and run a few sandboxed calls
  corral audit [PATH] [--identity NAME] [--tool X] [--outcome O] [--since T] [--until T] [--json]
                                            summary of an audit log (default: the one the settings
                                            name, corral.json "audit"): calls and outcomes per tool
                                            (success, failure, error, denied); filters: who, tool,
                                            outcome, time (T: ISO time, or 30m, 1h, 2d ago);
                                            --json: the matching lines, one JSON object each
  corral config [--json]                    every setting in effect and the file it came from:
                                            shipped < ~/.config/corral < trusted project < flags,
                                            merged key by key
  corral trust [FILE...]                    use the project's corral.json / permissions.json as
                                            they are now (their hash is recorded; changed: refused)
  corral check PATH...                      load plugin files (or directories) in their sandboxes
                                            and report every breach of the tool contract
  corral harness [--config F] [--workspace D] FILE [TOOL] [ARGS...]
                                            run a tool file alone, from any folder, as corral
                                            would (TOOL_SETUP gets its services section of
                                            corral.json; is_configured, shouldLoad are asked),
                                            outside any sandbox; ARGS are the tool's own flags
                                            (FILE --help lists them, --json prints the result)
  corral new NAME [--permissions LETTERS] [--dir DIR] [--style class|module]
                                            write a working tool file and its test
  corral plugins [list] [--json]            the plugin directories, files and packages found
  corral plugins install SPEC               cache a package plugin (npm:, jsr:, https:, path),
                                            pin it in the lock file and add it to corral.json
  corral plugins init [DIR]                 write DIR/deno.json (default: your plugin folder) so
                                            that deno run -A FILE, deno test and editors resolve
                                            @corral/corral there (corral itself never reads it)
  corral servers [list] [--json]            the hosted MCP servers of corral.json ("servers"): kind,
                                            package, install (integrity), approved tools, changes
  corral servers install [NAME]             install npm/PyPI servers at their exact versions (PyPI:
                                            "sha256" checked first; a venv changed since its install
                                            is made afresh), then start each once and record its
                                            tools as approved
  corral servers approve NAME               start NAME and approve the tools it lists now (after
                                            corral list says a definition changed)
  corral mcp                                serve the tools over MCP on stdio (stdout: protocol only)
  corral mcp --http [HOST:]PORT             serve over Streamable HTTP at /mcp (default host 127.0.0.1)
  corral mcp --client-config [--http URL]   print a ready "mcpServers" entry for an MCP client:
                                            absolute paths (no PATH needed), the letters,
                                            --workspace and settings files given; for HTTP the
                                            URL, the token by its file (--show-token: in clear)
  corral tokens add NAME [--expires 30d]    make a bearer token for the identity NAME (printed once;
                                            only its hash is kept, in auth.tokens_file); --expires:
                                            refused after that duration (s, m, h, d) or ISO time
  corral tokens revoke NAME | list [--json] revoke NAME's token (refused from the next request;
                                            its calls, sessions and sandboxes end within 5 s; with
                                            --shared-state, on every replica and its JWTs too) |
                                            the identities that have one
  corral help [COMMAND]                     this help, or one command's

Options:
  -r -w -x -n           grant only these letters (read, write, run, net); none given: all
  --toolset NAME        also load an on-demand toolset (repeatable), e.g. --toolset net
  --permissions PATH    a policy file merged over the others, key by key (corral's shipped one,
                        ~/.config/corral/permissions.json, the project's once trusted with
                        corral trust); for "new": the tool's letters
  --config PATH         a config file merged over the others, key by key
                        (~/.config/corral/corral.json, the project's once trusted):
                        tool_dirs, plugins, services, toolsets, audit, identities, auth,
                        servers (hosted MCP servers; their grants: permissions.json "servers");
                        CORRAL_TOOL_DIRS adds directories (colon-separated)
  --workspace DIR       the workspace (default: the folder you run corral from; never corral's own)
  --unsafe-workspace    accept a workspace that is HOME, / or above HOME, on PATH, or holds
                        corral's installed command, config or cache (refused otherwise)
  --timeout MS          shorter time limit for this call (never above the policy's)
  --yes                 approve calls of tools that need confirmation
  --hold                call, mcp: hold every call's changes for review instead of applying
                        them (corral changes); per tool or toolset: "hold": true in permissions.json
  --no-cache            do not read or write the discovery cache
  --audit PATH          append one JSON line per tool call to PATH (off by default)
  --ca-file FILE        trust the certificates of FILE (PEM) in every sandbox and at egress,
                        beside SSL_CERT_FILE, SSL_CERT_DIR, NODE_EXTRA_CA_CERTS, DENO_CERT
  --audit-max-bytes N   the audit log's total with its 4 rotated files PATH.1-4 (default
                        1073741824; 0: never rotate; corral.json audit_max_bytes)
  --quiet               no progress reports on stderr
  --http [HOST:]PORT    mcp: Streamable HTTP instead of stdio; PORT 0 picks a free port
  --token TOKEN         mcp --http: require "Authorization: Bearer TOKEN" (default
                        CORRAL_MCP_TOKEN; without either, corral makes one and keeps it in
                        ~/.config/corral/mcp-token, readable by you only)
                        Other callers: corral.json "identities" and "auth" (static tokens from
                        corral tokens add, JWTs against a JWKS); /metrics takes the token in
                        CORRAL_METRICS_TOKEN, else ~/.config/corral/metrics-token
  --no-token            mcp --http: serve without a token (loopback only; warns)
  --stateless           mcp --http: no sessions, for several instances behind a load balancer
  --max-body BYTES      mcp: largest request (default 1048576); larger: HTTP 413, or on
                        stdio a JSON-RPC error
  --max-concurrent N    mcp: calls running at once in this instance (default 8)
  --max-queue N         mcp: calls waiting for a slot (default 256); beyond it: HTTP 429 with
                        Retry-After (stateless) or a tool error
  --max-sessions N      mcp --http: sessions at once (default 256); beyond it: 503
  --session-idle SECS   mcp --http: close a session (and a sandbox) idle this long (default 900)
  --max-sandboxes N     mcp: call sandboxes alive at once (default 64); when all run calls,
                        a call that needs another gets a tool error
  --head-timeout SECS   mcp --http: a request head must arrive whole this soon after the
                        connection opens (default 5); else 408 and the connection closes
  --body-timeout SECS   mcp --http: a request body must arrive whole this soon after its head
                        (default 30); else 408 and the connection closes
  --min-body-rate B     mcp --http: bytes a second a body must average after 5 s (default
                        1024; 0: none); else 408 and the connection closes
  --max-client-conns N  mcp --http: connections at once from one client address (default
                        256); beyond it the oldest that has not sent a whole request head
                        is closed, else 429
  --max-conns N         mcp --http: connections at once in all (default 1024); beyond it the
                        oldest without a whole request head is closed, else 503
  --max-identity-sessions N   mcp --http: sessions of one identity (default 64; 429 beyond)
  --max-identity-concurrent N mcp --http: calls of one identity running at once (default:
                        half of --max-concurrent, rounded up); the rest wait their turn
  --max-identity-queue N      mcp --http: calls of one identity waiting (default 64)
  --max-identity-conns N      mcp --http: requests of one identity in flight (default 64)
                        (each: identities.NAME.limits overrides it; not for the operator)
  --shared-state URL    mcp --http: redis://HOST:PORT shared by every replica: calls per
                        minute, sessions per identity and revocations hold across them
                        (corral.json shared_state; tokens revoke uses it too); without it,
                        these limits are per replica
  --allow-origin ORIGIN mcp --http: a browser origin allowed besides loopback (repeatable)
  --watch               mcp: reload plugin files that are added, changed or removed, and
                        send notifications/tools/list_changed
  -V, --version         corral's and Deno's versions
  -h, --help            this help

Exit codes: 0 success, 1 the tool failed, 2 usage or configuration error.`;

/** Bad usage of the command line: the message is printed with a pointer to `--help`; exit 2. */
export class UsageError extends Error {
  /** Create the error; `cause` keeps the underlying error, if any. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UsageError";
  }
}

/** Every option of every command (commands ignore the ones that are not theirs). */
export const CLI_OPTIONS = {
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
  "unsafe-workspace": { type: "boolean" },
  json: { type: "boolean" },
  format: { type: "string" },
  args: { type: "string" },
  timeout: { type: "string" },
  yes: { type: "boolean" },
  hold: { type: "boolean" },
  "no-cache": { type: "boolean" },
  audit: { type: "string" },
  "ca-file": { type: "string", multiple: true },
  "audit-max-bytes": { type: "string" },
  tool: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  identity: { type: "string" },
  outcome: { type: "string" },
  expires: { type: "string" },
  quiet: { type: "boolean" },
  http: { type: "string" },
  token: { type: "string" },
  "no-token": { type: "boolean" },
  "max-queue": { type: "string" },
  "max-sessions": { type: "string" },
  "session-idle": { type: "string" },
  "max-sandboxes": { type: "string" },
  "head-timeout": { type: "string" },
  "max-client-conns": { type: "string" },
  "max-conns": { type: "string" },
  "body-timeout": { type: "string" },
  "min-body-rate": { type: "string" },
  "max-identity-sessions": { type: "string" },
  "max-identity-concurrent": { type: "string" },
  "max-identity-queue": { type: "string" },
  "max-identity-conns": { type: "string" },
  "shared-state": { type: "string" },
  stateless: { type: "boolean" },
  "max-body": { type: "string" },
  "max-concurrent": { type: "string" },
  "allow-origin": { type: "string", multiple: true },
  watch: { type: "boolean" },
  "client-config": { type: "boolean" },
  "show-token": { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
} as const;

/** The parsed command line. */
export type CliArgs = ReturnType<typeof parseCli>;

/** The option values of a parsed command line. */
export type CliValues = CliArgs["values"];

/**
 * Parse `argv`; unknown options throw a {@link UsageError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCli } from "./_options.ts";
 * const { values, positionals } = parseCli(["call", "WordCount", "-r", "--args", "{}"]);
 * assert.deepEqual(positionals, ["call", "WordCount"]);
 * assert.equal(values.r, true);
 * assert.throws(() => parseCli(["--nope"]), { name: "UsageError" });
 * ```
 */
export function parseCli(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: CLI_OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    const message = (err as Error).message;
    const unknown = /Unknown option '([^']+)'/.exec(message)?.[1];
    if (unknown) throw new UsageError(`unknown option ${unknown} (corral --help lists them)`);
    throw new UsageError(message.replace(/'/g, '"'));
  }
}

/**
 * The help of one command: its usage lines from {@link USAGE}, or
 * undefined for an unknown command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commandHelp } from "./_options.ts";
 * assert.match(commandHelp("call")!, /corral call NAME \[--args JSON\]/);
 * assert.doesNotMatch(commandHelp("call")!, /corral list/);
 * ```
 */
export function commandHelp(command: string): string | undefined {
  const lines = USAGE.split("\n");
  const out: string[] = [];
  let inside = false;
  for (const line of lines) {
    if (/^ {2}corral \S/.test(line)) inside = line.startsWith(`  corral ${command}`);
    else if (!/^\s{20,}\S/.test(line)) inside = false;
    if (inside) out.push(line);
  }
  if (!out.length) return undefined;
  return `Usage:\n${out.join("\n")}\n\nOptions: see corral --help`;
}

/** How many positional arguments each command takes after its name: [min, max]. */
export const COMMAND_ARITY: Record<string, [number, number]> = {
  list: [0, 0],
  stats: [0, 0],
  schema: [0, 1],
  call: [1, 1],
  changes: [0, 2],
  demo: [0, 0],
  config: [0, 0],
  audit: [0, 1],
  trust: [0, 2],
  check: [0, Infinity],
  new: [1, 1],
  plugins: [0, 2],
  servers: [0, 2],
  mcp: [0, 0],
  tokens: [1, 2],
  help: [0, 1],
};
