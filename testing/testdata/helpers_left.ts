// Run by testing/temp_dir_test.ts as a test file of its own (`deno test --parallel`, TMPDIR a
// private folder): every helper that makes a temp folder, none of them disposed, one holding a
// read-only Deno cache; and a process that a test starts and a later test of the same file still
// finds writing in its folder. Nothing here removes a folder: the end of the file must.
import assert from "node:assert/strict";
import { join } from "node:path";
import { startRedis, tempDir } from "../mod.ts";
import { runCli, tempLayout } from "../../tests/_helpers.ts";
import { hostedLayout } from "../../tests/_hosted_helpers.ts";
import { tempWorkspace } from "../../tests/_mcp_helpers.ts";

const TMP = Deno.realPathSync(Deno.env.get("TMPDIR") ?? "/nonexistent");

Deno.test("each helper makes its folder in the temp folder, as corral_test_*", async () => {
  const { base, ws } = await tempLayout();
  const hosted = await hostedLayout();
  const mcp = await tempWorkspace();
  const redis = await startRedis();
  await redis.kill(); // its folder is left to the end of the file
  // runCli's own folder to run from (made once per file).
  assert.equal((await runCli(["--version"])).code, 0);
  const made = [base, hosted.base, mcp.dir, mcp.cache];
  for (const dir of made) {
    assert.ok(dir.startsWith(`${TMP}/corral_test_`), dir);
    assert.ok(Deno.statSync(dir).isDirectory, dir);
  }
  // A sandbox's Deno cache, read-only as corral leaves it.
  const cache = join(ws, ".cache", "deno", "npm", "registry.npmjs.org", "zod");
  Deno.mkdirSync(cache, { recursive: true });
  Deno.writeTextFileSync(join(cache, "index.js"), "export {};\n");
  Deno.chmodSync(join(cache, "index.js"), 0o444);
  for (let d = cache; d !== ws; d = join(d, "..")) Deno.chmodSync(d, 0o555);
  const names = [...Deno.readDirSync(TMP)].map((e) => e.name);
  assert.ok(names.some((n) => n.startsWith("corral_test_cwd_")), names.join(" "));
  assert.ok(names.some((n) => n.startsWith("corral_test_redis_")), names.join(" "));
});

let writer: Deno.ChildProcess | undefined;
let beat = "";

Deno.test({
  name: "a test starts a process that keeps writing in its folder after the test ends",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await tempDir();
    beat = join(dir, "beat");
    writer = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `for (let i = 0; ; i++) { Deno.writeTextFileSync(${
          JSON.stringify(beat)
        }, String(i)); await new Promise((r) => setTimeout(r, 20)); }`,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    while (!_count()) await new Promise((r) => setTimeout(r, 20));
  },
});

Deno.test("the next test finds the folder there and the process still writing in it", async () => {
  assert.ok(writer, "the previous test started the writer");
  const seen = _count();
  while (_count() <= seen) await new Promise((r) => setTimeout(r, 20));
  writer.kill("SIGKILL");
  await writer.status;
});

function _count(): number {
  try {
    return Number(Deno.readTextFileSync(beat));
  } catch {
    return 0; // not yet
  }
}
