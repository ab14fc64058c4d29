/**
 * `/metrics`: the Prometheus text exposition, behind a bearer token of its
 * own (not the MCP one: a scraper gets numbers, never tools).
 *
 * @module
 */
import { type CorralMetrics, telemetry } from "./metrics.ts";

/**
 * Answer a scrape: 405 for anything but GET/HEAD, 401 (with
 * `WWW-Authenticate`) without the token when one is set, else the metrics.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { metricsResponse } from "./metrics_endpoint.ts";
 * const no = await metricsResponse(new Request("http://h/metrics"), "s3cret");
 * assert.equal(no.status, 401);
 * const ok = await metricsResponse(new Request("http://h/metrics", { headers: { authorization: "Bearer s3cret" } }), "s3cret");
 * assert.equal(ok.status, 200);
 * assert.match(await ok.text(), /# TYPE corral_calls_total counter/);
 * ```
 */
export async function metricsResponse(
  req: Request,
  token: string | undefined,
  metrics: CorralMetrics = telemetry,
): Promise<Response> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    return new Response("Method not allowed: GET /metrics\n", {
      status: 405,
      headers: { Allow: "GET, HEAD" },
    });
  }
  if (
    token !== undefined && !_sameText(req.headers.get("authorization") ?? "", `Bearer ${token}`)
  ) {
    return new Response("Unauthorized: send Authorization: Bearer <metrics token>\n", {
      status: 401,
      headers: { "WWW-Authenticate": 'Bearer realm="corral-metrics"' },
    });
  }
  const body = req.method === "HEAD" ? null : await metrics.render();
  return new Response(body, { headers: { "Content-Type": metrics.contentType } });
}

function _sameText(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < y.length; i++) diff |= (x[i] ?? 0) ^ y[i];
  return diff === 0;
}
