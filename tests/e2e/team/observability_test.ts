/**
 * What operators see of a real `corral mcp --http`: a real Prometheus
 * (Debian's package, on loopback) scrapes its /metrics with the metrics
 * token and its query API returns the call counter by identity; Deno's
 * built-in exporter (OTEL_DENO=true) sends a span per call, with identity
 * and outcome, to an OTLP/HTTP receiver on loopback.
 */
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { join } from "node:path";
import { addToken } from "../../../core/identity/token_store.ts";
import { CORRAL_ARGS, freePort, ROOT } from "../../../testing/mod.ts";
import { childEnv, tempWorkspace } from "../../_mcp_helpers.ts";

const PROMETHEUS = "/usr/bin/prometheus";
const METRICS_TOKEN = `metrics-${crypto.randomUUID()}`;

/** A child process whose stderr is kept (and drained), with a way to stop it. */
function spawn(cmd: string, args: string[], env?: Record<string, string>) {
  const child = new Deno.Command(cmd, {
    args,
    env,
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  const drained = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
    }
  })();
  return {
    log: () => text,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await drained;
    },
  };
}

async function until<T>(what: string, get: () => Promise<T | undefined>, log: () => string) {
  for (let i = 0; i < 200; i++) {
    const v = await get().catch(() => undefined);
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}:\n${log().slice(-3000)}`);
}

Deno.test("corral mcp --http: Prometheus scrapes /metrics (calls by identity), OTLP gets a span per call", async () => {
  assert.ok(Deno.statSync(PROMETHEUS).isFile, "prometheus is not installed (.ci/run installs it)");
  await using ws = await tempWorkspace();
  const configDir = join(ws.cache, "config");
  await Deno.mkdir(configDir, { recursive: true });
  const alice = await addToken("alice", join(configDir, "tokens.json"));
  // The OTLP receiver.
  const spans: Array<Record<string, unknown>> = [];
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = JSON.parse(await req.text());
    if (new URL(req.url).pathname === "/v1/traces") {
      for (const rs of body.resourceSpans ?? []) {
        for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans);
      }
    }
    return Response.json({});
  });
  const corral = spawn(Deno.execPath(), [
    ...CORRAL_ARGS,
    "mcp",
    "--http",
    "127.0.0.1:0",
    "--workspace",
    ws.dir,
    "-r",
  ], {
    ...childEnv(ws.cache),
    CORRAL_METRICS_TOKEN: METRICS_TOKEN,
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.addr.port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "corral",
    OTEL_DENO_CONSOLE: "ignore",
  });
  const dir = await Deno.makeTempDir({ prefix: "corral_team_obs_" });
  let prom: ReturnType<typeof spawn> | undefined;
  try {
    const url = await until(
      "corral's URL",
      () => Promise.resolve(/(http:\/\/\S+\/mcp)/.exec(corral.log())?.[1]),
      corral.log,
    );
    const client = new Client({ name: "obs-test", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${alice}` } },
      }),
    );
    for (let i = 0; i < 3; i++) {
      const r = await client.callTool({ name: "ReadFile", arguments: { filepath: "notes.txt" } });
      assert.equal(r.isError, false);
    }
    const failed = await client.callTool({ name: "ReadFile", arguments: { filepath: "nope.txt" } });
    assert.equal(failed.isError, true);
    // While the session lives, its sandbox is counted.
    const live = await (await fetch(url.replace(/\/mcp$/, "/metrics"), {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    })).text();
    assert.ok(Number(/^corral_sandboxes_live (\d+)$/m.exec(live)?.[1]) >= 1, live);
    // Its memory, read from /proc at the scrape: the whole tree of the sandbox's process.
    const rss = /^corral_sandbox_rss_bytes\{sandbox="([^"]+)",pid="(\d+)"\} (\d+)$/m.exec(live);
    assert.ok(rss, live);
    const pss = new RegExp(
      `^corral_sandbox_pss_bytes\\{sandbox="${rss[1].replace(/[[\]]/g, "\\$&")}",pid="${
        rss[2]
      }"\\} (\\d+)$`,
      "m",
    ).exec(live);
    assert.ok(pss, live);
    assert.ok(Number(rss[3]) > 10 * 1024 * 1024, `a sandbox holds a Deno: ${rss[0]}`);
    assert.ok(Number(pss[1]) > 0 && Number(pss[1]) <= Number(rss[3]), pss[0]);
    assert.ok(await Deno.stat(`/proc/${rss[2]}`), "the pid is the sandbox's, alive");
    await client.close();

    const target = new URL(url).host;
    await Deno.writeTextFile(
      `${dir}/prometheus.yml`,
      [
        "global: { scrape_interval: 1s }",
        "scrape_configs:",
        "  - job_name: corral",
        `    static_configs: [{ targets: ["${target}"] }]`,
        `    authorization: { type: Bearer, credentials: "${METRICS_TOKEN}" }`,
        "",
      ].join("\n"),
    );
    const port = freePort();
    prom = spawn(PROMETHEUS, [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
    ]);
    const q = encodeURIComponent('corral_calls_total{identity="alice",tool="ReadFile"}');
    const series = await until("Prometheus to have corral_calls_total", async () => {
      const body = await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${q}`)).json();
      const r = body?.data?.result as Array<{ metric: Record<string, string>; value: string[] }>;
      return r?.length >= 1 ? r : undefined;
    }, () => prom!.log());
    const byOutcome = Object.fromEntries(series.map((s) => [s.metric.outcome, s.value[1]]));
    assert.equal(byOutcome.success, "3");
    assert.ok(byOutcome.failure === "1" || byOutcome.denied === "1" || byOutcome.error === "1");

    // Deno flushes its exporter when corral exits.
    await corral.stop();
    const attrs = (s: Record<string, unknown>) =>
      Object.fromEntries(
        (s.attributes as Array<{ key: string; value: Record<string, unknown> }>).map((
          a,
        ) => [a.key, Object.values(a.value)[0]]),
      );
    const calls = await until("spans of the calls", () => {
      const found = spans.filter((s) => s.name === "execute_tool ReadFile").map(attrs);
      return Promise.resolve(found.length >= 4 ? found : undefined);
    }, corral.log);
    assert.ok(calls.every((a) => a["corral.identity"] === "alice"));
    assert.ok(calls.every((a) => typeof a["corral.session"] === "string" && a["corral.session"]));
    assert.equal(new Set(calls.map((a) => a["corral.session"])).size, 1, "one session");
    assert.equal(calls.filter((a) => a["corral.outcome"] === "success").length, 3);
    assert.ok(calls.some((a) => a["corral.outcome"] !== "success"));
    // The first call started its sandbox; the others reused it.
    assert.deepEqual(
      calls.map((a) => a["corral.sandbox"]).sort(),
      ["reuse", "reuse", "reuse", "start"],
    );
  } finally {
    await corral.stop();
    await prom?.stop();
    await receiver.shutdown();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
