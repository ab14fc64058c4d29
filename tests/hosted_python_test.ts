// A Python MCP server hosted as a "command" server: no Deno flags bound it,
// only corral's namespace (its grant), limits and scrubbed environment.
import assert from "node:assert/strict";
import { join } from "node:path";
import { approve, HOSTED_FIXTURES, hostedLayout, hostedRegistry } from "./_hosted_helpers.ts";

Deno.test("a python3 server reads inside its grant only and sees only its own environment", async () => {
  await using l = await hostedLayout();
  await Deno.writeTextFile(join(l.ws, "in.txt"), "inside");
  Deno.env.set("HOST_ONLY_VARIABLE", "host-only-value");
  const servers = {
    py: { command: ["python3", join(HOSTED_FIXTURES, "py_server.py")], env: { MODE: "test" } },
  };
  const first = await hostedRegistry(l, servers, { py: { read: ["."] } });
  assert.deepEqual((await approve(first.registry, "py")).sort(), ["py_env", "py_read"]);
  await first.registry.close();
  const { registry } = await hostedRegistry(l, servers, { py: { read: ["."] } });
  try {
    const ok = await registry.call("py_read", { path: join(l.ws, "in.txt") });
    assert.equal(ok.success, true, JSON.stringify(ok));
    assert.match(JSON.stringify(ok.result), /inside/);
    for (const path of [join(l.outside, "canary.txt"), "/etc/shadow", "/proc/1/environ"]) {
      const r = await registry.call("py_read", { path });
      assert.doesNotMatch(JSON.stringify(r), /CANARY-SECRET|host-only-value/);
      if (path !== "/proc/1/environ") assert.equal(r.success, false, path);
    }
    const env = JSON.stringify(await registry.call("py_env", {}));
    assert.match(env, /MODE/);
    assert.doesNotMatch(env, /HOST_ONLY_VARIABLE|host-only-value/);
  } finally {
    await registry.close();
  }
});
