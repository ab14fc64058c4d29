// A real Prometheus (Debian's package) on loopback scrapes corral's metrics
// endpoint with its bearer token, and its query API returns the call
// counter; a scrape without the token is refused (the target reports down).
import assert from "node:assert/strict";
import { CorralMetrics } from "../../../core/telemetry/metrics.ts";
import { metricsResponse } from "../../../core/telemetry/metrics_endpoint.ts";
import { traceCall } from "../../../core/telemetry/spans.ts";
import { firstFile, freePort } from "../../../testing/mod.ts";

const PROMETHEUS = firstFile(["/usr/bin/prometheus", "/usr/sbin/prometheus"]);

async function query(
  port: number,
  q: string,
): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = await r.json();
  assert.equal(body.status, "success", JSON.stringify(body));
  return body.data.result;
}

Deno.test("Prometheus scrapes /metrics with its token and its query API returns corral's call counter", async () => {
  assert.ok(
    PROMETHEUS,
    "prometheus is not installed (Debian package prometheus; .ci/run installs it)",
  );
  const metrics = new CorralMetrics();
  const token = crypto.randomUUID();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) =>
      new URL(req.url).pathname === "/metrics"
        ? metricsResponse(req, token, metrics)
        : new Response("not found", { status: 404 }),
  );
  const outcome = (r: { success: boolean }) => r.success ? "success" as const : "failure" as const;
  for (let i = 0; i < 3; i++) {
    await traceCall(
      { tool: "ReadFile", toolset: "files", identity: "alice" },
      () => Promise.resolve({ success: true }),
      outcome,
      metrics,
    );
  }
  await traceCall(
    { tool: "RunBashCode", toolset: "shell", identity: "bob" },
    () => Promise.resolve({ success: false }),
    outcome,
    metrics,
  );

  const dir = await Deno.makeTempDir({ prefix: "corral_prometheus_" });
  const target = `127.0.0.1:${server.addr.port}`;
  await Deno.writeTextFile(
    `${dir}/prometheus.yml`,
    [
      "global: { scrape_interval: 1s, evaluation_interval: 1s }",
      "scrape_configs:",
      "  - job_name: corral",
      `    static_configs: [{ targets: ["${target}"] }]`,
      `    authorization: { type: Bearer, credentials: "${token}" }`,
      "  - job_name: corral_without_token",
      `    static_configs: [{ targets: ["${target}"] }]`,
      "",
    ].join("\n"),
  );
  const port = freePort();
  const prom = new Deno.Command(PROMETHEUS, {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const log = prom.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let logText = "";
  (async () => {
    for (;;) {
      const { value, done } = await log.read();
      if (done) break;
      logText += value;
    }
  })();
  try {
    let calls: Awaited<ReturnType<typeof query>> = [];
    let up: Awaited<ReturnType<typeof query>> = [];
    for (let i = 0; i < 150; i++) {
      await new Promise((r) => setTimeout(r, 200));
      try {
        calls = await query(port, "corral_calls_total");
        up = await query(port, "up");
      } catch { /* not ready yet */ }
      if (calls.length >= 2 && up.length >= 2) break;
    }
    assert.ok(
      calls.length >= 2,
      `Prometheus never had corral_calls_total; its log:\n${logText.slice(-2000)}`,
    );
    const alice = calls.find((c) => c.metric.identity === "alice" && c.metric.job === "corral");
    assert.equal(alice?.metric.outcome, "success");
    assert.equal(alice?.value[1], "3");
    const bob = calls.find((c) => c.metric.identity === "bob");
    assert.equal(bob?.metric.outcome, "failure");
    assert.equal(bob?.value[1], "1");
    // The job without the token scrapes nothing: 401, so the target is down.
    const byJob = Object.fromEntries(up.map((u) => [u.metric.job, u.value[1]]));
    assert.deepEqual(byJob, { corral: "1", corral_without_token: "0" });
    assert.ok(!calls.some((c) => c.metric.job === "corral_without_token"));
  } finally {
    prom.kill("SIGTERM");
    await prom.status;
    await server.shutdown();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
