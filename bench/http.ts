/**
 * Section 8 of the benchmark: MCP over Streamable HTTP, calls per second.
 * `corral mcp --http 127.0.0.1:0 --stateless --no-token` and a bare SDK
 * server (`bench/bare_http_server.ts`, served the same way) are driven by
 * the same client code: plain `fetch` POSTs of a JSON-RPC `tools/call` of
 * `ReadFile` on the same 10240-byte file, one request at a time per client
 * (a stateless server needs no `initialize`). Each repetition runs, for each
 * server (their order alternating), TOTAL = CLIENTS × PER_CLIENT calls twice:
 * by 1 client, and by CLIENTS clients at once (PER_CLIENT calls each). Every
 * call that does not come back as the file's text counts as refused: HTTP 429
 * (the call gate's queue full), any other HTTP error, a JSON-RPC or tool
 * error, or a network error. Prints one JSON object.
 *
 *     deno run -A bench/http.ts CLIENTS PER_CLIENT REPS
 *
 * @module
 */
import { CORRAL_FLAGS } from "../testing/corral_http.ts";
import { MCP_POST_HEADERS } from "../testing/mcp_client.ts";
import { ROOT } from "../testing/paths.ts";
import { stopChild } from "../testing/stop_child.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { BENCH, quantile, sleep } from "./lib.ts";

/** One timed run: `calls` calls by `clients` clients at once. */
export interface HttpRun {
  clients: number;
  calls: number;
  /** Wall time from the first request to the last answer. */
  wallMs: number;
  ok: number;
  /** HTTP 429. */
  busy: number;
  /** Any other HTTP status that is not 2xx. */
  httpErrors: number;
  /** A JSON-RPC error, `isError`, or an answer without the file's text. */
  toolErrors: number;
  /** fetch failed (refused connection, reset, 60 s time-out). */
  networkErrors: number;
  /** Per-call latency, ms. */
  p50: number;
  p99: number;
}

/** One server's runs. */
export interface HttpServerResult {
  /** Why it could not be measured. */
  error?: string;
  /** Spawn to listening (the URL on stderr). */
  listenMs?: number;
  /** Refused calls of the warm-up (CLIENTS clients, 2 calls each). */
  warmupRefused?: number;
  /** The first refusal seen, for the report. */
  firstRefusal?: string;
  one: HttpRun[];
  many: HttpRun[];
}

/** What this script prints. */
export interface HttpResult {
  clients: number;
  perClient: number;
  total: number;
  reps: number;
  fileBytes: number;
  servers: Record<"bare" | "corral", HttpServerResult>;
}

/** The file's last characters: an answer holds them or it is not the file. */
const MARKER = "END-OF-CORRAL-BENCH-FILE";

interface _Server {
  name: "bare" | "corral";
  url: string;
  child: Deno.ChildProcess;
  result: HttpServerResult;
}

type _Outcome = "ok" | "busy" | "http" | "tool" | "net";

/** Start a server and wait for the URL it prints on stderr. */
async function _start(
  name: "bare" | "corral",
  args: string[],
  workspace: string,
  env: Record<string, string>,
): Promise<_Server | { error: string }> {
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: workspace,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const { promise: url, resolve: found } = Promise.withResolvers<string>();
  // Keep draining stderr for the whole run, so that the server never blocks on it.
  const drained = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr = (stderr + chunk).slice(-4000);
      const m = /Streamable HTTP at (http:\/\/\S+\/mcp)/.exec(stderr);
      if (m) found(m[1]);
    }
  })();
  const winner = await Promise.race([
    url,
    child.status.then(() => "exited"),
    sleep(60_000).then(() => "timeout"),
  ]);
  if (!winner.startsWith("http://")) {
    await stopChild(child);
    await drained.catch(() => {});
    const tail = stderr.trim().split("\n").slice(-3).join(" | ");
    return { error: `${name} did not listen (${winner})${tail ? `: ${tail}` : ""}` };
  }
  return {
    name,
    url: winner,
    child,
    result: { listenMs: performance.now() - t0, one: [], many: [] },
  };
}

