import assert from "node:assert/strict";
import { privateDenoCache } from "./emit_cache.ts";
import { runtimeFiles } from "../jail/mod.ts";
import { pathExists } from "../base/path_exists.ts";

Deno.test("sandboxes of one module set starting at once wait for one making of its Deno cache", async () => {
  const dir = await Deno.makeTempDir({ prefix: "corral_set_" });
  try {
    const spec = {
      dir,
      files: [new URL("./protocol.ts", import.meta.url).pathname],
      specifiers: [],
      shared: (await runtimeFiles()).denoDir,
    };
    const first = privateDenoCache(spec);
    const second = privateDenoCache(spec);
    assert.equal(first, second, "the second start waits for the first's making");
    const made = await first;
    assert.ok(pathExists(made.lock) && pathExists(made.denoDir));
    // Made: the next start takes it at once, without making it again.
    assert.deepEqual(await privateDenoCache(spec), made);
    assert.deepEqual(
      [...Deno.readDirSync(dir)].map((e) => e.name),
      ["cache"],
      "no second temporary folder was left",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
