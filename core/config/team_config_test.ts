// Unit tests of core/config/team_config.ts through corral.json: the team keys
// validate with the key path and "did you mean".
import assert from "node:assert/strict";
import { parseConfig } from "./corral_config.ts";

function problems(json: unknown): string {
  try {
    parseConfig(JSON.stringify(json), "/etc/corral/corral.json");
  } catch (err) {
    return (err as Error).message;
  }
  return "";
}

Deno.test("identities and auth: typos get did-you-mean, bad values name their key path", () => {
  assert.match(
    problems({ identities: { alice: { limts: {} } } }),
    /identities\.alice: unknown key "limts" \(did you mean "limits"\?\)/,
  );
  assert.match(
    problems({ identities: { alice: { limits: { per_minut: 3 } } } }),
    /identities\.alice\.limits: unknown key "per_minut" \(did you mean "per_minute"\?\)/,
  );
  assert.match(
    problems({ auth: { jwk: {} } }),
    /auth: unknown key "jwk" \(did you mean "jwks"\?\)/,
  );
  assert.match(
    problems({ auth: { jwks: { file: "a", url: "https://x/k", audience: "c", issuer: "i" } } }),
    /auth\.jwks: give exactly one of file and url/,
  );
  assert.match(problems({ auth: { jwks: { file: "a", issuer: "i" } } }), /auth\.jwks\.audience/);
  assert.match(problems({ identities: { "a b": {} } }), /must start with a letter or digit/);
  assert.match(
    problems({ identities: { a: { limits: { concurrent: 0 } } } }),
    /identities\.a\.limits\.concurrent/,
  );
});

Deno.test("identities and auth: paths resolve against the config's folder; defaults", () => {
  const c = parseConfig(
    JSON.stringify({
      identities: { alice: { workspace: "ws/alice", tools: { allow: ["ReadFile"] } } },
      auth: {
        tokens_file: "tokens.json",
        jwks: { file: "jwks.json", audience: ["corral"], issuer: "https://idp" },
      },
    }),
    "/etc/corral/corral.json",
  );
  assert.equal(c.identities.alice.workspace, "/etc/corral/ws/alice");
  assert.deepEqual(c.identities.alice.tools, { allow: ["ReadFile"], deny: [] });
  assert.equal(c.auth.tokensFile, "/etc/corral/tokens.json");
  assert.deepEqual(c.auth.jwks, {
    file: "/etc/corral/jwks.json",
    url: undefined,
    audience: ["corral"],
    issuer: "https://idp",
    claim: "sub",
    clockSkewSeconds: 30,
  });
  const empty = parseConfig("{}", "/etc/corral/corral.json");
  assert.deepEqual(empty.identities, {});
  assert.equal(empty.auth.jwks, null);
  assert.match(empty.auth.tokensFile, /tokens\.json$/);
});

Deno.test("identities.<name>.share_sandboxes: a boolean, false by default, typos get did-you-mean", () => {
  assert.match(
    problems({ identities: { alice: { share_sandbox: true } } }),
    /identities\.alice: unknown key "share_sandbox" \(did you mean "share_sandboxes"\?\)/,
  );
  assert.match(
    problems({ identities: { alice: { share_sandboxes: "yes" } } }),
    /identities\.alice\.share_sandboxes/,
  );
  const json = (share?: boolean) =>
    JSON.stringify({ identities: { alice: { workspace: ".", share_sandboxes: share } } });
  const file = "/etc/corral/corral.json";
  assert.equal(parseConfig(json(true), file).identities.alice.shareSandboxes, true);
  assert.equal(parseConfig(json(), file).identities.alice.shareSandboxes, false);
});