/** One `tools/call` of ReadFile; what came back. */
async function _call(s: _Server, id: number): Promise<[_Outcome, string]> {
  try {
    const res = await fetch(s.url, {
      method: "POST",
      headers: MCP_POST_HEADERS,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "ReadFile", arguments: { filepath: "file10k.txt" } },
      }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    if (res.status === 429) return ["busy", `HTTP 429: ${text.slice(0, 200)}`];
    if (!res.ok) return ["http", `HTTP ${res.status}: ${text.slice(0, 200)}`];
    const msg = JSON.parse(text) as {
      error?: { message?: string };
      result?: { isError?: boolean; content?: Array<{ text?: string }> };
    };
    if (msg.error) return ["tool", `JSON-RPC error: ${msg.error.message}`];
    const body = (msg.result?.content ?? []).map((c) => c.text ?? "").join("");
    if (msg.result?.isError) return ["tool", `tool error: ${body.slice(0, 200)}`];
    if (!body.includes(MARKER)) return ["tool", `answer without the file: ${body.slice(0, 200)}`];
    return ["ok", ""];
  } catch (err) {
    return ["net", `fetch: ${(err as Error).message}`];
  }
}

/** `clients` clients at once, `each` calls each, one at a time per client. */
async function _run(s: _Server, clients: number, each: number): Promise<HttpRun> {
  const run: HttpRun = {
    clients,
    calls: clients * each,
    wallMs: 0,
    ok: 0,
    busy: 0,
    httpErrors: 0,
    toolErrors: 0,
    networkErrors: 0,
    p50: NaN,
    p99: NaN,
  };
  const latencies: number[] = [];
  let id = 0;
  const client = async () => {
    for (let i = 0; i < each; i++) {
      const t0 = performance.now();
      const [outcome, why] = await _call(s, ++id);
      latencies.push(performance.now() - t0);
      if (outcome === "ok") run.ok++;
      else {
        s.result.firstRefusal ??= why;
        if (outcome === "busy") run.busy++;
        else if (outcome === "http") run.httpErrors++;
        else if (outcome === "tool") run.toolErrors++;
        else run.networkErrors++;
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, client));
  run.wallMs = performance.now() - t0;
  run.p50 = quantile(latencies, 0.5);
  run.p99 = quantile(latencies, 0.99);
  return run;
}

async function main(): Promise<void> {
  const clients = Number(Deno.args[0] ?? 50);
  const perClient = Number(Deno.args[1] ?? 40);
  const reps = Number(Deno.args[2] ?? 3);
  const total = clients * perClient;
  const tmp = await tempDir("corral_bench_http_");
  const workspace = `${tmp}/ws`;
  await Deno.mkdir(workspace);
  await Deno.mkdir(`${tmp}/config`);
  const line = "corral benchmark line: the quick brown fox jumps over the lazy dog 0123456789\n";
  const text = line.repeat(Math.ceil(10_240 / line.length)).slice(0, 10_240 - MARKER.length) +
    MARKER;
  await Deno.writeTextFile(`${workspace}/file10k.txt`, text);

  const results: Record<"bare" | "corral", HttpServerResult> = {
    bare: { one: [], many: [] },
    corral: { one: [], many: [] },
  };
  const servers: _Server[] = [];
  const starts: Array<[name: "bare" | "corral", args: string[], env: Record<string, string>]> = [
    ["bare", ["run", "-A", `${BENCH}bare_http_server.ts`, workspace], {}],
    [
      "corral",
      [
        "run",
        ...CORRAL_FLAGS,
        `${ROOT}main.ts`,
        "mcp",
        "--http",
        "127.0.0.1:0",
        "--stateless",
        "--no-token",
        "--workspace",
        workspace,
      ],
      { CORRAL_CACHE_DIR: `${tmp}/cache`, CORRAL_CONFIG_DIR: `${tmp}/config` },
    ],
  ];
  try {
    for (const [name, args, env] of starts) {
      const s = await _start(name, args, workspace, env);
      if ("error" in s) results[name].error = s.error;
      else {
        servers.push(s);
        results[name] = s.result;
      }
    }
    // Warm-up: the first call starts corral's sandbox; every client's connection opens.
    for (const s of servers) {
      const w = await _run(s, clients, 2);
      s.result.warmupRefused = w.calls - w.ok;
    }
    for (let r = 0; r < reps; r++) {
      for (const s of r % 2 ? [...servers].reverse() : servers) {
        const modes = r % 2 ? ["many", "one"] as const : ["one", "many"] as const;
        for (const mode of modes) {
          const run = mode === "one" ? await _run(s, 1, total) : await _run(s, clients, perClient);
          s.result[mode].push(run);
        }
      }
    }
  } finally {
    await Promise.all(servers.map((s) => stopChild(s.child)));
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  const result: HttpResult = {
    clients,
    perClient,
    total,
    reps,
    fileBytes: new TextEncoder().encode(text).length,
    servers: results,
  };
  console.log(JSON.stringify(result));
}

if (import.meta.main) {
  await main();
  Deno.exit(0);
}
