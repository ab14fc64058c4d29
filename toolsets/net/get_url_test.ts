import assert from "node:assert/strict";
import { collectTools, invokeTool, testContext } from "../../core/tool/mod.ts";
import * as getUrl from "./get_url.ts";

const { tools: [GetUrl] } = await collectTools(getUrl);

/** A local server; `/hang` never answers until the test ends. */
async function _withServer(fn: (base: string) => Promise<void>): Promise<void> {
  let release!: () => void;
  const hung = new Promise<void>((res) => release = res);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/hello") {
      return new Response("hello world", { headers: { "content-type": "text/plain" } });
    }
    if (path === "/big") {
      // An endless stream: the client must stop reading by itself.
      const chunk = new TextEncoder().encode("y".repeat(16_384));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent > 50_000_000) return controller.close();
          sent += chunk.length;
          controller.enqueue(chunk);
        },
      });
      return new Response(body, { headers: { "content-type": "text/plain" } });
    }
    if (path === "/hang") {
      await hung;
      return new Response("late");
    }
    if (path === "/to") {
      const target = new URL(req.url).searchParams.get("target") ?? "/hello";
      return new Response(null, { status: 302, headers: { location: target } });
    }
    return new Response("missing", { status: 404, statusText: "Not Found" });
  });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    release();
    await server.shutdown();
  }
}

/** A context whose policy lists the test server's host explicitly. */
function _allow(base: string, extra: string[] = []) {
  const host = new URL(base).host;
  return testContext({ grant: { read: [], write: [], run: [], net: [host, ...extra] } });
}

Deno.test("GetUrl needs only the n letter", () => {
  assert.equal(GetUrl.permissions, "n");
});

Deno.test("GetUrl fetches a page with its status and content type", () =>
  _withServer(async (base) => {
    const res = await invokeTool(GetUrl, { url: `${base}/hello` }, _allow(base));
    assert.equal(res.success, true);
    assert.equal(res.status, 200);
    assert.equal(res.content, "hello world");
    assert.equal(res.content_type, "text/plain");
    assert.equal(res.truncated, false);
    assert.equal(res.url, `${base}/hello`);
  }));

Deno.test("GetUrl stops reading an endless body at max_length", () =>
  _withServer(async (base) => {
    const res = await invokeTool(GetUrl, { url: `${base}/big`, max_length: 1000 }, _allow(base));
    assert.equal(res.success, true);
    assert.equal(res.truncated, true);
    assert.equal(res.content, "y".repeat(1000));
  }));

Deno.test("GetUrl gives up on a server that never answers", () =>
  _withServer(async (base) => {
    const res = await invokeTool(GetUrl, { url: `${base}/hang`, timeout: 0.3 }, _allow(base));
    assert.equal(res.success, false);
    assert.equal(res.error, 'Cannot run tool "GetUrl": timed out after 0.3 s');
  }));

Deno.test("GetUrl reports an HTTP error status as a failure with the body", () =>
  _withServer(async (base) => {
    const res = await invokeTool(GetUrl, { url: `${base}/nothing` }, _allow(base));
    assert.equal(res.success, false);
    assert.equal(res.status, 404);
    assert.equal(res.content, "missing");
    assert.match(res.error!, /HTTP 404/);
  }));

Deno.test("GetUrl refuses non-http schemes and invalid URLs", async () => {
  const file = await invokeTool(GetUrl, { url: "file:///etc/passwd" }, testContext());
  assert.equal(file.success, false);
  assert.match(file.error!, /only http and https URLs are allowed, got "file:"/);
  assert.ok(!("content" in file));
  const bad = await invokeTool(GetUrl, { url: "not a url" }, testContext());
  assert.match(bad.error!, /invalid URL "not a url"/);
});

Deno.test('GetUrl refuses loopback and metadata addresses when the policy lists only "*"', () =>
  _withServer(async (base) => {
    const port = new URL(base).port;
    const wide = testContext({ grant: { read: [], write: [], run: [], net: ["*"] } });
    for (
      const url of [
        `${base}/hello`, // 127.0.0.1
        `http://localhost:${port}/hello`, // a name that resolves to loopback
        `http://[::ffff:127.0.0.1]:${port}/hello`, // IPv4-mapped IPv6
        "http://169.254.169.254/latest/meta-data/", // cloud metadata
        "http://10.1.2.3/", // private
      ]
    ) {
      const res = await invokeTool(GetUrl, { url, timeout: 5 }, wide);
      assert.equal(res.success, false, url);
      assert.match(res.error!, /permission denied: refused .*(loopback|link-local|private)/, url);
      assert.ok(!("content" in res), url);
    }
  }));

Deno.test("GetUrl fetches a loopback server that the policy lists explicitly", () =>
  _withServer(async (base) => {
    const res = await invokeTool(GetUrl, { url: `${base}/hello` }, _allow(base, ["*"]));
    assert.equal(res.success, true, res.error);
    assert.equal(res.content, "hello world");
  }));

Deno.test("GetUrl refuses a host that is not in its grant before connecting", () =>
  _withServer(async (base) => {
    const res = await invokeTool(GetUrl, { url: `${base}/hello` }, _allow("http://example.com"));
    assert.equal(res.success, false);
    assert.match(res.error!, /permission denied: no network access to 127\.0\.0\.1:\d+/);
  }));

Deno.test("GetUrl follows a redirect within allowed hosts and reports the final URL", () =>
  _withServer(async (base) => {
    const res = await invokeTool(GetUrl, { url: `${base}/to?target=/hello` }, _allow(base));
    assert.equal(res.success, true, res.error);
    assert.equal(res.content, "hello world");
    assert.equal(res.final_url, `${base}/hello`);
  }));

Deno.test("GetUrl refuses a redirect from an allowed host to a loopback host that is not listed", () =>
  _withServer((allowedBase) =>
    _withServer(async (otherBase) => {
      const target = encodeURIComponent(`${otherBase}/hello`);
      const res = await invokeTool(
        GetUrl,
        { url: `${allowedBase}/to?target=${target}` },
        _allow(allowedBase, ["*"]),
      );
      assert.equal(res.success, false);
      assert.match(
        res.error!,
        /permission denied: refused 127\.0\.0\.1:\d+: it is a loopback address/,
      );
      assert.ok(!("content" in res));
    })
  ));

Deno.test("GetUrl stops after 5 redirects", () =>
  _withServer(async (base) => {
    // Each hop redirects to the next; 7 levels deep.
    let url = "/hello";
    for (let i = 0; i < 7; i++) url = `/to?target=${encodeURIComponent(url)}`;
    const res = await invokeTool(GetUrl, { url: `${base}${url}` }, _allow(base));
    assert.equal(res.success, false);
    assert.match(res.error!, /more than 5 redirects/);
  }));
