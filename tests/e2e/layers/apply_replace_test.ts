// Apply by replacement, never in place (issue 37, class 4). The workspace's node_modules holds
// hard links into a "store" outside it, as pnpm leaves them; a tool rewrites the linked file: a
// jailed bash through `corral call`, the files tools jailed and with the jail off. Afterwards the
// user reads the store outside any sandbox: unchanged, its link broken; the workspace file holds
// the tool's version. Controls: the links are real (a write in place through the workspace's name
// reaches the store), and an unlinked file is rewritten as usual.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { TEMP_PREFIX } from "../../../core/guard/temp_names.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const STORE_TEXT = "module.exports = 'from the store';\n";

/** A workspace with `node_modules/<name>/index.js` hard-linked to `<outside>/store/<name>.js`. */
async function _linkedTree(names: string[]) {
  const { base, ws, outside } = await tempLayout();
  await Deno.mkdir(join(outside, "store"));
  for (const n of names) {
    await Deno.writeTextFile(join(outside, "store", `${n}.js`), STORE_TEXT);
    await Deno.mkdir(join(ws, "node_modules", n), { recursive: true });
    await Deno.link(join(outside, "store", `${n}.js`), join(ws, "node_modules", n, "index.js"));
  }
  await Deno.writeTextFile(join(ws, "plain.txt"), "plain\n");
  return { base, ws, outside, store: (n: string) => join(outside, "store", `${n}.js`) };
}

/** Every path under `dir` named as one of corral's temporaries. */
function _temps(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    if (e.name.startsWith(TEMP_PREFIX)) out.push(join(dir, e.name));
    if (e.isDirectory) out.push(..._temps(join(dir, e.name)));
  }
  return out;
}

async function _registry(ws: string, outside: string, files: Record<string, unknown>) {
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { system: { run: ["bash"], read: ["."], write: ["."] }, files },
      tools: { CreateFile: { confirm: "always" } },
    }),
    join(outside, "p.json"),
    ws,
  );
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
}

Deno.test("control: the workspace's links share the store's file, so a write in place reaches it", async () => {
  const t = await _linkedTree(["ctl"]);
  assert.equal(Deno.statSync(t.store("ctl")).nlink, 2);
  // What an in-place writer (the old applier, Deno.writeFile) does to the store:
  await Deno.writeTextFile(join(t.ws, "node_modules/ctl/index.js"), "written in place\n");
  assert.equal(await Deno.readTextFile(t.store("ctl")), "written in place\n");
  await Deno.remove(t.base, { recursive: true });
});

Deno.test("a jailed bash through `corral call` rewrites a hard-linked file: the store is unchanged", async () => {
  const t = await _linkedTree(["left", "pad"]);
  const policy = join(t.outside, "p.json");
  await Deno.writeTextFile(
    policy,
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
  );
  const code = "printf 'evil()\\n' > node_modules/left/index.js && " +
    "printf 'more\\n' >> node_modules/pad/index.js && printf 'changed\\n' > plain.txt";
  const r = await runCli(
    [
      "call",
      "RunBashCode",
      "-r",
      "-w",
      "-x",
      "--permissions",
      policy,
      "--args",
      JSON.stringify({ code }),
    ],
    { cwd: t.ws, env: { CORRAL_CACHE_DIR: join(t.base, "cache") } },
  );
  assert.equal(r.code, 0, r.stdout + r.stderr);
  // The tool's versions reached the workspace...
  assert.equal(await Deno.readTextFile(join(t.ws, "node_modules/left/index.js")), "evil()\n");
  assert.equal(
    await Deno.readTextFile(join(t.ws, "node_modules/pad/index.js")),
    STORE_TEXT + "more\n",
  );
  assert.equal(await Deno.readTextFile(join(t.ws, "plain.txt")), "changed\n");
  // ...and the user, reading the store outside any sandbox, finds it as it was.
  for (const n of ["left", "pad"]) {
    assert.equal(await Deno.readTextFile(t.store(n)), STORE_TEXT, `store/${n}.js`);
    assert.equal(Deno.statSync(t.store(n)).nlink, 1, `store/${n}.js is no longer linked`);
  }
  assert.deepEqual(_temps(t.ws), []);
  await new Deno.Command("rm", { args: ["-rf", t.base] }).output();
});

for (
  const [name, files] of [
    ["jailed", { read: ["."], write: ["."] }],
    ["with the jail off", { read: ["."], write: ["."], jail: "off" }],
  ] as const
) {
  Deno.test(`the files tools ${name} rewrite hard-linked files: the store is unchanged`, async () => {
    const t = await _linkedTree(["edit", "create"]);
    const registry = await _registry(t.ws, t.outside, files);
    try {
      const edit = await registry.call("ReplaceTextInFile", {
        filepath: "node_modules/edit/index.js",
        search: "from the store",
        replace: "from the tool",
      });
      assert.equal(edit.success, true, JSON.stringify(edit));
      const create = await registry.call("CreateFile", {
        filepath: "node_modules/create/index.js",
        content: "overwritten\n",
        overwrite: true,
      });
      assert.equal(create.success, true, JSON.stringify(create));
      // Control: a file with one link is rewritten as usual.
      const plain = await registry.call("ReplaceTextInFile", {
        filepath: "plain.txt",
        search: "plain",
        replace: "edited",
      });
      assert.equal(plain.success, true, JSON.stringify(plain));
    } finally {
      await registry.close();
    }
    assert.equal(
      await Deno.readTextFile(join(t.ws, "node_modules/edit/index.js")),
      "module.exports = 'from the tool';\n",
    );
    assert.equal(
      await Deno.readTextFile(join(t.ws, "node_modules/create/index.js")),
      "overwritten\n",
    );
    assert.equal(await Deno.readTextFile(join(t.ws, "plain.txt")), "edited\n");
    for (const n of ["edit", "create"]) {
      assert.equal(await Deno.readTextFile(t.store(n)), STORE_TEXT, `store/${n}.js`);
      assert.equal(Deno.statSync(t.store(n)).nlink, 1);
    }
    assert.deepEqual(_temps(t.ws), []);
    await new Deno.Command("rm", { args: ["-rf", t.base] }).output();
  });
}
