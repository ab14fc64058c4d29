// OpenTelemetry through Deno's built-in exporter: a child `deno run` that
// makes traced calls with corral's telemetry sends its spans and metrics
// over OTLP/HTTP (JSON) to a receiver on loopback, with identity and
// outcome; without OTEL_DENO it sends nothing.
import assert from "node:assert/strict";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";

interface _Received {
  path: string;
  body: unknown;
}

async function runWithReceiver(otel: boolean): Promise<_Received[]> {
  const received: _Received[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    received.push({ path: new URL(req.url).pathname, body: JSON.parse(await req.text()) });
    return Response.json({});
  });
  try {
    const env: Record<string, string> = {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${server.addr.port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "corral",
      OTEL_DENO_CONSOLE: "ignore",
    };
    if (otel) env.OTEL_DENO = "true";
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", `${ROOT}deno.json`, "--cached-only", `${FIXTURES}otel_call.ts`],
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  } finally {
    await server.shutdown();
  }
  return received;
}

type _Attr = { key: string; value: Record<string, unknown> };
function attrs(list: _Attr[] = []): Record<string, unknown> {
  return Object.fromEntries(list.map((a) => [a.key, Object.values(a.value)[0]]));
}

Deno.test("OTLP: a span per call with tool, identity, session, outcome and sandbox; call metrics by outcome", async () => {
  const received = await runWithReceiver(true);
  const traces = received.filter((r) => r.path === "/v1/traces");
  assert.ok(traces.length > 0, `no traces received (paths: ${received.map((r) => r.path)})`);
  // deno-lint-ignore no-explicit-any
  const spans = traces.flatMap((t: any) =>
    // deno-lint-ignore no-explicit-any
    t.body.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans))
  );
  const byName = new Map(spans.map((s) => [s.name, attrs(s.attributes)]));
  const alice = byName.get("execute_tool ReadFile");
  assert.ok(alice, `spans: ${[...byName.keys()]}`);
  assert.equal(alice["corral.identity"], "alice");
  assert.equal(alice["corral.outcome"], "success");
  assert.equal(alice["corral.session"], "session-a");
  assert.equal(alice["corral.sandbox"], "start");
  assert.equal(alice["gen_ai.tool.name"], "ReadFile");
  const bob = byName.get("execute_tool RunBashCode")!;
  assert.equal(bob["corral.identity"], "bob");
  assert.equal(bob["corral.outcome"], "failure");
  assert.equal(bob["corral.sandbox"], "reuse");
  // A client's traceparent (MCP `_meta.traceparent`) is continued: same trace, its span the parent.
  const carol = spans.find((x) => x.name === "execute_tool ListFiles");
  assert.ok(carol, `spans: ${[...byName.keys()]}`);
  assert.equal(carol.traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
  assert.equal(carol.parentSpanId, "00f067aa0ba902b7");
  assert.notEqual(
    spans.find((x) => x.name === "execute_tool ReadFile").parentSpanId,
    "00f067aa0ba902b7",
  );
  // The resource names the service as OTEL_SERVICE_NAME says.
  // deno-lint-ignore no-explicit-any
  const resource = attrs((traces[0].body as any).resourceSpans[0].resource.attributes);
  assert.equal(resource["service.name"], "corral");

  const metrics = received.filter((r) => r.path === "/v1/metrics");
  assert.ok(metrics.length > 0, "no metrics received");
  const text = JSON.stringify(metrics.map((m) => m.body));
  assert.match(text, /"corral\.calls"/);
  assert.match(text, /"corral\.call\.duration"/);
  assert.match(text, /"stringValue":"failure"/);
});

Deno.test("OTLP: without OTEL_DENO nothing is exported", async () => {
  const received = await runWithReceiver(false);
  assert.deepEqual(received.map((r) => r.path), []);
});
