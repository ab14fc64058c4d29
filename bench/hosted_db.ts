/**
 * Section 9's database call: `@modelcontextprotocol/server-postgres@0.6.2`
 * hosted by corral against a PostgreSQL of the benchmark's own (started on
 * a free port in a temp folder, tests/_services.ts), two ways: in the jail,
 * granted `127.0.0.1:PORT`, every connection a `CONNECT` to the egress
 * proxy (sent from the server's own process, core/egress/forward_direct.ts);
 * and with `"jail": "off"` (no namespace, no proxy: the server connects by
 * itself). The same SDK client calls `query` with the
 * same statement, in blocks that alternate. Prints one JSON object.
 *
 *     deno run -A bench/hosted_db.ts CALLS
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
import { startPostgres } from "../testing/services.ts";
import { tempDir } from "../testing/temp_dir.ts";
import { quantile, warmUp, WARMUP_CALLS } from "./lib.ts";

/** The two ways, in table order. */
export const DB_WAYS = ["off", "jailed"] as const;
type _Way = typeof DB_WAYS[number];

/** One way's numbers. */
export interface DbWay {
  p50?: number;
  p99?: number;
  blockMedians?: number[];
  n?: number;
  error?: string;
}

/** What this script prints. */
export interface HostedDbResult {
  calls: number;
  sql: string;
  ways: Record<_Way, DbWay>;
}

const PG = "@modelcontextprotocol/server-postgres@0.6.2";
const SQL = "SELECT n, md5(n::text) FROM generate_series(1, 20) AS n";

async function _client(args: string[], env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args,
    env: { ...Deno.env.toObject(), NO_COLOR: "1", ...env },
    stderr: "pipe",
  });
  const client = new Client({ name: "corral-bench-db", version: "1.0.0" });
  await client.connect(transport, { timeout: 60_000 });
  return client;
}

async function _call(client: Client): Promise<number> {
  const r = await client.callTool({ name: "query", arguments: { sql: SQL } });
  const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
  if (r.isError || !text.includes("md5")) throw new Error(`query failed: ${text.slice(0, 300)}`);
  return text.length;
}

async function main(): Promise<void> {
  const calls = Number(Deno.args[0] ?? 500);
  const ways = Object.fromEntries(DB_WAYS.map((w) => [w, {} as DbWay])) as Record<_Way, DbWay>;
  const tmp = await tempDir("corral_bench_db_");
  const clients = new Map<_Way, Client>();
  try {
    await using pg = await startPostgres("SELECT 1");
    const url = `postgresql://corral@127.0.0.1:${pg.port}/postgres`;
    const servers = { pg: { npm: PG, args: [url], confirm: { query: false } } };
    const config = join(tmp, "corral.json");
    await Deno.writeTextFile(config, JSON.stringify({ servers, default_plugin_dir: false }));
    const env = {
      CORRAL_CACHE_DIR: join(tmp, "cache"),
      CORRAL_CONFIG_DIR: join(tmp, "config"),
      CORRAL_SERVERS_DIR: join(ROOT, ".corral", "servers"),
    };
    Deno.env.set("CORRAL_SERVERS_DIR", env.CORRAL_SERVERS_DIR);
    for (const e of parseConfig(JSON.stringify({ servers }), config).servers) {
      await installServer(e);
    }
    const net = [`127.0.0.1:${pg.port}`];
    const grants: Record<_Way, Record<string, unknown>> = {
      jailed: { net },
      off: { net, jail: "off" },
    };
    for (const w of DB_WAYS) {
      const perms = join(tmp, `permissions-${w}.json`);
      await Deno.writeTextFile(perms, JSON.stringify({ servers: { pg: grants[w] } }));
      const base = ["run", ...CORRAL_FLAGS, join(ROOT, "main.ts"), "--config", config];
      const args = [...base, "--permissions", perms, "--workspace", tmp];
      if (w === DB_WAYS[0]) {
        // Installed and approved once (the same records serve both ways).
        const out = await new Deno.Command(Deno.execPath(), {
          args: [...args, "servers", "install"],
          env: { ...Deno.env.toObject(), ...env },
          stdout: "null",
          stderr: "piped",
        }).output();
        if (!out.success) {
          throw new Error(`servers install: ${new TextDecoder().decode(out.stderr)}`);
        }
      }
      try {
        const c = await _client([...args, "mcp", "-n"], env);
        await _call(c);
        clients.set(w, c);
      } catch (err) {
        ways[w].error = (err as Error).message;
      }
    }
    for (const [, c] of clients) await warmUp(() => _call(c), Math.min(WARMUP_CALLS, calls));
    const samples = new Map<_Way, number[]>([...clients.keys()].map((w) => [w, []]));
    const block = Math.max(1, Math.min(50, Math.ceil(calls / 10)));
    for (let done = 0, k = 0; done < calls; done += block, k++) {
      const order = [...clients.keys()];
      if (k % 2) order.reverse();
      for (const w of order) {
        const part: number[] = [];
        for (let i = 0; i < Math.min(block, calls - done); i++) {
          const t0 = performance.now();
          await _call(clients.get(w)!);
          part.push(performance.now() - t0);
        }
        samples.get(w)!.push(...part);
        (ways[w].blockMedians ??= []).push(quantile(part, 0.5));
      }
    }
    for (const [w, s] of samples) {
      ways[w].p50 = quantile(s, 0.5);
      ways[w].p99 = quantile(s, 0.99);
      ways[w].n = s.length;
    }
  } catch (err) {
    for (const w of DB_WAYS) ways[w].error ??= (err as Error).message;
  } finally {
    for (const c of clients.values()) await c.close().catch(() => {});
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  const out: HostedDbResult = { calls, sql: SQL, ways };
  console.log(JSON.stringify(out));
}

if (import.meta.main) {
  await main();
  Deno.exit(0);
}
