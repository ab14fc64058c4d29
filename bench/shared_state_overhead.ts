/**
 * What sharing limits between replicas costs on a warm HTTP call (issue
 * 28's goal: at most 1.10×): the same tool called over the real HTTP server
 * by an identity with `per_minute` 60,000 (so every call takes from its
 * bucket; a replica leases a second's worth, 1000 calls, per Redis trip),
 * interleaved call by call, with the bucket in the replica's memory and in
 * a real Redis (`--shared-state`; Debian's redis-server, started here on a
 * free port). Prints the medians and their ratio as JSON (section 11 of
 * `deno task bench`, bench/section_team.ts).
 *
 *     deno run -A bench/shared_state_overhead.ts [CALLS]
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parseConfig } from "../core/config/mod.ts";
import { parsePolicy } from "../core/config/mod.ts";
import { RedisState } from "../core/identity/mod.ts";
import { LocalState } from "../core/identity/mod.ts";
import { addToken } from "../core/identity/mod.ts";
import { httpIdentityFromConfig } from "../core/mcp/mod.ts";
import { serveHttp } from "../core/mcp/mod.ts";
import { Registry } from "../core/registry/mod.ts";

/** What bench/shared_state_overhead.ts prints: medians in ms and their ratio (goal <= 1.10). */
export interface SharedStateOverheadResult {
  calls: number;
  local: number;
  redis: number;
  ratio: number;
}

const CALLS = Number(Deno.args[0] ?? 400);
/** alice's calls per minute: above the bench's pace, so every call is granted. */
const PER_MINUTE = 60_000;
const TOKEN = "t".repeat(64);

async function _redis(): Promise<{ url: string; stop(): Promise<void> }> {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const child = new Deno.Command("redis-server", {
    args: ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    async stop() {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

async function _client(url: string, token: string): Promise<Client> {
  const c = new Client({ name: "bench", version: "1" });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return c;
}

async function main(): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_bench_shared_" }));
  const redis = await _redis();
  const policy = parsePolicy("{}", "bench-permissions.json", dir);
  const registry = await Registry.create({
    workspace: dir,
    policy,
    noBuiltins: true,
    cacheDir: null,
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: [new URL("../tests/fixtures/progress_tools.ts", import.meta.url).pathname],
      policy: policy.toolset("fixture"),
    }],
  });
  // A limit above the load (60,000 a minute): every call takes from the bucket, none is
  // refused; with Redis the bucket is leased a second's worth (1000 calls) at a time.
  const config = parseConfig(
    JSON.stringify({
      identities: { alice: { workspace: ".", limits: { per_minute: PER_MINUTE } } },
      auth: { tokens_file: "t.json" },
    }),
    `${dir}/corral.json`,
  );
  const alice = await addToken("alice", `${dir}/t.json`);
  const shared = await RedisState.connect(redis.url);
  const team = (state: LocalState | RedisState) =>
    httpIdentityFromConfig(config, { defaultToken: TOKEN, serverWorkspace: dir, state });
  const local = await serveHttp(registry, {
    port: 0,
    token: TOKEN,
    team: await team(new LocalState()),
  });
  const viaRedis = await serveHttp(registry, { port: 0, token: TOKEN, team: await team(shared) });
  const a = await _client(local.url, alice);
  const b = await _client(viaRedis.url, alice);
  const call = (c: Client) => c.callTool({ name: "Sleep", arguments: { ms: 0 } });
  for (let i = 0; i < 50; i++) await Promise.all([call(a), call(b)]); // warm both
  const times: Record<"local" | "redis", number[]> = { local: [], redis: [] };
  for (let i = 0; i < CALLS; i++) {
    const order: Array<["local" | "redis", Client]> = i % 2
      ? [["local", a], ["redis", b]]
      : [["redis", b], ["local", a]];
    for (const [name, c] of order) {
      const t0 = performance.now();
      await call(c);
      times[name].push(performance.now() - t0);
    }
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const result: SharedStateOverheadResult = {
    calls: CALLS,
    local: median(times.local),
    redis: median(times.redis),
    ratio: median(times.redis) / median(times.local),
  };
  console.log(JSON.stringify(result));
  await Promise.all([a.close(), b.close()]);
  await Promise.all([local.close(), viaRedis.close()]);
  await shared.close();
  await registry.close();
  await redis.stop();
  await Deno.remove(dir, { recursive: true });
}

if (import.meta.main) await main();
