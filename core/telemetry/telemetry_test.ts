// Unit tests of core/telemetry/: calls counted by outcome (a throw is
// "error"), durations in the histogram, gauges, egress verdicts, and the
// /metrics answer behind its own token.
import assert from "node:assert/strict";
import { CorralMetrics } from "./metrics.ts";
import { metricsResponse } from "./metrics_endpoint.ts";
import { traceCall } from "./spans.ts";

Deno.test("traceCall counts each outcome; a throw is an error and is rethrown", async () => {
  const m = new CorralMetrics();
  const info = { tool: "ReadFile", toolset: "files", identity: "alice" };
  const outcomeOf = (r: { success: boolean }) =>
    r.success ? "success" as const : "failure" as const;
  let marked = false;
  await traceCall(
    info,
    (marks) => {
      marks.sandbox("start");
      marked = true;
      return Promise.resolve({ success: true });
    },
    outcomeOf,
    m,
  );
  await traceCall(info, () => Promise.resolve({ success: true }), outcomeOf, m);
  await traceCall(
    { ...info, identity: "bob" },
    () => Promise.resolve({ success: false }),
    outcomeOf,
    m,
  );
  await assert.rejects(
    traceCall(info, () => Promise.reject<{ success: boolean }>(new Error("boom")), outcomeOf, m),
    /boom/,
  );
  await traceCall(info, () => Promise.resolve({ denied: true }), () => "denied", m);
  assert.ok(marked);
  const text = await m.render();
  const line = (id: string, outcome: string) =>
    new RegExp(
      `corral_calls_total\\{tool="ReadFile",toolset="files",identity="${id}",outcome="${outcome}"\\} (\\d+)`,
    )
      .exec(text)?.[1];
  assert.equal(line("alice", "success"), "2");
  assert.equal(line("bob", "failure"), "1");
  assert.equal(line("alice", "error"), "1");
  assert.equal(line("alice", "denied"), "1");
  assert.match(text, /corral_call_duration_seconds_count\{tool="ReadFile",outcome="success"\} 2/);
  assert.match(
    text,
    /corral_call_duration_seconds_bucket\{le="60",tool="ReadFile",outcome="success"\} 2/,
  );
});

Deno.test("gauges and egress verdicts", async () => {
  const m = new CorralMetrics();
  m.sandboxes(1);
  m.sandboxes(1);
  m.sandboxes(-1);
  m.queueDepth(5);
  m.queueDepth(3);
  m.egress("allowed");
  m.egress("refused");
  m.egress("refused");
  const text = await m.render();
  assert.match(text, /^corral_sandboxes_live 1$/m);
  assert.match(text, /^corral_call_queue_depth 3$/m);
  assert.match(text, /^corral_egress_connections_total\{verdict="refused"\} 2$/m);
  assert.match(text, /^corral_egress_connections_total\{verdict="allowed"\} 1$/m);
});

Deno.test("/metrics: its own token, compared in full; GET and HEAD only", async () => {
  const m = new CorralMetrics();
  m.egress("allowed");
  const req = (auth?: string, method = "GET") =>
    new Request("http://127.0.0.1/metrics", {
      method,
      headers: auth === undefined ? {} : { authorization: auth },
    });
  for (const bad of [undefined, "", "Bearer", "Bearer s3cre", "Bearer s3cretX", "bearer s3cret"]) {
    const r = await metricsResponse(req(bad), "s3cret", m);
    assert.equal(r.status, 401, `refused: ${bad}`);
    assert.match(r.headers.get("www-authenticate") ?? "", /^Bearer /);
    assert.doesNotMatch(await r.text(), /corral_/);
  }
  const ok = await metricsResponse(req("Bearer s3cret"), "s3cret", m);
  assert.equal(ok.status, 200);
  assert.match(ok.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  assert.match(await ok.text(), /corral_egress_connections_total\{verdict="allowed"\} 1/);
  assert.equal((await metricsResponse(req("Bearer s3cret", "POST"), "s3cret", m)).status, 405);
  assert.equal((await metricsResponse(req(), undefined, m)).status, 200);
});
