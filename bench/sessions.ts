/**
 * Section 10 of the benchmark: what a sandbox per principal costs. One
 * `corral mcp --http 127.0.0.1:0 --no-token`; SDK clients open sessions one
 * after another, each calls `WordCount` (its first call starts its own
 * sandbox) and then again (its sandbox is running). Memory is the sum over
 * the server's process tree: RSS (shared pages counted once per process)
 * and PSS (shared pages divided among their users), with one session and
 * with 1 + SESSIONS. Prints one JSON object.
 *
 *     deno run -A bench/sessions.ts SESSIONS REPEATS
 *
 * @module
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startCorralHttp } from "../testing/corral_http.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { median, treeMemory } from "./lib.ts";

/** What bench/sessions.ts prints. */
export interface SessionsResult {
  sessions: number;
  /** Tree memory with one session (its sandbox running), MiB. */
  oneRss: number;
  onePss: number;
  /** Tree memory with 1 + `sessions` sessions, MiB. */
  manyRss: number;
  manyPss: number;
  /** Processes in the tree with one session, and with all. */
  oneProcesses: number;
  manyProcesses: number;
  /** First call of each new session (its sandbox starts), ms. */
  firstMs: number[];
  /** Later calls in a session whose sandbox runs, ms. */
  againMs: number[];
}

async function main(): Promise<void> {
  const sessions = Number(Deno.args[0] ?? 10);
  const repeats = Number(Deno.args[1] ?? 4);
  const tmp = await tempDir("corral_bench_sessions_");
  const ws = `${tmp}/ws`;
  await Deno.mkdir(ws);
  await Deno.writeTextFile(`${ws}/notes.txt`, "one two three\n");
  const { child, url } = await startCorralHttp(
    ["--http", "127.0.0.1:0", "--no-token", "-r", "--workspace", ws],
    { env: { CORRAL_CACHE_DIR: `${tmp}/cache`, CORRAL_CONFIG_DIR: `${tmp}/config` } },
  );
  const clients: Client[] = [];
  try {
    const open = async () => {
      const c = new Client({ name: "bench", version: "1" });
      await c.connect(new StreamableHTTPClientTransport(new URL(url)));
      clients.push(c);
      return c;
    };
    const call = async (c: Client) => {
      const t = performance.now();
      const r = await c.callTool({ name: "WordCount", arguments: { filepath: "notes.txt" } });
      if (r.isError) throw new Error(JSON.stringify(r.content).slice(0, 300));
      return performance.now() - t;
    };
    // One session, warm (the module set's cache is made on the first start).
    const first = await open();
    for (let i = 0; i < 3; i++) await call(first);
    const one = treeMemory(child.pid);
    const firstMs: number[] = [], againMs: number[] = [];
    for (let i = 0; i < sessions; i++) {
      const c = await open();
      firstMs.push(await call(c));
      for (let k = 0; k < repeats; k++) againMs.push(await call(c));
    }
    const many = treeMemory(child.pid);
    const result: SessionsResult = {
      sessions,
      oneRss: one.rss,
      onePss: one.pss,
      manyRss: many.rss,
      manyPss: many.pss,
      oneProcesses: one.processes,
      manyProcesses: many.processes,
      firstMs,
      againMs,
    };
    console.log(JSON.stringify({ ...result, medianFirst: median(firstMs) }));
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) await main();
