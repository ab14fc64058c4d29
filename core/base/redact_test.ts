import assert from "node:assert/strict";
import { hideHostPaths, redact, REDACTED, scrubDeep, scrubText, secretValues } from "./redact.ts";

Deno.test("redact hides values under token, secret, password, key, credential and auth keys", () => {
  const out = redact({
    api_token: "a",
    client_secret: "b",
    password: "c",
    apiKey: "d",
    credentials: { user: "u", pass: "e" },
    Authorization: "Bearer f",
    name: "visible",
    nested: [{ private_key: "g", count: 3 }],
  });
  assert.deepEqual(out, {
    api_token: REDACTED,
    client_secret: REDACTED,
    password: REDACTED,
    apiKey: REDACTED,
    credentials: REDACTED,
    Authorization: REDACTED,
    name: "visible",
    nested: [{ private_key: REDACTED, count: 3 }],
  });
});

Deno.test("secretValues collects every string under a secret key, nested ones too", () => {
  const values = secretValues({
    auth: { user: "alice1", pass: "hunter22" },
    api_key: 12345,
    name: "x",
  });
  assert.deepEqual(values.sort(), ["12345", "alice1", "hunter22"]);
});

Deno.test("scrubText and scrubDeep remove known secret values wherever they are", () => {
  assert.equal(scrubText("a s3cr3t b s3cr3t", ["s3cr3t"]), `a ${REDACTED} b ${REDACTED}`);
  assert.equal(scrubText("abc", ["ab"]), "abc", "too short to scrub");
  assert.deepEqual(scrubDeep({ out: ["x s3cr3t"], n: 1 }, ["s3cr3t"]), {
    out: [`x ${REDACTED}`],
    n: 1,
  });
});

Deno.test("hideHostPaths keeps workspace paths relative and cuts other host paths to a name", () => {
  const ws = "/home/me/project";
  assert.equal(
    hideHostPaths(
      'sandbox exited unexpectedly (code 1): error: Module not found "file:///home/me/.corral/plugins/x.ts".',
      ws,
    ),
    'sandbox exited unexpectedly (code 1): error: Module not found "…/x.ts".',
  );
  assert.equal(
    hideHostPaths("Requires read access to /etc/shadow and /home/me/project/src/a.ts:3:4", ws),
    "Requires read access to …/shadow and src/a.ts:3:4",
  );
  assert.equal(
    hideHostPaths("see https://example.com/a/b, ./rel/x, 1/2 and /", ws),
    "see https://example.com/a/b, ./rel/x, 1/2 and /",
  );
});
