// Found by the judge's property test (tests/e2e/layers/judge_property_test.ts): a file a call changed
// (the overlay copied it up) and the user removed meanwhile stayed removed only by luck of
// timing; it was brought back with the call's version. Now it is a conflict: the user's
// removal stays, the call's version is kept aside. Control: with no removal, the change lands.
import assert from "node:assert/strict";
import { layerBases } from "../../../core/config/install_dir.ts";
import { waitInLayer } from "../../_helpers.ts";
import { bash, bashRegistry, exists, judgeLayout } from "../../_judge_helpers.ts";

Deno.test("a file the user removes while a call changes it stays removed, as a conflict", async () => {
  const { ws, outside, audit } = await judgeLayout(false);
  await Deno.writeTextFile(`${ws}/notes.txt`, "v1\n");
  await Deno.writeTextFile(`${ws}/other.txt`, "v1\n");
  const registry = await bashRegistry(ws, outside, audit);
  try {
    const slow = bash(
      registry,
      "echo tool >> notes.txt && echo started > started.txt && " +
        "until ls | grep -qx go; do sleep 0.05; done",
    );
    await waitInLayer(layerBases()[0], "started.txt", "started");
    await Deno.remove(`${ws}/notes.txt`); // the user, meanwhile
    await Deno.writeTextFile(`${ws}/go`, "");
    const res = await slow;
    assert.equal(res.success, false, JSON.stringify(res));
    assert.match(String(res.error), /conflicted with a change made meanwhile.*notes\.txt/);
    // Control: the same change with no removal meanwhile lands.
    const control = await bash(registry, "echo tool >> other.txt");
    assert.equal(control.success, true, JSON.stringify(control));
  } finally {
    await registry.close();
  }
  assert.equal(await exists(`${ws}/notes.txt`), false, "the user's removal was undone");
  assert.equal(await Deno.readTextFile(`${ws}/other.txt`), "v1\ntool\n");
});
