/**
 * What identities and telemetry cost on a warm HTTP call (issue 22's goal:
 * at most 5%): the same tool called over the real HTTP server, interleaved
 * run by run, with the plain bearer token and with identities (a static
 * token looked up in the tokens file, the identity's registry view, the
 * span and the metrics). Prints the medians and their ratio as JSON
 * (section 11 of `deno task bench`, bench/section_team.ts).
 *
 *     deno run -A bench/identity_overhead.ts [CALLS]
 *
 * @module
 */
import type { Client } from "@modelcontextprotocol/client";
import { parseConfig } from "../core/config/mod.ts";
import { addToken } from "../core/identity/mod.ts";
import { httpIdentityFromConfig, serveHttp } from "../core/mcp/mod.ts";
import { fixtureRegistry } from "../testing/fixture_registry.ts";
import { connectWithToken } from "../testing/mcp_client.ts";
import { tempDir } from "../testing/temp_dir.ts";

const CALLS = Number(Deno.args[0] ?? 400);
const TOKEN = "t".repeat(64);
const dir = await tempDir("corral_bench_identity_");
const { registry } = await fixtureRegistry(["progress_tools.ts"], {}, dir);
const config = parseConfig(
  JSON.stringify({ identities: { alice: { workspace: "." } }, auth: { tokens_file: "t.json" } }),
  `${dir}/corral.json`,
);
const alice = await addToken("alice", `${dir}/t.json`);
const team = await httpIdentityFromConfig(config, {
  defaultToken: TOKEN,
  serverWorkspace: dir,
  metricsToken: "m".repeat(32),
});
const plain = await serveHttp(registry, { port: 0, token: TOKEN });
const withIds = await serveHttp(registry, { port: 0, token: TOKEN, team });

const a = await connectWithToken(plain.url, TOKEN, "bench");
const b = await connectWithToken(withIds.url, alice, "bench");
const call = (c: Client) => c.callTool({ name: "Sleep", arguments: { ms: 0 } });
for (let i = 0; i < 50; i++) await Promise.all([call(a), call(b)]); // warm both
const times: Record<"plain" | "identities", number[]> = { plain: [], identities: [] };
for (let i = 0; i < CALLS; i++) {
  for (
    const [name, c] of (i % 2 ? [["plain", a], ["identities", b]] : [["identities", b], [
      "plain",
      a,
    ]]) as Array<["plain" | "identities", Client]>
  ) {
    const t0 = performance.now();
    await call(c);
    times[name].push(performance.now() - t0);
  }
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const p = median(times.plain);
const q = median(times.identities);
/** What bench/identity_overhead.ts prints: medians in ms and their ratio (goal <= 1.05). */
export interface IdentityOverheadResult {
  calls: number;
  plain: number;
  identities: number;
  ratio: number;
}
const result: IdentityOverheadResult = { calls: CALLS, plain: p, identities: q, ratio: q / p };
console.log(JSON.stringify(result));
await Promise.all([a.close(), b.close()]);
await Promise.all([plain.close(), withIds.close()]);
await registry.close();
