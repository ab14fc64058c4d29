/**
 * Section 6 of the benchmark: corral against a peer over MCP. The official
 * MCP filesystem server (`@modelcontextprotocol/server-filesystem`, pinned
 * in deno.json, run under Deno) and `corral mcp` are each driven by the same
 * SDK client over stdio, reading the same 10 KB file sequentially. Blocks of
 * calls alternate between the two servers, so that noise from other work on
 * the machine hits both alike. Then each server is started STARTS more
 * times, alternately, and timed from spawn to its first answer (the
 * connections measured first have filled the caches). corral runs with an
 * empty config directory and a discovery cache of its own. One more corral
 * server takes part in the call blocks with corral's stdio lane turned off
 * (`CORRAL_BENCH_MCP_LANES=sdk`, core/mcp/stdio_lane.ts: every line to the
 * SDK's dispatch), so that the lane is measured against the plain SDK path
 * side by side. Prints one JSON object.
 *
 *     deno run -A bench/mcp.ts CALLS STARTS
 *
 * @module
 */
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { CORRAL_FLAGS } from "../testing/corral_http.ts";
import { ROOT } from "../testing/paths.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { BENCH, quantile, warmUp, WARMUP_CALLS } from "./lib.ts";
import { cpuBetween, treeTicks } from "./proc_cpu.ts";

/** One server's result. */
export interface ServerResult {
  /** Why it could not be measured. */
  error?: string;
  tool?: string;
  /** Characters of file text in one answer (a check that the whole file came back). */
  answerChars?: number;
  /** Spawn to the first answer of each measured start (after the first start). */
  startMs?: number[];
  p50?: number;
  p99?: number;
  mean?: number;
  blockMedians?: number[];
  n?: number;
  /** The p50 of the warm-up calls before the measured ones (bench/lib.ts WARMUP_CALLS). */
  warmupP50?: number;
  /** CPU per measured call: the server process's own, and its children's (corral's sandboxes). */
  cpuMs?: { own: number; children: number };
}

/** The servers of the call blocks: the peer, corral, corral with its stdio lane off. */
export type ServerName = "filesystem" | "corral" | "corral-sdk";

/** What this script prints. */
export interface McpResult {
  calls: number;
  fileBytes: number;
  servers: Record<ServerName, ServerResult>;
}

/** What `_connect` measured: spawn to the first answer of the first start. */
interface _Connected {
  server?: _Server;
  result: ServerResult;
  firstStartMs?: number;
}

interface _Server {
  name: ServerName;
  client: Client;
  call: () => Promise<number>;
  samples: number[];
  blocks: number[];
  pid?: number;
  cpu: { own: number; children: number };
}

function _text(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? "").join("");
}

async function _connect(
  name: ServerName,
  args: string[],
  file: string,
  workspace: string,
  env: Record<string, string>,
): Promise<_Connected> {
  const result: ServerResult = {};
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args,
    cwd: workspace,
    env: { ...Deno.env.toObject(), NO_COLOR: "1", ...env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Uint8Array) => {
    stderr = (stderr + new TextDecoder().decode(d)).slice(-2000);
  });
  const client = new Client({ name: "corral-bench", version: "1.0.0" });
  const t0 = performance.now();
  try {
    await Promise.race([
      client.connect(transport),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error("no answer to initialize within 60 s")), 60_000)
      ),
    ]);
    const { tools } = await client.listTools();
    const names = tools.map((t: { name: string }) => t.name);
    const ofCorral = name !== "filesystem";
    const tool = ofCorral
      ? "ReadFile"
      : ["read_text_file", "read_file"].find((t) => names.includes(t));
    if (!tool || !names.includes(tool)) {
      throw new Error(`no file-reading tool among: ${names.join(", ")}`);
    }
    const toolArgs = ofCorral ? { filepath: "file10k.txt" } : { path: file };
    const call = async () => {
      const res = await client.callTool({ name: tool, arguments: toolArgs });
      if (res.isError) throw new Error(`${tool} failed: ${_text(res).slice(0, 300)}`);
      return _text(res).length;
    };
    result.answerChars = await call();
    const firstStartMs = performance.now() - t0;
    result.tool = tool;
    const server = { name, client, call, samples: [], blocks: [], pid: transport.pid ?? undefined };
    return { server: { ...server, cpu: { own: 0, children: 0 } }, result, firstStartMs };
  } catch (err) {
    await client.close().catch(() => {});
    const tail = stderr.trim().split("\n").slice(-3).join(" | ");
    result.error = `${(err as Error).message}${tail ? ` (stderr: ${tail})` : ""}`;
    return { result };
  }
}

