/**
 * Section 9 of the benchmark: the official MCP filesystem server
 * (`@modelcontextprotocol/server-filesystem@2026.8.31`) run three ways, each
 * driven by the same SDK client over stdio reading the same 10 KB file:
 * directly by node, wrapped by Anthropic's sandbox runtime (`srt`, npm
 * `@anthropic-ai/sandbox-runtime@0.0.83`), and hosted by corral (`corral mcp`
 * with the server in corral.json: `deno run` in the namespace, cgroup limits).
 * Blocks of calls alternate between the three; then each is started STARTS
 * more times, alternately, timed from spawn to the first answer. A fourth
 * way takes part in the call blocks (not the start-ups): corral with its
 * hand-written `tools/call` lane for hosted servers turned off
 * (`CORRAL_BENCH_HOSTED_LANE=sdk`, core/hosted/hosted_server.ts), so the
 * hosted calls go through the plain SDK 2.4 `Client`, to weigh the lane
 * against it side by side (issue 42). The npm packages are installed with
 * npm into a cache of the benchmark's own when missing; srt needs ripgrep
 * and socat (apt-get install ripgrep socat). Prints one JSON object.
 *
 *     deno run -A bench/hosted.ts CALLS STARTS
 *
 * @module
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { parseConfig } from "../core/config/mod.ts";
import { installServer } from "../core/hosted/mod.ts";
import { CORRAL_FLAGS } from "../testing/corral_http.ts";
import { ROOT } from "../testing/paths.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { quantile, warmUp, WARMUP_CALLS } from "./lib.ts";
import { cpuBetween, treeTicks } from "./proc_cpu.ts";
import type { ServerResult } from "./mcp.ts";

/** The three ways, in table order (each is also started STARTS times). */
export const WAYS = ["node", "srt", "corral"] as const;
/** The ways of the call blocks: the three and corral without its hosted call lane. */
export const CALL_WAYS = [...WAYS, "corral-sdk"] as const;
type _Way = typeof CALL_WAYS[number];

/** What this script prints. */
export interface HostedResult {
  calls: number;
  fileBytes: number;
  servers: Record<_Way, ServerResult>;
}

const FS_PKG = "@modelcontextprotocol/server-filesystem@2026.8.31";
const SRT_PKG = "@anthropic-ai/sandbox-runtime@0.0.83";

interface _Spec {
  command: string;
  args: string[];
  env: Record<string, string>;
}

interface _Live {
  client: Client;
  call: () => Promise<number>;
  startMs: number;
  /** The server's process (corral's, for corral), whose CPU is read around each block. */
  pid?: number;
}

async function _connect(spec: _Spec, file: string, cwd: string): Promise<_Live> {
  const transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args,
    cwd,
    env: { ...Deno.env.toObject(), NO_COLOR: "1", ...spec.env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Uint8Array) => {
    stderr = (stderr + new TextDecoder().decode(d)).slice(-2000);
  });
  const client = new Client({ name: "corral-bench", version: "1.0.0" });
  const t0 = performance.now();
  try {
    await client.connect(transport, { timeout: 60_000 });
    const { tools } = await client.listTools();
    if (!tools.some((t: { name: string }) => t.name === "read_text_file")) {
      throw new Error(`no read_text_file among ${tools.map((t: { name: string }) => t.name)}`);
    }
    const call = async () => {
      const r = await client.callTool({ name: "read_text_file", arguments: { path: file } });
      const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
      if (r.isError) throw new Error(`read_text_file failed: ${text.slice(0, 300)}`);
      return text.length;
    };
    await call();
    return { client, call, startMs: performance.now() - t0, pid: transport.pid ?? undefined };
  } catch (err) {
    await client.close().catch(() => {});
    const tail = stderr.trim().split("\n").slice(-3).join(" | ");
    throw new Error(`${(err as Error).message}${tail ? ` (stderr: ${tail})` : ""}`);
  }
}

/** srt's command (npm `@anthropic-ai/sandbox-runtime`), installed when missing. */
export async function benchSrt(): Promise<string> {
  return (await _npm(join(ROOT, ".corral", "bench-hosted"))).srt;
}

