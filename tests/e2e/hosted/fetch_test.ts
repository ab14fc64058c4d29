// A real third-party fetch MCP server hosted by corral: mcp-fetch-server
// 1.1.2 from npm (zcaceres/fetch-mcp), which nobody here wrote, run under
// `deno run` in the namespace with a net grant. It must reach only the
// granted host, through the egress proxy; every other host, address, port,
// redirect and the corral host's own loopback must fail, the canary pages
// must never be fetched, and the audit's connection lines must say so.
//
// Test hosts: like the egress tests' (tests/e2e/jail/egress_test.ts), local servers,
// but the server refuses private addresses itself (127.0.0.1 and the
// documentation ranges), which would hide corral's part. So the test runs
// the host in a network namespace of its own (tests/fixtures/hosted/
// fetch_world.ts): public addresses on its loopback (nothing leaves it) and a
// DNS responder on its 127.0.0.1:53. Inside the server's sandbox that
// resolver does not exist, so the server's own SSRF check passes every name;
// what stops it is corral: Deno's --allow-net of the grant, then the proxy,
// which resolves the name itself (`loopback.corral.test` is 127.0.0.1 there).
import assert from "node:assert/strict";
import { join } from "node:path";
import { findBwrap } from "../../../core/jail/mod.ts";
import { HOSTED_FIXTURES, ROOT } from "../../../testing/mod.ts";

const BWRAP = await findBwrap();
if (BWRAP === undefined) {
  throw new Error("hosted_fetch_test: no working bwrap (install bubblewrap)");
}
if (Deno.uid() !== 0) {
  throw new Error("hosted_fetch_test: needs root (its own network: bwrap --cap-add CAP_NET_ADMIN)");
}

/** The server under test: exact version, as tests/fixtures/hosted/servers.json installs it. */
const FETCH = "mcp-fetch-server@1.1.2";
const GRANTED = "granted.corral.test";
const GRANTED_IP = "93.184.216.34";
const CANARY_IP = "93.184.216.35";
const CANARY_IP6 = "2606:2800:220:1::35";
const PAGE =
  "<html><head><title>Granted</title></head><body><p>GRANTED-PAGE-4b7e</p></body></html>";
/** Its tools carry no annotations (so: may destroy); the operator says they need no confirmation. */
const NO_CONFIRM = Object.fromEntries(
  ["fetch_html", "fetch_txt", "fetch_markdown", "fetch_json", "fetch_readable"].map((
    t,
  ) => [t, false]),
);
/** Every canary body holds this. */
const SECRET = "CANARY-SECRET";

const WORLD = {
  addresses: [GRANTED_IP, CANARY_IP, CANARY_IP6],
  names: {
    [GRANTED]: [GRANTED_IP],
    "canary.corral.test": [CANARY_IP, CANARY_IP6],
    "canary6.corral.test": [CANARY_IP6],
    "loopback.corral.test": ["127.0.0.1"],
  },
  servers: [
    { id: "granted", hostname: GRANTED_IP, port: 8080, body: PAGE },
    { id: "granted_other_port", hostname: GRANTED_IP, port: 9090, body: `${SECRET}-port` },
    { id: "canary", hostname: CANARY_IP, port: 8080, body: `${SECRET}-v4` },
    { id: "canary6", hostname: CANARY_IP6, port: 8080, body: `${SECRET}-v6` },
    { id: "localhost", hostname: "127.0.0.1", port: 9090, body: `${SECRET}-localhost` },
    { id: "localhost6", hostname: "::1", port: 9090, body: `${SECRET}-localhost6` },
    // The corral host's loopback where a sandbox's bridge listens inside.
    { id: "host_3128", hostname: "127.0.0.1", port: 3128, body: `${SECRET}-3128` },
  ],
};

const to = (url: string) => `http://${GRANTED}:8080/to?u=${encodeURIComponent(url)}`;
/** Every attack: a URL outside the grant, directly or by a redirect from the granted host. */
const ATTACKS: Record<string, string> = {
  "unlisted name": "http://canary.corral.test:8080/",
  "unlisted name, IPv6 only": "http://canary6.corral.test:8080/",
  "unlisted raw IPv4": `http://${CANARY_IP}:8080/`,
  "unlisted raw IPv6": `http://[${CANARY_IP6}]:8080/`,
  "granted host, other port": `http://${GRANTED}:9090/`,
  "redirect to unlisted name": to("http://canary.corral.test:8080/"),
  "redirect to unlisted IPv4": to(`http://${CANARY_IP}:8080/`),
  "redirect to unlisted IPv6": to(`http://[${CANARY_IP6}]:8080/`),
  "redirect to a name of 127.0.0.1": to("http://loopback.corral.test:9090/"),
  "redirect to 127.0.0.1": to("http://127.0.0.1:9090/"),
  "a name of 127.0.0.1": "http://loopback.corral.test:9090/",
  "127.0.0.1": "http://127.0.0.1:9090/",
  "localhost": "http://localhost:9090/",
  "[::1]": "http://[::1]:9090/",
  "the proxy's port on the host, by name": "http://loopback.corral.test:3128/",
  "the bridge itself": "http://127.0.0.1:3128/",
};
/** What the server refuses by itself (its private-address check) before any connection. */
const SERVER_REFUSES = new Set(["127.0.0.1", "localhost", "[::1]", "the bridge itself"]);