async function main(): Promise<void> {
  const calls = Number(Deno.args[0] ?? 1000);
  const starts = Number(Deno.args[1] ?? 5);
  const tmp = await tempDir("corral_bench_mcp_");
  const workspace = `${tmp}/ws`;
  await Deno.mkdir(workspace);
  await Deno.mkdir(`${tmp}/config`);
  const file = `${workspace}/file10k.txt`;
  const line = "corral benchmark line: the quick brown fox jumps over the lazy dog 0123456789\n";
  const text = line.repeat(Math.ceil(10_240 / line.length)).slice(0, 10_240);
  await Deno.writeTextFile(file, text);

  const fsArgs = ["run", "-A", "--no-prompt", `${BENCH}fs_server.ts`, workspace];
  const corralArgs = ["run", ...CORRAL_FLAGS, `${ROOT}main.ts`, "mcp", "--workspace", workspace];
  const corralEnv = { CORRAL_CACHE_DIR: `${tmp}/cache`, CORRAL_CONFIG_DIR: `${tmp}/config` };
  const fs = await _connect("filesystem", fsArgs, file, workspace, {});
  const corral = await _connect("corral", corralArgs, file, workspace, corralEnv);
  const lanesOff = { sdk: "corral-sdk" } as const;
  const off: Record<string, _Connected> = {};
  for (const [lanes, name] of Object.entries(lanesOff)) {
    const env = { ...corralEnv, CORRAL_BENCH_MCP_LANES: lanes };
    off[name] = await _connect(name, corralArgs, file, workspace, env);
  }
  const results = new Map<ServerName, ServerResult>([
    ["filesystem", fs.result],
    ["corral", corral.result],
    ...Object.entries(off).map(([n, c]) => [n as ServerName, c.result] as const),
  ]);
  const servers = [fs, corral, ...Object.values(off)].map((c) => c.server)
    .filter((s): s is _Server => s !== undefined);

  // Warm-up (the same for each, its p50 kept), then alternate blocks of calls.
  const warm = new Map<_Server, number>();
  for (const s of servers) warm.set(s, await warmUp(s.call, Math.min(WARMUP_CALLS, calls)));
  const block = Math.max(1, Math.min(100, Math.ceil(calls / 10)));
  for (let done = 0; done < calls; done += block) {
    const n = Math.min(block, calls - done);
    // Each server takes each place in the order in turn (rotated block by block).
    const k = (done / block) % servers.length;
    const order = [...servers.slice(k), ...servers.slice(0, k)];
    for (const s of order) {
      const part: number[] = [];
      const before = s.pid ? treeTicks(s.pid) : undefined;
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await s.call();
        part.push(performance.now() - t0);
      }
      if (before) {
        const used = cpuBetween(before, treeTicks(s.pid!));
        s.cpu.own += used.own;
        s.cpu.children += used.children;
      }
      s.samples.push(...part);
      s.blocks.push(quantile(part, 0.5));
    }
  }
  for (const s of servers) {
    const r = results.get(s.name)!;
    r.p50 = quantile(s.samples, 0.5);
    r.p99 = quantile(s.samples, 0.99);
    r.mean = s.samples.reduce((a, b) => a + b, 0) / s.samples.length;
    r.blockMedians = s.blocks;
    r.n = s.samples.length;
    r.warmupP50 = warm.get(s);
    if (s.pid) r.cpuMs = { own: s.cpu.own / r.n, children: s.cpu.children / r.n };
    await s.client.close().catch(() => {});
  }

  // Start-up: the first start above filled the caches; time STARTS more, alternately.
  const again = [
    { c: fs, args: fsArgs, env: {} },
    { c: corral, args: corralArgs, env: corralEnv },
  ].filter((s) => s.c.server);
  for (const s of again) s.c.result.startMs = [];
  for (let i = 0; i < starts; i++) {
    for (const s of i % 2 ? [...again].reverse() : again) {
      const name = s.c.server!.name;
      const next = await _connect(name, s.args, file, workspace, s.env);
      if (!next.server) {
        s.c.result.error = `restart ${i + 1}: ${next.result.error}`;
        continue;
      }
      s.c.result.startMs!.push(next.firstStartMs!);
      await next.server.client.close().catch(() => {});
    }
  }
  await Deno.remove(tmp, { recursive: true });
  const result: McpResult = {
    calls,
    fileBytes: text.length,
    servers: Object.fromEntries(results) as Record<ServerName, ServerResult>,
  };
  console.log(JSON.stringify(result));
}

if (import.meta.main) {
  await main();
  Deno.exit(0);
}