/** npm packages of the benchmark's own, installed when missing. */
async function _npm(dir: string): Promise<{ fsEntry: string; srt: string }> {
  const fsEntry = join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
  const srt = join(dir, "node_modules/.bin/srt");
  try {
    await Deno.stat(fsEntry);
    await Deno.stat(srt);
  } catch {
    await Deno.mkdir(dir, { recursive: true });
    const out = await new Deno.Command("npm", {
      args: ["install", "--prefix", dir, "--no-audit", "--no-fund", "--silent", FS_PKG, SRT_PKG],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`npm install: ${new TextDecoder().decode(out.stderr)}`);
  }
  return { fsEntry, srt };
}

/** The three ways to start the server over `workspace`. */
async function _specs(tmp: string, workspace: string): Promise<Record<_Way, _Spec>> {
  const { fsEntry, srt } = await _npm(join(ROOT, ".corral", "bench-hosted"));
  // corral: the server in corral.json, its grant in permissions.json, installed and approved.
  const config = join(tmp, "corral.json");
  const perms = join(tmp, "permissions.json");
  const servers = { fs: { npm: FS_PKG, args: ["${workspace}"] } };
  await Deno.writeTextFile(config, JSON.stringify({ servers, default_plugin_dir: false }));
  await Deno.writeTextFile(perms, JSON.stringify({ servers: { fs: { read: ["."] } } }));
  const env = {
    CORRAL_CACHE_DIR: join(tmp, "cache"),
    CORRAL_CONFIG_DIR: join(tmp, "config"),
    CORRAL_SERVERS_DIR: join(ROOT, ".corral", "servers"),
  };
  Deno.env.set("CORRAL_SERVERS_DIR", env.CORRAL_SERVERS_DIR);
  for (const e of parseConfig(JSON.stringify({ servers }), config).servers) await installServer(e);
  const corralArgs = [
    "run",
    ...CORRAL_FLAGS,
    join(ROOT, "main.ts"),
    "--config",
    config,
    "--permissions",
    perms,
    "--workspace",
    workspace,
  ];
  const approve = await new Deno.Command(Deno.execPath(), {
    args: [...corralArgs.slice(0, -2), "servers", "install", "--workspace", workspace],
    env: { ...Deno.env.toObject(), ...env },
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!approve.success) {
    throw new Error(`corral servers install: ${new TextDecoder().decode(approve.stderr)}`);
  }
  return {
    node: { command: "node", args: [fsEntry, workspace], env: {} },
    srt: { command: srt, args: ["node", fsEntry, workspace], env: {} },
    corral: { command: Deno.execPath(), args: [...corralArgs, "mcp", "-r"], env },
    "corral-sdk": {
      command: Deno.execPath(),
      args: [...corralArgs, "mcp", "-r"],
      env: { ...env, CORRAL_BENCH_HOSTED_LANE: "sdk" },
    },
  };
}

async function main(): Promise<void> {
  const calls = Number(Deno.args[0] ?? 1000);
  const starts = Number(Deno.args[1] ?? 5);
  const tmp = await tempDir("corral_bench_hosted_");
  const workspace = join(tmp, "ws");
  await Deno.mkdir(workspace);
  const file = join(workspace, "file10k.txt");
  const line = "corral benchmark line: the quick brown fox jumps over the lazy dog 0123456789\n";
  const text = line.repeat(Math.ceil(10_240 / line.length)).slice(0, 10_240);
  await Deno.writeTextFile(file, text);
  const results = Object.fromEntries(CALL_WAYS.map((w) => [w, {} as ServerResult])) as Record<
    _Way,
    ServerResult
  >;
  let specs: Record<_Way, _Spec> | undefined;
  try {
    specs = await _specs(tmp, workspace);
  } catch (err) {
    for (const w of CALL_WAYS) results[w].error = (err as Error).message;
  }
  const live = new Map<
    _Way,
    _Live & { samples: number[]; blocks: number[]; cpu: { own: number; children: number } }
  >();
  for (const w of specs ? CALL_WAYS : []) {
    try {
      const l = await _connect(specs![w], file, workspace);
      live.set(w, { ...l, samples: [], blocks: [], cpu: { own: 0, children: 0 } });
      results[w].tool = "read_text_file";
    } catch (err) {
      results[w].error = (err as Error).message;
    }
  }
  // Warm-up, the same for each way (its p50 kept): the measured calls are the steady state.
  const warm = new Map<_Way, number>();
  for (const [w, s] of live) warm.set(w, await warmUp(s.call, Math.min(WARMUP_CALLS, calls)));
  const block = Math.max(1, Math.min(100, Math.ceil(calls / 10)));
  for (let done = 0, k = 0; done < calls; done += block, k++) {
    const n = Math.min(block, calls - done);
    const order = [...live.values()];
    for (let r = 0; r < k % order.length; r++) order.push(order.shift()!);
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
  for (const [w, s] of live) {
    const r = results[w];
    r.p50 = quantile(s.samples, 0.5);
    r.p99 = quantile(s.samples, 0.99);
    r.mean = s.samples.reduce((a, b) => a + b, 0) / s.samples.length;
    r.blockMedians = s.blocks;
    r.n = s.samples.length;
    r.warmupP50 = warm.get(w);
    if (s.pid) r.cpuMs = { own: s.cpu.own / r.n, children: s.cpu.children / r.n };
    if (w !== "corral-sdk") r.startMs = [];
    await s.client.close().catch(() => {});
  }
  // Start-up: the first connection filled the caches; time STARTS more, alternately.
  for (let i = 0; i < starts; i++) {
    const ways = [...live.keys()].filter((w) => w !== "corral-sdk");
    for (const w of i % 2 ? ways.reverse() : ways) {
      try {
        const l = await _connect(specs![w], file, workspace);
        results[w].startMs!.push(l.startMs);
        await l.client.close().catch(() => {});
      } catch (err) {
        results[w].error = `restart ${i + 1}: ${(err as Error).message}`;
      }
    }
  }
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
  const out: HostedResult = { calls, fileBytes: text.length, servers: results };
  console.log(JSON.stringify(out));
}

if (import.meta.main) {
  await main();
  Deno.exit(0);
}
