import assert from "node:assert/strict";
import { join } from "node:path";
import { approvalsDir, readApprovedNow, type ToolDefinition, writeApproved } from "./approvals.ts";

const _tool = (description: string): ToolDefinition => ({
  name: "read",
  description,
  inputSchema: { type: "object" },
});

Deno.test("readApprovedNow sees every change of the record: fresh, settled, same size, removed", async () => {
  const dir = await Deno.makeTempDir();
  const saved = Deno.env.get("CORRAL_CONFIG_DIR");
  Deno.env.set("CORRAL_CONFIG_DIR", dir);
  try {
    const file = join(approvalsDir(), "srv.approved.json");
    const old = new Date(Date.now() - 60_000);
    for (let i = 0; i < 20; i++) {
      // Same size each time: only the text tells them apart.
      writeApproved("srv", [_tool(`first ${i % 10}`)]);
      assert.equal(readApprovedNow("srv")?.[0].description, `first ${i % 10}`);
      writeApproved("srv", [_tool(`other ${i % 10}`)]);
      assert.equal(readApprovedNow("srv")?.[0].description, `other ${i % 10}`);
      // A settled record is remembered; a write after it has a new mtime and is read.
      Deno.utimeSync(file, old, old);
      assert.equal(readApprovedNow("srv")?.[0].description, `other ${i % 10}`);
      assert.equal(readApprovedNow("srv")?.[0].description, `other ${i % 10}`);
      writeApproved("srv", [_tool(`third ${i % 10}`)]);
      assert.equal(readApprovedNow("srv")?.[0].description, `third ${i % 10}`);
    }
    Deno.removeSync(file);
    assert.equal(readApprovedNow("srv"), undefined);
  } finally {
    if (saved === undefined) Deno.env.delete("CORRAL_CONFIG_DIR");
    else Deno.env.set("CORRAL_CONFIG_DIR", saved);
    await Deno.remove(dir, { recursive: true });
  }
});
