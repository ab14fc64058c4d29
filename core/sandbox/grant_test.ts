import assert from "node:assert/strict";
import { ceilingGrant, describeGrant, effectiveGrant, type HostPrivileges } from "./grant.ts";
import type { SandboxPolicy } from "../config/policy.ts";

function _policy(overrides: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return {
    read: ["/ws"],
    write: ["/ws/out"],
    run: ["git"],
    net: ["example.com"],
    env: [],
    isolation: "worker",
    timeout_ms: 1000,
    discovery_timeout_ms: 1000,
    memory_mb: 64,
    max_output_bytes: 4096,
    max_read_bytes: 1 << 20,
    max_processes: 128,
    allow_override: false,
    where: "toolsets.files",
    ...overrides,
  };
}

/** A host with `letters` where Deno grants everything except `refused` values. */
function _host(letters = "rwxn", refused: string[] = []) {
  const calls: Array<[string, string]> = [];
  const host: HostPrivileges = {
    letters,
    denoGranted(kind, value) {
      calls.push([kind, value]);
      return !refused.includes(value);
    },
  };
  return { host, calls };
}

Deno.test("effectiveGrant gives a tool exactly the policy lists of its declared letters", () => {
  const { host } = _host();
  assert.deepEqual(effectiveGrant("rw", _policy(), host), {
    grant: { read: ["/ws"], write: ["/ws/out"], run: [], net: [], env: [] },
  });
});

Deno.test("effectiveGrant gives undeclared letters empty lists", () => {
  const { host, calls } = _host();
  assert.deepEqual(effectiveGrant("", _policy(), host), {
    grant: { read: [], write: [], run: [], net: [], env: [] },
  });
  assert.deepEqual(calls, [], "Deno was asked about letters the tool did not declare");
  assert.deepEqual(effectiveGrant("n", _policy(), host).grant, {
    read: [],
    write: [],
    run: [],
    net: ["example.com"],
    env: [],
  });
});

Deno.test("effectiveGrant grants all four letters when everything allows them", () => {
  const { host } = _host();
  const decision = effectiveGrant("rwxn", _policy({ env: ["LANG"] }), host);
  assert.equal(decision.missing, undefined);
  assert.deepEqual(decision.grant, {
    read: ["/ws"],
    write: ["/ws/out"],
    run: ["git"],
    net: ["example.com"],
    env: ["LANG"],
  });
});

Deno.test("effectiveGrant says which -letter to start corral with when the host lacks it", () => {
  const { host } = _host("r");
  const decision = effectiveGrant("rw", _policy(), host);
  assert.equal(decision.missing, "needs w (write): start corral with -w");
  assert.deepEqual(decision.grant.read, ["/ws"]);
  assert.deepEqual(decision.grant.write, []);
});

Deno.test("effectiveGrant missing-letter messages name the letter, its meaning and the flag", () => {
  const { host } = _host("");
  assert.equal(
    effectiveGrant("r", _policy(), host).missing,
    "needs r (read): start corral with -r",
  );
  assert.equal(effectiveGrant("x", _policy(), host).missing, "needs x (run): start corral with -x");
  assert.equal(effectiveGrant("n", _policy(), host).missing, "needs n (net): start corral with -n");
});

Deno.test("effectiveGrant names every missing letter in one refusal, in r, w, x, n order", () => {
  const { host } = _host("r");
  assert.equal(
    effectiveGrant("rwxn", _policy(), host).missing,
    "needs w (write), x (run), n (net): start corral with -w -x -n",
  );
  // Each cause with its own fix: a flag, an empty list (named in the file to edit), Deno.
  const mixed = effectiveGrant(
    "rwxn",
    _policy({ run: [], file: "/home/me/.config/corral/permissions.json" }),
    { letters: "rwx", denoGranted: (_k, v) => v !== "/ws" },
  ).missing;
  assert.equal(
    mixed,
    "needs n (net): start corral with -n; " +
      "needs x (run): /home/me/.config/corral/permissions.json grants no commands to " +
      'toolsets.files (add "run": [...] there); ' +
      'needs r (read): start corral with --allow-read (Deno does not grant read of "/ws")',
  );
});

