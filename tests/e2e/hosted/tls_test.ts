// TLS that teams really have, in a network namespace of the test's own
// (tests/fixtures/hosted/tls_world.ts, as tests/e2e/hosted/fetch_test.ts):
// - corporate TLS: GetUrl and the real mcp-fetch-server reach an HTTPS host
//   whose CA corral knows only through SSL_CERT_FILE;
// - a secret injected at egress: the real @modelcontextprotocol/server-github
//   calls "api.github.com" (a host of that world) and the host sees the real
//   token, while the server, and a hostile server holding the same secret,
//   see only a placeholder (environment, /proc); the placeholder sent to a
//   second host, or in clear, is refused and audited; the token is in no
//   result and no audit line.
import assert from "node:assert/strict";
import { join } from "node:path";
import { findBwrap } from "../../../core/jail/mod.ts";
import { HOSTED_FIXTURES, ROOT } from "../../../testing/mod.ts";
import { SERVERS_DIR } from "../../_hosted_helpers.ts";

const BWRAP = await findBwrap();
if (BWRAP === undefined) throw new Error("hosted_tls_test: no working bwrap (install bubblewrap)");
if (Deno.uid() !== 0) throw new Error("hosted_tls_test: needs root (its own network namespace)");

const TOKEN = "ghp_REAL-token-known-to-the-host-only-5f1c";
const NAMES = {
  "corp.corral.test": "93.184.216.50",
  "api.github.com": "93.184.216.51",
  "other.corral.test": "93.184.216.52",
};

interface Outcome {
  results: Record<string, { success: boolean; result?: unknown; error?: string }>;
  seen: Record<string, string[]>;
  audit: Array<Record<string, unknown>>;
}

async function _world(): Promise<Outcome> {
  const base = await Deno.makeTempDir({ prefix: "corral_tls_" });
  try {
    await Deno.writeTextFile(
      join(base, "resolv.conf"),
      "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
    );
    const out = await new Deno.Command(BWRAP!, {
      args: [
        ...["--dev-bind", "/", "/", "--unshare-net", "--cap-add", "CAP_NET_ADMIN"],
        ...["--bind", join(base, "resolv.conf"), "/etc/resolv.conf", "--die-with-parent", "--"],
        Deno.execPath(),
        "run",
        "-A",
        join(HOSTED_FIXTURES, "tls_world.ts"),
        JSON.stringify({ names: NAMES, token: TOKEN }),
      ],
      cwd: ROOT,
      // No trust variable of this machine's: the world sets SSL_CERT_FILE to its own CA alone.
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: Deno.env.get("HOME") ?? "/root",
        DENO_NO_UPDATE_CHECK: "1",
        NO_COLOR: "1",
        CORRAL_SERVERS_DIR: SERVERS_DIR,
        ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, `tls_world failed: ${new TextDecoder().decode(out.stderr)}\n${text}`);
    return JSON.parse(text.trim().split("\n").at(-1)!) as Outcome;
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

const o = await _world();
const r = o.results;

Deno.test("corporate TLS: GetUrl and mcp-fetch-server reach an HTTPS host whose CA is known only through SSL_CERT_FILE", () => {
  assert.equal(r.geturl.success, true, JSON.stringify(r.geturl));
  assert.match(JSON.stringify(r.geturl), /PAGE-OF-corp\.corral\.test/);
  assert.equal(r.fetch.success, true, JSON.stringify(r.fetch));
  assert.match(String(r.fetch.result), /PAGE-OF-corp\.corral\.test/);
  assert.ok(o.seen["corp.corral.test"].length >= 2, JSON.stringify(o.seen));
});

Deno.test("a secret injected at egress: server-github's host sees the real token, the server only a placeholder", () => {
  assert.equal(r.github.success, true, JSON.stringify(r.github));
  assert.match(JSON.stringify(r.github.result), /corral-repo-from-the-test-host/);
  const search = o.seen["api.github.com"].filter((x) => x.startsWith("/search/repositories"));
  assert.deepEqual(search, [`/search/repositories auth=Bearer ${TOKEN}`]);
  // The hostile server holding it: its environment and /proc hold the placeholder only.
  const env = JSON.stringify(r.env);
  assert.match(env, /GH_TOKEN\\":\\"corral-secret-TEST_GH_TOKEN-[0-9a-f]{32}/);
  for (const p of ["/proc/self/environ", "/proc/1/environ"]) {
    assert.doesNotMatch(JSON.stringify(r[`read ${p}`]), /REAL-token/, p);
  }
  // Its own call to the secret's host gets the token put in.
  assert.equal(r["to github"].success, true, JSON.stringify(r["to github"]));
  assert.ok(
    o.seen["api.github.com"].includes(`/user auth=Bearer ${TOKEN}`),
    JSON.stringify(o.seen),
  );
  const injected = o.audit.filter((a) => a.kind === "connection" && Array.isArray(a.injected));
  assert.ok(injected.some((a) => a.toolset === "github"), JSON.stringify(injected));
});

Deno.test("a secret injected at egress: its placeholder to another host, or in clear to its own, is refused and audited; the token is in no result or audit line", () => {
  assert.equal(r["to other"].success, false, JSON.stringify(r["to other"]));
  // The other host never saw the request; without the placeholder, it is reached (TLS checked).
  assert.ok(
    o.seen["other.corral.test"].every((x) => x.endsWith("auth=-")),
    JSON.stringify(o.seen),
  );
  assert.equal(r["other, no header"].success, true, JSON.stringify(r["other, no header"]));
  assert.equal(o.seen["other.corral.test"].length, 1);
  // In clear to its own host, through the forwarder: cut before it leaves.
  assert.doesNotMatch(JSON.stringify(r["github in clear"]), /HTTP\/1\.1/);
  const refused = o.audit.filter((a) => a.kind === "connection" && a.verdict === "refused");
  assert.ok(
    refused.some((a) =>
      a.host === "other.corral.test" && /placeholder of secret TEST_GH_TOKEN/.test(String(a.reason))
    ),
    JSON.stringify(refused),
  );
  assert.ok(
    refused.some((a) => a.host === "api.github.com" && /in clear/.test(String(a.reason))),
    JSON.stringify(refused),
  );
  const everything = JSON.stringify(o.results) + JSON.stringify(o.audit);
  assert.ok(!everything.includes(TOKEN), "the token reached a result or an audit line");
});
