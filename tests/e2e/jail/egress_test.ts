// Attacks on the network grant: every sandbox reaches the network only
// through the host's egress proxy (core/egress/egress.ts), which checks the
// net list and the address at connect time and audits every connection.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { findBwrap } from "../../../core/jail/mod.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";
import { tempLayout } from "../../_helpers.ts";

const BWRAP = await findBwrap();
if (BWRAP === undefined) throw new Error("egress_test: no working bwrap here (install bubblewrap)");

function _serve(body: string) {
  let hits = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    hits++;
    return new Response(body);
  });
  return { port: server.addr.port, hits: () => hits, close: () => server.shutdown() };
}

async function _probe(ws: string, net: string[], auditPath?: string) {
  const policy = parsePolicy(
    JSON.stringify({ plugins: { probe: { net, run: ["bash"] } } }),
    "t.json",
    ws,
  );
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "xn",
    noBuiltins: true,
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
    ...(auditPath ? { auditPath } : {}),
    sources: [{
      id: "plugin:egress/probe",
      kind: "plugin",
      modules: [`${FIXTURES}egress/probe.ts`],
      policy: policy.plugin("plugin:egress/probe", "probe"),
    }],
  });
}

Deno.test("curl from jailed bash reaches a listed loopback server and is refused an unlisted one; every connection is audited", async () => {
  const { ws, base } = await tempLayout();
  const listed = _serve("listed");
  const unlisted = _serve("unlisted");
  const audit = `${base}/audit.jsonl`;
  const registry = await _probe(ws, ["*", `127.0.0.1:${listed.port}`], audit);
  try {
    const res = await registry.call("CurlProbe", {
      code: `curl -sS -m 5 http://127.0.0.1:${listed.port}/; echo " rc=$?"; ` +
        `curl -sS -m 5 http://127.0.0.1:${unlisted.port}/; echo " rc=$?"; ` +
        `curl -sS -m 5 --noproxy '*' http://127.0.0.1:${unlisted.port}/; echo " direct=$?"`,
    });
    assert.equal(res.success, true, res.error);
    const out = String(res.stdout);
    assert.match(out, /^listed rc=0/m);
    assert.match(out, /refused 127\.0\.0\.1:\d+: it is a loopback address/);
    assert.match(out, /direct=7/, "without the proxy there is no route at all");
    assert.equal(unlisted.hits(), 0, "the unlisted server saw nothing");
    assert.equal(listed.hits(), 1);
  } finally {
    await registry.close();
    await listed.close();
    await unlisted.close();
  }
  const lines = (await Deno.readTextFile(audit)).trim().split("\n").map((l) => JSON.parse(l));
  const conns = lines.filter((l) => l.kind === "connection");
  assert.ok(
    conns.some((c) => c.verdict === "allowed" && c.port === listed.port && c.bytes_in > 0),
    JSON.stringify(conns),
  );
  assert.ok(
    conns.some((c) =>
      c.verdict === "refused" && c.port === unlisted.port && c.address === "127.0.0.1" &&
      /loopback/.test(c.reason)
    ),
    JSON.stringify(conns),
  );
});

Deno.test("a raw Deno.connect from a plugin holding n does not get out, even to a listed host", async () => {
  const { ws } = await tempLayout();
  const server = _serve("raw");
  const registry = await _probe(ws, [`127.0.0.1:${server.port}`]);
  try {
    const res = await registry.call("RawConnect", { hostname: "127.0.0.1", port: server.port });
    assert.equal(res.success, true, res.error);
    assert.equal(res.reached, false, JSON.stringify(res));
    assert.equal(server.hits(), 0);
    // Deno's fetch to the same listed host goes through the proxy, and works.
    const ok = await registry.call("FetchProbe", { url: `http://127.0.0.1:${server.port}/` });
    assert.equal(ok.body, "raw", JSON.stringify(ok));
    assert.equal(server.hits(), 1);
  } finally {
    await registry.close();
    await server.close();
  }
});

