// What each call changed in the user's tree (issue 27): the audit line lists what
// the call created, changed and removed (a count, the first paths, the bytes),
// what processes it left running wrote later has a line of its own, and two
// concurrent writers of one file end in a conflict, never a lost update.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { tempLayout, waitInLayer } from "../../_helpers.ts";
import { layerBases } from "../../../core/config/install_dir.ts";

async function _setup() {
  const { ws, outside } = await tempLayout();
  await Deno.writeTextFile(`${ws}/keep.txt`, "keep\n");
  await Deno.writeTextFile(`${ws}/edit.txt`, "edit\n");
  await Deno.writeTextFile(`${ws}/drop.txt`, "drop\n");
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        system: { run: ["bash"], read: ["."], write: ["."] },
        files: { read: ["."], write: ["."] },
      },
      tools: { CreateFile: { confirm: "never" } },
    }),
    `${outside}/p.json`,
    ws,
  );
  const audit = `${outside}/audit.jsonl`;
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    auditPath: audit,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  const lines = async () =>
    (await Deno.readTextFile(audit)).trim().split("\n").map((l) => JSON.parse(l));
  return { ws, outside, registry, lines };
}

Deno.test("the audit line of a call lists what it created, changed and removed, and the bytes", async () => {
  const { ws, registry, lines } = await _setup();
  try {
    const r = await registry.call("RunBashCode", {
      code: "mkdir -p out && printf 'abc' > out/one && printf 'defgh' > two && " +
        "echo more >> edit.txt && rm drop.txt",
    });
    assert.equal(r.success, true, JSON.stringify(r));
    const read = await registry.call("RunBashCode", { code: "cat keep.txt" });
    assert.equal(read.success, true);
  } finally {
    await registry.close();
  }
  const [first, second] = (await lines()).filter((l) => l.tool === "RunBashCode");
  assert.deepEqual(
    { ...first.changes, paths: [...first.changes.paths].sort() },
    {
      created: 3,
      changed: 1,
      removed: 1,
      bytes: 3 + 5 + "edit\nmore\n".length,
      paths: ["+out", "+out/one", "+two", "-drop.txt", "~edit.txt"],
      refused: [],
      conflicts: [],
    },
  );
  assert.equal(second.changes, undefined, "a call that changed nothing lists nothing");
  assert.equal(await Deno.readTextFile(`${ws}/edit.txt`), "edit\nmore\n");
  assert.equal(await Deno.stat(`${ws}/drop.txt`).then(() => true, () => false), false);
});

Deno.test("what a process left running writes later is applied and audited apart", async () => {
  const { ws, registry, lines } = await _setup();
  try {
    const r = await registry.call("RunBashCode", {
      code: "(sleep 1; echo late > late.txt) >/dev/null 2>&1 </dev/null & echo started",
    });
    assert.equal(r.success, true, JSON.stringify(r));
    for (let i = 0; i < 100; i++) {
      if (await Deno.stat(`${ws}/late.txt`).then(() => true, () => false)) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(await Deno.readTextFile(`${ws}/late.txt`), "late\n");
  } finally {
    await registry.close();
  }
  const apart = (await lines()).find((l) => l.kind === "changes");
  assert.ok(apart, "no line for the background write");
  assert.equal(apart.toolset, "system");
  assert.deepEqual(apart.changes.paths, ["+late.txt"]);
});

Deno.test("two sessions writing one file at once: a conflict error, both versions kept, no lost update", async () => {
  const { ws, registry, lines } = await _setup();
  try {
    // Session A edits first (its layer shows it) and waits; session B edits meanwhile and is
    // applied; then A goes on (it waits for a file only the test makes: a listing sees it).
    const slow = registry.call("RunBashCode", {
      code: "echo A >> edit.txt; until ls | grep -qx go; do sleep 0.05; done",
    }, { principal: "session-a" });
    await waitInLayer(layerBases()[0], "edit.txt", "edit\nA");
    const quick = await registry.call("ReplaceTextInFile", {
      filepath: "edit.txt",
      search: "edit",
      replace: "edit by B",
    }, { principal: "session-b" });
    assert.equal(quick.success, true, JSON.stringify(quick));
    await Deno.writeTextFile(`${ws}/go`, "");
    const late = await slow;
    assert.equal(late.success, false, JSON.stringify(late));
    assert.match(String(late.error), /edit\.txt \(this call's version/);
    // The tree holds B's version; A's is kept, named in the audit line.
    assert.equal(await Deno.readTextFile(`${ws}/edit.txt`), "edit by B\n");
    const line = (await lines()).find((l) => l.changes?.conflicts?.length);
    assert.equal(line.session, "session-a");
    assert.equal(line.outcome, "error");
    assert.equal(await Deno.readTextFile(line.changes.conflicts[0].why), "edit\nA\n");
    // A's view is refreshed in place (the same sandbox) and sees B's version.
    const again = await registry.call("RunBashCode", { code: "cat edit.txt" }, {
      principal: "session-a",
    });
    assert.equal(again.stdout, "edit by B\n");
  } finally {
    await registry.close();
  }
});

Deno.test("a folder removed and made again, renamed, or replaced by a file reaches the tree as it was left", async () => {
  const { ws, registry } = await _setup();
  for (const d of ["again", "moved", "swapped"]) {
    await Deno.mkdir(`${ws}/${d}/inner`, { recursive: true });
    await Deno.writeTextFile(`${ws}/${d}/old.txt`, "old\n");
    await Deno.writeTextFile(`${ws}/${d}/inner/deep.txt`, "deep\n");
  }
  try {
    const r = await registry.call("RunBashCode", {
      code: "rm -rf again && mkdir again && echo new > again/new.txt && " +
        "mv moved renamed && rm -rf swapped && echo file > swapped && " +
        "ln -s renamed/old.txt link && chmod +x keep.txt",
    });
    assert.equal(r.success, true, JSON.stringify(r));
  } finally {
    await registry.close();
  }
  const tree = async (d: string): Promise<string[]> => {
    const out: string[] = [];
    for await (const e of Deno.readDir(d)) {
      out.push(e.name);
      if (e.isDirectory) out.push(...(await tree(`${d}/${e.name}`)).map((n) => `${e.name}/${n}`));
    }
    return out.sort();
  };
  assert.deepEqual(await tree(`${ws}/again`), ["new.txt"]);
  assert.deepEqual(await tree(`${ws}/renamed`), ["inner", "inner/deep.txt", "old.txt"]);
  assert.equal(await Deno.stat(`${ws}/moved`).then(() => true, () => false), false);
  assert.equal(await Deno.readTextFile(`${ws}/swapped`), "file\n");
  assert.equal(await Deno.readLink(`${ws}/link`), "renamed/old.txt");
  assert.equal(await Deno.readTextFile(`${ws}/link`), "old\n");
  assert.equal((await Deno.stat(`${ws}/keep.txt`)).mode! & 0o111, 0o111);
});
