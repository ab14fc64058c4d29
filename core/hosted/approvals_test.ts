import assert from "node:assert/strict";
import { join } from "node:path";
import { readApprovedNow, type ToolDefinition, writeApproved } from "./approvals.ts";

const _tool = (description: string): ToolDefinition => ({
  name: "read",
  description,
  inputSchema: { type: "object" },
});

Deno.test("readApprovedNow sees every change of the record: fresh, settled, same size, removed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "srv.approved.json");
    const old = new Date(Date.now() - 60_000);
    for (let i = 0; i < 20; i++) {
      // Same size each time: only the text tells them apart.
      writeApproved("srv", [_tool(`first ${i % 10}`)], dir);
      assert.equal(readApprovedNow("srv", dir)?.[0].description, `first ${i % 10}`);
      writeApproved("srv", [_tool(`other ${i % 10}`)], dir);
      assert.equal(readApprovedNow("srv", dir)?.[0].description, `other ${i % 10}`);
      // A settled record is remembered; a write after it has a new mtime and is read.
      Deno.utimeSync(file, old, old);
      assert.equal(readApprovedNow("srv", dir)?.[0].description, `other ${i % 10}`);
      assert.equal(readApprovedNow("srv", dir)?.[0].description, `other ${i % 10}`);
      writeApproved("srv", [_tool(`third ${i % 10}`)], dir);
      assert.equal(readApprovedNow("srv", dir)?.[0].description, `third ${i % 10}`);
    }
    Deno.removeSync(file);
    assert.equal(readApprovedNow("srv", dir), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