Deno.test("effectiveGrant names permissions.json and the policy entry when the policy grants nothing", () => {
  const { host } = _host();
  assert.equal(
    effectiveGrant("rw", _policy({ write: [] }), host).missing,
    'needs w (write): permissions.json grants no write paths to toolsets.files (add "write": [...] there)',
  );
  assert.equal(
    effectiveGrant("x", _policy({ run: [], where: "plugins.default" }), host).missing,
    'needs x (run): permissions.json grants no commands to plugins.default (add "run": [...] there)',
  );
  assert.equal(
    effectiveGrant("n", _policy({ net: [] }), host).missing,
    'needs n (net): permissions.json grants no hosts to toolsets.files (add "net": [...] there)',
  );
  assert.equal(
    effectiveGrant("r", _policy({ read: [] }), host).missing,
    'needs r (read): permissions.json grants no read paths to toolsets.files (add "read": [...] there)',
  );
});

Deno.test("effectiveGrant names the Deno flag when Deno refuses a policy value", () => {
  const { host, calls } = _host("rwxn", ["/ws/out"]);
  const decision = effectiveGrant("rw", _policy(), host);
  assert.equal(
    decision.missing,
    'needs w (write): start corral with --allow-write (Deno does not grant write of "/ws/out")',
  );
  assert.deepEqual(decision.grant.write, []);
  assert.deepEqual(decision.grant.read, ["/ws"]);
  assert.deepEqual(calls, [["read", "/ws"], ["write", "/ws/out"]]);
});

Deno.test("effectiveGrant asks Deno about every policy value and withholds the kind if one is refused", () => {
  const { host, calls } = _host("rwxn", ["/secret"]);
  const decision = effectiveGrant("r", _policy({ read: ["/ws", "/secret", "/other"] }), host);
  assert.equal(
    decision.missing,
    'needs r (read): start corral with --allow-read (Deno does not grant read of "/secret")',
  );
  assert.deepEqual(decision.grant.read, []);
  assert.deepEqual(calls.slice(0, 2), [["read", "/ws"], ["read", "/secret"]]);
});

Deno.test("effectiveGrant names --allow-run and --allow-net for refused commands and hosts", () => {
  const { host } = _host("rwxn", ["git", "example.com"]);
  assert.match(
    effectiveGrant("x", _policy(), host).missing!,
    /start corral with --allow-run \(Deno does not grant run of "git"\)$/,
  );
  assert.match(
    effectiveGrant("n", _policy(), host).missing!,
    /start corral with --allow-net \(Deno does not grant net of "example.com"\)$/,
  );
});

Deno.test("effectiveGrant returns copies, not the policy's own lists", () => {
  const policy = _policy({ env: ["LANG"] });
  const { grant } = effectiveGrant("r", policy, _host().host);
  grant.read.push("/extra");
  grant.env!.push("PATH");
  assert.deepEqual(policy.read, ["/ws"]);
  assert.deepEqual(policy.env, ["LANG"]);
});

Deno.test("ceilingGrant keeps what both the host letters and Deno allow", () => {
  const { host } = _host("rx", ["/ws/b"]);
  assert.deepEqual(ceilingGrant(_policy({ read: ["/ws/a", "/ws/b"] }), host), {
    read: ["/ws/a"],
    write: [],
    run: ["git"],
    net: [],
    env: [],
  });
});

Deno.test("describeGrant lists the granted kinds, or 'none'", () => {
  assert.equal(
    describeGrant({ read: ["/a", "/b"], write: [], run: ["git"], net: [] }),
    "read=/a,/b run=git",
  );
  assert.equal(describeGrant({ read: [], write: [], run: [], net: [] }), "none");
});
