import assert from "node:assert/strict";
import { parsePolicy } from "./policy.ts";

const _parse = (raw: unknown) => parsePolicy(JSON.stringify(raw), "/cfg/permissions.json", "/ws");

Deno.test("servers.<name>.sys: Deno's sys names for a hosted npm server, none by default", () => {
  const p = _parse({ servers: { git: { run: ["git"], sys: ["hostname", "cpus"] }, fs: {} } });
  assert.deepEqual(p.server("git").sys, ["hostname", "cpus"]);
  assert.equal(p.server("fs").sys, undefined);
  assert.equal(p.server("absent").sys, undefined);
});

Deno.test("sys is refused for toolsets, plugins and defaults, and for names not offered", () => {
  for (
    const raw of [
      { toolsets: { system: { sys: ["hostname"] } } },
      { plugins: { default: { sys: ["hostname"] } } },
      { defaults: { sys: ["hostname"] } },
    ]
  ) {
    assert.throws(() => _parse(raw), /sys/, JSON.stringify(raw));
  }
  assert.throws(
    () => _parse({ servers: { git: { sys: ["setPriority"] } } }),
    /servers\.git\.sys/,
  );
  assert.throws(() => _parse({ servers: { git: { sys: ["all"] } } }), /servers\.git\.sys/);
});
