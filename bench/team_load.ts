/**
 * Section 11 of the benchmark: a team under load. One `corral mcp --http`
 * with IDS identities (static tokens in a temp config directory), PER SDK
 * sessions for each, all at once, each calling `ReadFile` and `RunBashCode`
 * (`echo`) in a loop for SECONDS, after a warm-up in which each session's
 * first calls start its sandboxes (all sessions at once). Caps are set above the load (sessions,
 * the call gate, connections per client, live sandboxes), so no call should
 * be refused. Then memory summed over the server's process tree, and, after
 * the sessions stay idle past `--session-idle IDLE`, the sandboxes left.
 * SHARE=1 sets `share_sandboxes` for every identity. Prints one JSON object.
 *
 *     deno run -A bench/team_load.ts SECONDS IDS PER SHARE IDLE
 *
 * @module
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { addToken } from "../core/identity/mod.ts";
import { startCorralHttp } from "../testing/corral_http.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { processChildren, quantile, treeMemory } from "./lib.ts";

/** What bench/team_load.ts prints. */
export interface TeamLoadResult {
  sessions: number;
  identities: number;
  shared: boolean;
  seconds: number;
  calls: Record<string, number>;
  /** Calls refused or failed (a tool error, a thrown request). */
  refused: number;
  firstError: string;
  p50: Record<string, number>;
  p99: Record<string, number>;
  /** Tree memory at the end of the load, MiB. */
  rss: number;
  pss: number;
  processes: number;
  /** Live sandboxes (the server's direct children) at the end of the load, and after idling. */
  sandboxesLoaded: number;
  sandboxesAfterIdle: number;
  idleSeconds: number;
  /** The warm-up (every session's first call of each tool, at once), ms; its calls' p50 and max. */
  warmupMs: number;
  firstP50: number;
  firstMax: number;
}

async function main(): Promise<void> {
  const [seconds, ids, per, share, idle] = Deno.args.map(Number);
  const tmp = await tempDir("corral_bench_team_");
  const ws = `${tmp}/ws`, config = `${tmp}/config`;
  await Deno.mkdir(ws);
  await Deno.mkdir(config);
  await Deno.writeTextFile(`${ws}/notes.txt`, "one two three\n");
  const names = Array.from({ length: ids }, (_, i) => `user${i}`);
  const identities = Object.fromEntries(names.map((n) => [n, {
    workspace: ws,
    shared_workspace: true,
    ...(share ? { share_sandboxes: true } : {}),
  }]));
  await Deno.writeTextFile(`${config}/corral.json`, JSON.stringify({ identities }));
  const tokens: string[] = [];
  for (const n of names) tokens.push(await addToken(n, `${config}/tokens.json`)); // one file
  const { child, url } = await startCorralHttp([
    ...["--http", "127.0.0.1:0", "--token", "o".repeat(48), "-r", "-w", "-x", "--workspace", ws],
    ...["--max-sessions", "2000", "--max-concurrent", "200", "--max-queue", "4000"],
    ...["--max-client-conns", "4000", "--max-sandboxes", "400", "--session-idle", String(idle)],
  ], { env: { CORRAL_CACHE_DIR: `${tmp}/cache`, CORRAL_CONFIG_DIR: config } });
  const clients: Client[] = [];
  try {
    for (const token of tokens) {
      for (let i = 0; i < per; i++) {
        const c = new Client({ name: "bench", version: "1" });
        const headers = { Authorization: `Bearer ${token}` };
        await c.connect(
          new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
        );
        clients.push(c);
      }
    }
    const times: Record<string, number[]> = { ReadFile: [], RunBashCode: [] };
    let refused = 0, firstError = "";
    const calls: Array<[string, Record<string, unknown>]> = [
      ["ReadFile", { filepath: "notes.txt" }],
      ["RunBashCode", { code: "echo hi" }],
    ];
    // Warm-up: each session's first call of each tool starts its sandboxes (all at once).
    const warm0 = performance.now();
    const firstMs: number[] = [];
    await Promise.all(clients.map(async (c) => {
      for (const [name, args] of calls) {
        const t = performance.now();
        try {
          const r = await c.callTool({ name, arguments: args });
          if (r.isError) throw new Error(JSON.stringify(r.content).slice(0, 300));
          firstMs.push(performance.now() - t);
        } catch (err) {
          refused++;
          firstError ||= `${name}: ${(err as Error).message}`;
        }
      }
    }));
    const warmupMs = performance.now() - warm0;
    const end = performance.now() + seconds * 1000;
    await Promise.all(clients.map(async (c) => {
      for (let i = 0; performance.now() < end; i++) {
        const [name, args] = calls[i % 2];
        const t = performance.now();
        try {
          const r = await c.callTool({ name, arguments: args });
          if (r.isError) throw new Error(JSON.stringify(r.content).slice(0, 300));
          times[name].push(performance.now() - t);
        } catch (err) {
          refused++;
          firstError ||= `${name}: ${(err as Error).message}`;
        }
      }
    }));
    const mem = treeMemory(child.pid);
    const sandboxesLoaded = (processChildren().get(child.pid) ?? []).length;
    // The sessions stay open but idle: past --session-idle they expire and their sandboxes close.
    await new Promise((r) => setTimeout(r, idle * 1000 + Math.max(1000, idle * 250) + 1500));
    const sandboxesAfterIdle = (processChildren().get(child.pid) ?? []).length;
    const q = (p: number) =>
      Object.fromEntries(Object.entries(times).map(([k, v]) => [k, quantile(v, p)]));
    const result: TeamLoadResult = {
      sessions: clients.length,
      identities: ids,
      shared: share === 1,
      seconds,
      calls: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, v.length])),
      refused,
      firstError,
      p50: q(0.5),
      p99: q(0.99),
      rss: mem.rss,
      pss: mem.pss,
      processes: mem.processes,
      sandboxesLoaded,
      sandboxesAfterIdle,
      idleSeconds: idle,
      warmupMs,
      firstP50: quantile(firstMs, 0.5),
      firstMax: Math.max(...firstMs),
    };
    console.log(JSON.stringify(result));
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) await main();
