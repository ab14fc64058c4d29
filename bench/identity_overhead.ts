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
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parseConfig } from "../core/config/mod.ts";
import { parsePolicy } from "../core/config/mod.ts";
import { addToken } from "../core/identity/mod.ts";
import { httpIdentityFromConfig } from "../core/mcp/mod.ts";
import { serveHttp } from "../core/mcp/mod.ts";
import { Registry } from "../core/registry/mod.ts";

const CALLS = Number(Deno.args[0] ?? 400);
const TOKEN = "t".repeat(64);
const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_bench_identity_" }));
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

async function client(url: string, token: string): Promise<Client> {
  const c = new Client({ name: "bench", version: "1" });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return c;
}

const a = await client(plain.url, TOKEN);
const b = await client(withIds.url, alice);
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
await Deno.remove(dir, { recursive: true });
