// Run by testing/temp_dir_test.ts: the control. A folder made without the helpers stays after
// the run, so the count that finds nothing else left does see what is left.
import assert from "node:assert/strict";

Deno.test("a folder made by hand, not through testing/temp_dir.ts", async () => {
  const dir = await Deno.makeTempDir({ prefix: "corral_test_control_" });
  assert.ok(Deno.statSync(dir).isDirectory);
});
