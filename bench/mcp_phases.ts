/**
 * A profile of section 6 (not part of `deno task bench`): where `corral mcp`
 * and the official filesystem server spend their start-up, phase by phase
 * (spawn to the answer of `initialize`, then `tools/list`, then the first
 * read, then a second), and their warm call, read by the same SDK client
 * over stdio. Rounds alternate between the servers. `--cpu-prof DIR` runs
 * each server once more under Deno's CPU profiler (its profile in DIR).
 * Prints one JSON object: the median of each phase, per server.
 *
 *     deno run -A bench/mcp_phases.ts [ROUNDS] [--cpu-prof DIR]
 *
 * @module
 */
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { CORRAL_FLAGS } from "../testing/corral_http.ts";
import { ROOT } from "../testing/paths.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { BENCH, quantile } from "./lib.ts";

type _Name = "filesystem" | "corral";
const _PHASES = ["initialize", "tools/list", "first call", "second call", "warm call p50"];

async function _round(
  name: _Name,
  args: string[],
  toolArgs: Record<string, unknown>,
  env: Record<string, string>,
  cwd: string,
  calls: number,
): Promise<number[]> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args,
    cwd,
    env: { ...Deno.env.toObject(), NO_COLOR: "1", ...env },
    stderr: "inherit",
  });
  const client = new Client({ name: "corral-bench", version: "1.0.0" });
  const marks: number[] = [];
  let t = performance.now();
  const mark = () => {
    const now = performance.now();
    marks.push(now - t);
    t = now;
  };
  await client.connect(transport);
  mark();
  const { tools } = await client.listTools();
  mark();
  const tool = name === "corral"
    ? "ReadFile"
    : tools.map((x: { name: string }) => x.name).find((n: string) => n === "read_text_file")!;
  const call = async () => {
    const r = await client.callTool({ name: tool, arguments: toolArgs });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r).slice(0, 300)}`);
  };
  await call();
  mark();
  await call();
  mark();
  const warm: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await call();
    warm.push(performance.now() - t0);
  }
  marks.push(quantile(warm, 0.5));
  await client.close();
  return marks;
}

async function main(): Promise<void> {
  const rounds = Number(Deno.args.find((a) => /^\d+$/.test(a)) ?? 5);
  const profAt = Deno.args.indexOf("--cpu-prof");
  const profDir = profAt >= 0 ? Deno.args[profAt + 1] : undefined;
  const tmp = await tempDir("corral_mcp_phases_");
  const ws = `${tmp}/ws`;
  await Deno.mkdir(ws);
  await Deno.mkdir(`${tmp}/config`);
  await Deno.writeTextFile(`${ws}/file10k.txt`, "x".repeat(79).concat("\n").repeat(128));
  const prof = (dir?: string) => dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
  const servers = (dir?: string) => [
    {
      name: "filesystem" as _Name,
      args: ["run", "-A", "--no-prompt", ...prof(dir), `${BENCH}fs_server.ts`, ws],
      toolArgs: { path: `${ws}/file10k.txt` },
      env: {} as Record<string, string>,
    },
    {
      name: "corral" as _Name,
      args: ["run", ...CORRAL_FLAGS, ...prof(dir), `${ROOT}main.ts`, "mcp", "--workspace", ws],
      toolArgs: { filepath: "file10k.txt" },
      env: { CORRAL_CACHE_DIR: `${tmp}/cache`, CORRAL_CONFIG_DIR: `${tmp}/config` },
    },
  ];
  const out: Record<string, Record<string, number>> = {};
  const samples = new Map<_Name, number[][]>();
  for (let i = 0; i <= rounds; i++) {
    const list = i % 2 ? servers().reverse() : servers();
    for (const s of list) {
      const marks = await _round(s.name, s.args, s.toolArgs, s.env, ws, 300);
      if (i > 0) samples.set(s.name, [...(samples.get(s.name) ?? []), marks]); // first: caches
    }
  }
  for (const [name, runs] of samples) {
    out[name] = Object.fromEntries(
      _PHASES.map((p, k) => [p, Number(quantile(runs.map((r) => r[k]), 0.5).toFixed(3))]),
    );
  }
  if (profDir) {
    for (const s of servers(profDir)) {
      await Deno.mkdir(`${profDir}`, { recursive: true });
      await _round(s.name, s.args, s.toolArgs, s.env, ws, 2000);
    }
  }
  await Deno.remove(tmp, { recursive: true });
  console.log(JSON.stringify(out));
}

if (import.meta.main) {
  await main();
  Deno.exit(0);
}