function _calls(): Array<{ tool: string; args: Record<string, unknown> }> {
  return [
    { tool: "fetch_html", args: { url: `http://${GRANTED}:8080/` } },
    { tool: "fetch_txt", args: { url: `http://${GRANTED}:8080/` } },
    // The server's `proxy` argument: a way around corral's proxy if it were used.
    {
      tool: "fetch_txt",
      args: { url: `http://${GRANTED}:8080/`, proxy: `http://${CANARY_IP}:8080` },
    },
    {
      tool: "fetch_txt",
      args: { url: "http://canary.corral.test:8080/", proxy: `http://${GRANTED}:8080` },
    },
    ...Object.values(ATTACKS).map((url) => ({ tool: "fetch_txt", args: { url } })),
    // After all that, the server still answers.
    { tool: "fetch_html", args: { url: `http://${GRANTED}:8080/` } },
  ];
}

interface Outcome {
  results: Record<string, Array<{ success: boolean; result?: unknown; error?: string }>>;
  hits: Record<string, string[]>;
  dnsQueries: string[];
  audit: Array<Record<string, unknown>>;
}

/** Run the world with each grant; the server's tools are called in order. */
async function _world(scenarios: Record<string, string[]>): Promise<Outcome> {
  // Not hostedLayout(): that sets this process's CORRAL_CONFIG_DIR, shared by parallel test files.
  const base = await Deno.makeTempDir({ prefix: "corral_fetch_" });
  try {
    return await _worldIn(base, scenarios);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

async function _worldIn(base: string, scenarios: Record<string, string[]>): Promise<Outcome> {
  await Deno.writeTextFile(
    join(base, "resolv.conf"),
    "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
  );
  const world = {
    ...WORLD,
    entry: { npm: FETCH, confirm: NO_CONFIRM },
    scenarios: Object.entries(scenarios).map(([name, net]) => ({ name, net, calls: _calls() })),
  };
  const out = await new Deno.Command(BWRAP!, {
    args: [
      "--dev-bind",
      "/",
      "/",
      "--unshare-net",
      "--cap-add",
      "CAP_NET_ADMIN",
      "--bind",
      join(base, "resolv.conf"),
      "/etc/resolv.conf",
      "--die-with-parent",
      "--",
      Deno.execPath(),
      "run",
      "-A",
      join(HOSTED_FIXTURES, "fetch_world.ts"),
      JSON.stringify(world),
    ],
    cwd: ROOT,
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, `fetch_world failed: ${new TextDecoder().decode(out.stderr)}\n${text}`);
  return JSON.parse(text.trim().split("\n").at(-1)!) as Outcome;
}

function _assertGrantedAndNoCanary(o: Outcome, scenario: string): void {
  const [html, txt, proxyArgGranted, proxyArgCanary, ...rest] = o.results[scenario];
  const attacks = rest.slice(0, -1);
  assert.equal(
    rest.at(-1)!.result,
    PAGE,
    `the server still answers: ${JSON.stringify(rest.at(-1))}`,
  );
  assert.equal(html.success, true, JSON.stringify(html));
  assert.equal(html.result, PAGE, "fetch_html returns the granted page unmodified");
  assert.equal(txt.success, true, JSON.stringify(txt));
  assert.match(String(txt.result), /GRANTED-PAGE-4b7e/);
  // Its `proxy` argument changes nothing: the page still comes through corral's proxy.
  assert.match(
    String(proxyArgGranted.result),
    /GRANTED-PAGE-4b7e/,
    JSON.stringify(proxyArgGranted),
  );
  assert.equal(proxyArgCanary.success, false, JSON.stringify(proxyArgCanary));
  const names = Object.keys(ATTACKS);
  assert.equal(attacks.length, names.length);
  attacks.forEach((r, i) => {
    assert.equal(r.success, false, `${scenario}: "${names[i]}" was fetched: ${JSON.stringify(r)}`);
  });
  assert.doesNotMatch(JSON.stringify(o.results[scenario]), new RegExp(SECRET));
}

Deno.test("mcp-fetch-server granted one host: it fetches that host's page; every other host, address, port, redirect and the host's loopback fail", async () => {
  const o = await _world({ one: [`${GRANTED}:8080`] });
  _assertGrantedAndNoCanary(o, "one");
  for (const [id, paths] of Object.entries(o.hits)) {
    if (id !== "granted") assert.deepEqual(paths, [], `${id} was reached: ${paths}`);
  }
  // The granted host served the pages and the redirects, nothing else.
  assert.equal(o.hits.granted.filter((p) => p === "/").length, 4);
  assert.equal(o.hits.granted.filter((p) => p.startsWith("/to?")).length, 5);
  // Deno's --allow-net of the grant refused the rest, with the host it was asked for.
  const errors = o.results.one.slice(4, -1).map((r) => String(r.error));
  const names = Object.keys(ATTACKS);
  names.forEach((name, i) => {
    const expected = SERVER_REFUSES.has(name)
      ? /Fetcher blocked request to private address/
      : /server "fetch" may not net "[^"]+": to allow it, add it to servers\.fetch\.net in \S*permissions\.json/;
    assert.match(errors[i], expected, `${name}: ${errors[i]}`);
  });
  // Every connection went through the proxy to the granted host and was audited there.
  const conns = o.audit.filter((r) => r.kind === "connection");
  assert.equal(conns.length, 9, JSON.stringify(conns));
  // The proxy resolved the granted name and never even looked up another one.
  assert.ok(o.dnsQueries.includes(`${GRANTED}/A`), o.dnsQueries.join(" "));
  const others = o.dnsQueries.filter((q) => /\.corral\.test\//.test(q) && !q.startsWith(GRANTED));
  assert.deepEqual(others, []);
  for (const c of conns) {
    assert.equal(c.toolset, "fetch");
    assert.equal(c.host, GRANTED);
    assert.equal(c.port, 8080);
    assert.equal(c.address, GRANTED_IP);
    assert.equal(c.verdict, "allowed");
    assert.ok(Number(c.bytes_in) > 0, JSON.stringify(c));
  }
  // Each call is an audit line of the server's toolset; the refused ones are failures.
  const calls = o.audit.filter((r) => r.toolset === "fetch" && typeof r.tool === "string");
  assert.equal(calls.filter((r) => r.outcome === "success").length, 4, JSON.stringify(calls));
  assert.equal(calls.filter((r) => r.outcome !== "success").length, names.length + 1);
});

Deno.test('mcp-fetch-server granted "*" and one named host: the egress proxy alone refuses the corral host\'s loopback and own addresses, by name, raw IPv4 and IPv6 and by redirect; each refusal is audited', async () => {
  // Deno's --allow-net lets every host through here: only the proxy stands in the way.
  const o = await _world({ wide: ["*", `${GRANTED}:8080`] });
  _assertGrantedAndNoCanary(o, "wide");
  for (const [id, paths] of Object.entries(o.hits)) {
    if (id !== "granted") assert.deepEqual(paths, [], `${id} was reached: ${paths}`);
  }
  const names = Object.keys(ATTACKS);
  const errors = o.results.wide.slice(4, -1).map((r) => String(r.error));
  names.forEach((name, i) => {
    const expected = SERVER_REFUSES.has(name)
      ? /Fetcher blocked request to private address/
      : /HTTP error: 403|Fetcher blocked request to private address "127\.0\.0\.1"/;
    assert.match(errors[i], expected, `${name}: ${errors[i]}`);
  });
  const conns = o.audit.filter((r) => r.kind === "connection" && r.toolset === "fetch");
  const allowed = conns.filter((c) => c.verdict === "allowed");
  assert.equal(allowed.length, 9, JSON.stringify(allowed));
  for (const c of allowed) {
    assert.equal(`${c.host}:${c.port}`, `${GRANTED}:8080`, JSON.stringify(c));
    assert.equal(c.address, GRANTED_IP);
  }
  const own = /it is an address of this machine/;
  const loopback = /it is a loopback address/;
  const refusals: Array<[string, number, RegExp, number]> = [
    // host as asked, port, reason, how many times (direct, redirect, the `proxy` argument)
    ["canary.corral.test", 8080, own, 3],
    ["canary6.corral.test", 8080, own, 1],
    [CANARY_IP, 8080, own, 2],
    [`[${CANARY_IP6}]`, 8080, own, 2],
    [GRANTED, 9090, own, 1],
    ["loopback.corral.test", 9090, loopback, 2],
    ["127.0.0.1", 9090, loopback, 1],
    ["loopback.corral.test", 3128, loopback, 1],
  ];
  for (const [host, port, reason, times] of refusals) {
    const found = conns.filter((c) =>
      c.verdict === "refused" && c.host === host && c.port === port && reason.test(String(c.reason))
    );
    assert.equal(found.length, times, `${host}:${port}: ${JSON.stringify(conns)}`);
  }
  assert.equal(conns.length, allowed.length + 13, JSON.stringify(conns));
  // Here the proxy did resolve the other names, to refuse them.
  for (const name of ["canary.corral.test", "canary6.corral.test", "loopback.corral.test"]) {
    assert.ok(o.dnsQueries.some((q) => q.startsWith(`${name}/`)), `${name}: ${o.dnsQueries}`);
  }
});
