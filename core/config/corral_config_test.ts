// Unit tests of core/config/corral_config.ts: parsing and loading corral.json.
import { readyJsonc } from "./policy.ts";
import assert from "node:assert/strict";
import { ConfigError } from "../tool/errors.ts";
import { loadConfig, parseConfig } from "./corral_config.ts";
import { expandHome } from "./env_var.ts";

// Some texts below are JSONC or invalid JSON: load the JSONC parser up front.
await readyJsonc();

const HOME = Deno.env.get("HOME") ?? "/";

async function tempDir(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_config_unit_" }));
}

Deno.test("parseConfig: errors name the file and the key path of every problem", () => {
  let text = "";
  try {
    parseConfig('{"tool_dirs": ["a", 3], "plugin": [], "services": []}', "/x/corral.json");
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    text = err.message;
  }
  assert.match(text, /\/x\/corral\.json: tool_dirs\[1\]: Expected string, received number/);
  assert.match(text, /\/x\/corral\.json: \(top level\): unknown key "plugin"/);
  assert.match(text, /\/x\/corral\.json: services: Expected object, received array/);
  assert.throws(() => parseConfig("{oops", "c.json"), /c\.json:1:\d+: not valid JSON/);
});

Deno.test("parseConfig: tool_dirs resolve against the config's folder and ~ is the home directory", () => {
  const c = parseConfig(
    JSON.stringify({ tool_dirs: ["tools", "~/mine", "/abs"], services: { s: { k: 1 } } }),
    "/etc/corral/corral.json",
  );
  assert.deepEqual(c.toolDirs, ["/etc/corral/tools", `${HOME}/mine`, "/abs"]);
  assert.deepEqual(c.services, { s: { k: 1 } });
  assert.equal(c.defaultPluginDir, true);
  assert.equal(expandHome("~"), HOME);
  assert.equal(expandHome("a/~"), "a/~");
});

Deno.test("loadConfig: an explicit --config must exist; a missing corral.json is an empty config", async () => {
  const dir = await tempDir();
  try {
    await assert.rejects(
      loadConfig({ file: `${dir}/nope.json` }),
      /Cannot read config file ".*nope\.json"/,
    );
    const own = `${dir}/config`;
    const empty = await loadConfig({ workspace: dir, configDir: own });
    assert.equal(empty.file, null);
    assert.deepEqual(empty.toolDirs, []);
    // A corral.json in the workspace is not taken: it is named as ignored.
    await Deno.writeTextFile(`${dir}/corral.json`, '{"plugins": ["npm:x@1"]}');
    const ignored = await loadConfig({ workspace: dir, configDir: own });
    assert.deepEqual(ignored.plugins, []);
    assert.equal(ignored.ignored, `${dir}/corral.json`);
    // The one in corral's config directory is.
    await Deno.mkdir(own);
    await Deno.writeTextFile(`${own}/corral.json`, '{"plugins": ["npm:y@1"]}');
    assert.deepEqual((await loadConfig({ workspace: dir, configDir: own })).plugins, ["npm:y@1"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