Deno.test("DNS rebinding: a name that answers a public address, then 127.0.0.1, never reaches the internal server", async () => {
  // The host runs in a network namespace of this test's own, where a DNS
  // responder on 127.0.0.1:53 answers the names.
  const { base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/resolv.conf`,
    "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
  );
  const out = await new Deno.Command(BWRAP!, {
    args: [
      "--dev-bind",
      "/",
      "/",
      "--unshare-net",
      "--bind",
      `${base}/resolv.conf`,
      "/etc/resolv.conf",
      "--die-with-parent",
      "--",
      Deno.execPath(),
      "run",
      "-A",
      `${ROOT}tests/fixtures/rebind_host.ts`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const r = JSON.parse(text.trim().split("\n").at(-1)!) as {
    results: Array<Record<string, unknown>>;
    queries: number;
    hits: number;
  };
  assert.ok(r.queries >= 1, "the name was resolved");
  assert.equal(r.hits, 0, `the internal server was reached: ${text}`);
  for (const res of r.results) {
    assert.doesNotMatch(JSON.stringify(res), /internal secret/);
    const refused = res.success === false || res.status === 403 || res.status === 502;
    assert.ok(refused, JSON.stringify(res));
  }
});

Deno.test("the proxy is bounded: hundreds of idle connections are refused past the cap and audited, and later calls still get out", async () => {
  const { ws, base } = await tempLayout();
  const server = _serve("ok");
  const audit = `${base}/audit.jsonl`;
  const registry = await _probe(ws, ["*", `127.0.0.1:${server.port}`], audit);
  try {
    const flood = await registry.call("CurlProbe", {
      code:
        "python3 -c \"import socket,time\nss=[]\nfor i in range(300):\n  s=socket.socket(socket.AF_UNIX)\n  s.connect('/tmp/.corral-egress/egress.sock')\n  ss.append(s)\ntime.sleep(1)\nprint(len(ss))\"",
    });
    assert.equal(flood.success, true, flood.error);
    const after = await registry.call("CurlProbe", {
      code: `curl -sS -m 5 http://127.0.0.1:${server.port}/`,
    });
    assert.equal(after.stdout, "ok", JSON.stringify(after));
  } finally {
    await registry.close();
    await server.close();
  }
  const lines = (await Deno.readTextFile(audit)).trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(
    lines.some((l) =>
      l.kind === "connection" && /too many connections at once/.test(l.reason ?? "")
    ),
    "the refusals are audited",
  );
});

Deno.test("the proxy refuses this machine's own addresses and special-purpose ranges unless listed", async () => {
  const { decideEgress } = await import("../../../core/egress/egress.ts");
  const own = new Set(["192.0.2.77", "10.9.8.7"]);
  for (const host of ["192.0.2.77", "198.18.0.1", "203.0.113.5", "198.51.100.7", "[2001:db8::1]"]) {
    const d = await decideEgress(host, 80, { allowed: ["*"], ownAddresses: own });
    assert.ok(d.refused, `${host} was allowed`);
  }
  const own2 = new Set(["93.184.216.34"]);
  const mine = await decideEgress("93.184.216.34", 80, { allowed: ["*"], ownAddresses: own2 });
  assert.match(String(mine.refused), /an address of this machine/);
  const listed = await decideEgress("93.184.216.34", 80, {
    allowed: ["93.184.216.34:80"],
    ownAddresses: own2,
  });
  assert.equal(listed.refused, undefined);
});

Deno.test("a tool without n finds no egress proxy socket, even with a grant over the folder of the host's", async () => {
  const { ws, base } = await tempLayout();
  const cfg = `${base}/cfg`;
  const policy = parsePolicy(
    JSON.stringify({
      plugins: { probe: { net: ["*"], run: ["bash"] }, lister: { read: [base], run: ["bash"] } },
    }),
    "t.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    configDir: cfg,
    policy,
    privileges: "rxn",
    noBuiltins: true,
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
    sources: [
      {
        id: "plugin:egress/probe",
        kind: "plugin",
        modules: [`${FIXTURES}egress/probe.ts`],
        policy: policy.plugin("plugin:egress/probe", "probe"),
      },
      {
        id: "plugin:egress_lister/lister",
        kind: "plugin",
        modules: [`${FIXTURES}egress_lister/lister.ts`],
        policy: policy.plugin("plugin:egress_lister/lister", "lister"),
      },
    ],
  });
  try {
    // The proxy of the probe's sandbox exists while it runs.
    await registry.call("FetchProbe", { url: "http://127.0.0.1:1/" });
    const sockets = [...Deno.readDirSync(`${cfg}/run`)];
    assert.ok(sockets.length >= 1, "the probe's proxy runs");
    const res = await registry.call("Lister", {
      code: `find ${base} -name '*.sock' 2>/dev/null; ls -A ${cfg}/run 2>&1; true`,
    });
    assert.equal(res.success, true, res.error);
    assert.doesNotMatch(String(res.stdout), /egress/, "the lister sees no egress socket");
  } finally {
    await registry.close();
  }
});
