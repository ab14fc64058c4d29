// Every JSON or JSONC block of the README and the docs parses with corral's
// own loader, and a block that is a corral.json or a permissions.json is
// valid as one: a user can copy any of them as it is.
import assert from "node:assert/strict";
import { z } from "zod";
import { parseConfig } from "../core/config/corral_config.ts";
import { parseJsonConfig, parsePolicy, readyJsonc } from "../core/config/policy.ts";
import { ROOT } from "../testing/mod.ts";

// Some texts below are JSONC or invalid JSON: load the JSONC parser up front.
await readyJsonc();

const DOCS = ["README.md", ...[...Deno.readDirSync(`${ROOT}docs`)].map((e) => `docs/${e.name}`)]
  .filter((f) => f.endsWith(".md"));

Deno.test("every json and jsonc block of the README and the docs parses, and config examples validate", () => {
  let blocks = 0;
  for (const doc of DOCS) {
    const text = Deno.readTextFileSync(`${ROOT}${doc}`);
    for (const m of text.matchAll(/```(json|jsonc)\n([\s\S]*?)```/g)) {
      blocks++;
      const where = `${doc} (block ${blocks}, line ${text.slice(0, m.index).split("\n").length})`;
      const value = parseJsonConfig(m[2], where, z.unknown()) as Record<string, unknown>;
      const keys = value && typeof value === "object" ? Object.keys(value) : [];
      const isConfig = /corral\.json/.test(m[2]) ||
        keys.some((k) => ["tool_dirs", "services", "default_plugin_dir", "audit"].includes(k));
      const isPolicy = keys.some((k) => ["toolsets", "defaults", "tools"].includes(k)) ||
        (keys.length === 1 && keys[0] === "plugins" && !Array.isArray(value.plugins));
      if (isConfig) parseConfig(m[2], `${where}: corral.json`);
      else if (isPolicy) parsePolicy(m[2], `${where}: permissions.json`, "/tmp");
    }
  }
  assert.ok(blocks >= 5, `json blocks found: ${blocks}`);
});

Deno.test("corral.json and permissions.json accept comments and trailing commas; errors name line and column", () => {
  const c = parseConfig('{\n  // my tools\n  "tool_dirs": ["t",],\n}\n', "/srv/corral.json");
  assert.deepEqual(c.toolDirs, ["/srv/t"]);
  const p = parsePolicy(
    '{ /* files */ "toolsets": { "files": { "read": ["."], } } }',
    "p.json",
    "/tmp",
  );
  assert.equal(p.toolset("files").read.length, 1);
  assert.throws(
    () => parseConfig('{\n  "tool_dirs": [\n    "a" "b"\n  ]\n}', "c.json"),
    /c\.json:3:9: not valid JSON: expected "," between two entries \(or the closing bracket\), found "b"$/,
  );
});
