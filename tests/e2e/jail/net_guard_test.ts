// The network guard inside real sandboxes: GetUrl against a server on
// 127.0.0.1 that the test runs, under a policy that grants every host ("*").
import assert from "node:assert/strict";
import { type Isolation, parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { tempLayout } from "../../_helpers.ts";

function _serve(): { base: string; hits: () => number; close: () => Promise<void> } {
  let hits = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    hits++;
    const target = new URL(req.url).searchParams.get("to");
    return target
      ? new Response(null, { status: 302, headers: { location: target } })
      : new Response("internal data");
  });
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    hits: () => hits,
    close: () => server.shutdown(),
  };
}

async function _net(ws: string, net: string[], isolation: Isolation): Promise<Registry> {
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { net: { net, isolation } } }),
    "test.json",
    ws,
  );
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "n",
    toolsets: ["net"],
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
}

for (const isolation of ["worker", "process"] as const) {
  Deno.test(`GetUrl in a ${isolation} sandbox refuses loopback unless the policy lists the host`, async () => {
    const { ws } = await tempLayout();
    const a = _serve();
    const b = _serve();
    const wide = await _net(ws, ["*"], isolation);
    const listed = await _net(ws, ["*", new URL(a.base).host], isolation);
    try {
      const port = new URL(a.base).port;
      for (const url of [`${a.base}/`, `http://localhost:${port}/`]) {
        const res = await wide.call("GetUrl", { url, timeout: 5 });
        assert.equal(res.success, false, url);
        assert.match(res.error!, /refused .* loopback address/, url);
      }
      assert.equal(a.hits(), 0, "the server saw no request");
      const ok = await listed.call("GetUrl", { url: `${a.base}/` });
      assert.equal(ok.success, true, ok.error);
      assert.equal(ok.content, "internal data");
      // A redirect from the listed host to another loopback server is refused.
      const hop = await listed.call("GetUrl", {
        url: `${a.base}/?to=${encodeURIComponent(`${b.base}/`)}`,
      });
      assert.equal(hop.success, false);
      assert.match(hop.error!, /refused 127\.0\.0\.1:\d+: it is a loopback address/);
      assert.equal(b.hits(), 0, "the redirect target saw no request");
    } finally {
      await wide.close();
      await listed.close();
      await a.close();
      await b.close();
    }
  });
}
