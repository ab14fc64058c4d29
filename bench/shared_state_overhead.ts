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
import type { Client } from "@modelcontextprotocol/client";
import { parseConfig } from "../core/config/mod.ts";
import { addToken, LocalState, RedisState } from "../core/identity/mod.ts";
import { httpIdentityFromConfig, serveHttp } from "../core/mcp/mod.ts";
import { fixtureRegistry } from "../testing/fixture_registry.ts";
import { connectWithToken } from "../testing/mcp_client.ts";
import { startRedis } from "../testing/redis.ts";
import { tempDir } from "../testing/temp_dir.ts";

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

async function main(): Promise<void> {
  const dir = await tempDir("corral_bench_shared_");
  await using redis = await startRedis();
  const { registry } = await fixtureRegistry(["progress_tools.ts"], {}, dir);
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
  const a = await connectWithToken(local.url, alice, "bench");
  const b = await connectWithToken(viaRedis.url, alice, "bench");
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
}

if (import.meta.main) await main();
