// One session's settlement never holds up another's calls (issue 37, class 9): while a call of one
// principal that made 30,000 files is being settled (a batch at a time, the host awaiting between
// batches), another principal's calls are answered, one after the other, before that
// settlement ends. Control: the big call's files all reach the tree.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { tempLayout } from "../../_helpers.ts";

const FILES = 30_000;

Deno.test("another session's calls are answered while a call of 30,000 files is settled", async () => {
  const { base, ws, outside } = await tempLayout();
  await Deno.writeTextFile(join(ws, "notes.txt"), "notes\n");
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        system: { run: ["bash"], read: ["."], write: ["."], timeout_ms: 600_000 },
      },
    }),
    join(outside, "permissions.json"),
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  try {
    // Bob's sandbox is started first: his calls below are warm ones.
    const warm = await registry.call("RunBashCode", { code: "cat notes.txt" }, {
      principal: "bob",
    });
    assert.equal(warm.success, true, JSON.stringify(warm));
    let bigDone = false;
    const big = registry.call("RunBashCode", {
      code: `mkdir many && cd many && seq 1 ${FILES} | sed 's/^/f/' | xargs touch`,
      timeout: 600,
    }, { principal: "alice" }).finally(() => bigDone = true);
    // The settlement is under way once its first files are in the tree.
    const count = () => {
      try {
        return [...Deno.readDirSync(join(ws, "many"))].length;
      } catch {
        return 0;
      }
    };
    for (let i = 0; count() === 0; i++) {
      assert.ok(!bigDone, "alice's call ended before its files were seen being applied");
      assert.ok(i < 600_000, "alice's files never reached the tree");
      await new Promise((r) => setTimeout(r, 1));
    }
    for (let i = 0; i < 3; i++) {
      const r = await registry.call("RunBashCode", { code: "cat notes.txt" }, { principal: "bob" });
      assert.equal(r.success, true, JSON.stringify(r));
      assert.match(String((r as { stdout?: string }).stdout), /notes/);
    }
    assert.equal(bigDone, false, "bob's calls waited for alice's settlement");
    const r = await big;
    assert.equal(r.success, true, JSON.stringify(r).slice(0, 500));
    assert.equal(count(), FILES);
  } finally {
    await registry.close();
    await new Deno.Command("rm", { args: ["-rf", base] }).output();
  }
});
