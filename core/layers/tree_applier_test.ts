// The applier writes by replacement, never in place (issue 37, class 4): run as corral runs it
// (without the namespace here), it breaks a hard link into a "store" outside the root instead of
// writing through it, keeps only the permission bits, leaves no private folder, and replaces
// nothing that changed since the host looked (a conflict).
import assert from "node:assert/strict";
import { join } from "node:path";
import { TEMP_PREFIX } from "../guard/temp_names.ts";
import type { ApplierOp, ApplierResult, ApplierSig } from "./_applier_protocol.ts";

const ENTRY = new URL("./tree_applier.ts", import.meta.url).pathname;

/**
 * An applier standing in `root`, with a client that sends one batch and reads its answer;
 * `capless`: with no capability, as in its namespace (root's own does not read or write past
 * a folder's mode there).
 */
function _applier(root: string, capless = false) {
  const child = new Deno.Command(capless ? "/usr/bin/setpriv" : Deno.execPath(), {
    args: [
      ...(capless ? ["--bounding-set=-all", "--", Deno.execPath()] : []),
      "run",
      "--no-config",
      "--allow-read",
      "--allow-write",
      "--allow-run=/usr/bin/sync",
      ENTRY,
      "00c0ffee00c0ffee",
    ],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  const line = async () => {
    for (;;) {
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        const l = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        return JSON.parse(l);
      }
      const { value, done } = await lines.read();
      if (done) throw new Error("the applier ended");
      buf += value;
    }
  };
  let id = 0;
  return {
    ready: line(),
    async send(ops: ApplierOp[], durable = false): Promise<ApplierResult[]> {
      await writer.write(
        new TextEncoder().encode(JSON.stringify({ id: ++id, ops, durable }) + "\n"),
      );
      return (await line()).results;
    },
    async close() {
      await writer.close();
      lines.releaseLock();
      await child.stdout.cancel().catch(() => {});
      return await child.status;
    },
  };
}

function _sig(path: string): ApplierSig | null {
  try {
    const st = Deno.lstatSync(path);
    return {
      kind: st.isFile ? "file" : st.isDirectory ? "dir" : st.isSymlink ? "symlink" : "other",
      ino: st.ino ?? 0,
      size: st.size,
      mtimeMs: st.mtime?.getTime() ?? 0,
    };
  } catch {
    return null;
  }
}

/** Every path under `dir` whose name is one of corral's temporaries. */
function _temps(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.name.startsWith(TEMP_PREFIX)) out.push(p);
    if (e.isDirectory) out.push(..._temps(p));
  }
  return out;
}

async function _setUp() {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_applier_" }));
  const root = join(base, "ws"), store = join(base, "store"), upper = join(base, "upper");
  for (const d of [root, store, upper]) await Deno.mkdir(d);
  return {
    base,
    root,
    store,
    upper,
    [Symbol.asyncDispose]: () => Deno.remove(base, { recursive: true }),
  };
}

Deno.test("the applier replaces a hard-linked file: the store's file outside the root is unchanged", async () => {
  await using t = await _setUp();
  // A pnpm-like store: the tree's index.js is a hard link to the store's.
  await Deno.writeTextFile(join(t.store, "index.js"), "module.exports = 'store';\n");
  await Deno.mkdir(join(t.root, "node_modules"));
  await Deno.link(join(t.store, "index.js"), join(t.root, "node_modules", "index.js"));
  // Control: the link is real, a write in place through the tree's name reaches the store.
  assert.equal(Deno.statSync(join(t.store, "index.js")).nlink, 2);
  await Deno.writeTextFile(join(t.upper, "index.js"), "require('child_process').exec('evil');\n");
  const a = _applier(t.root);
  await a.ready;
  const expect = _sig(join(t.root, "node_modules", "index.js"));
  const [r] = await a.send([{
    op: "write",
    rel: "node_modules/index.js",
    from: join(t.upper, "index.js"),
    mode: 0o644,
    size: 40,
    expect,
  }], true);
  assert.equal(r.ok, true, r.error);
  assert.equal(
    await Deno.readTextFile(join(t.root, "node_modules", "index.js")),
    "require('child_process').exec('evil');\n",
  );
  assert.equal(await Deno.readTextFile(join(t.store, "index.js")), "module.exports = 'store';\n");
  assert.equal(Deno.statSync(join(t.store, "index.js")).nlink, 1, "the link was broken");
  assert.deepEqual(_temps(t.root), []);
  assert.equal((await a.close()).code, 0);
});

// The host's judge masks a mode (core/layers/_mode_rules.ts); the applier applies it exactly,
// the umask of its own process narrowing nothing (an empty new file is made with its mode).
Deno.test("the applier applies exactly the mode asked, makes empty new files, refuses what changed meanwhile", async () => {
  await using t = await _setUp();
  await Deno.writeTextFile(join(t.upper, "run.sh"), "#!/bin/sh\n");
  await Deno.writeTextFile(join(t.upper, "empty"), "");
  await Deno.writeTextFile(join(t.root, "notes.txt"), "the user's\n");
  await Deno.writeTextFile(join(t.upper, "notes.txt"), "the tool's\n");
  await Deno.symlink("notes.txt", join(t.upper, "link"));
  const seen = _sig(join(t.root, "notes.txt"))!;
  // The user edits notes.txt after the host looked: it must not be replaced.
  await Deno.writeTextFile(join(t.root, "notes.txt"), "the user's, edited later\n");
  const a = _applier(t.root);
  await a.ready;
  const res = await a.send([
    { op: "dir", rel: "sub", mode: 0o2775, expect: null },
    {
      op: "write",
      rel: "sub/run.sh",
      from: join(t.upper, "run.sh"),
      mode: 0o775,
      size: 10,
      expect: null,
    },
    {
      op: "write",
      rel: "sub/deep/empty",
      from: join(t.upper, "empty"),
      mode: 0o666,
      size: 0,
      expect: null,
    },
    {
      op: "write",
      rel: "notes.txt",
      from: join(t.upper, "notes.txt"),
      mode: 0o644,
      size: 11,
      expect: seen,
    },
    { op: "link", rel: "sub/link", from: join(t.upper, "link"), expect: null },
    {
      op: "write",
      rel: "../escape",
      from: join(t.upper, "empty"),
      mode: 0o644,
      size: 0,
      expect: null,
    },
  ]);
  assert.deepEqual(res.map((r) => r.ok), [true, true, true, false, true, false]);
  assert.equal(res[3].conflict, true);
  assert.match(res[5].error!, /not a path inside the root/);
  assert.equal(Deno.statSync(join(t.root, "sub")).mode! & 0o7777, 0o2775);
  assert.equal(Deno.statSync(join(t.root, "sub/run.sh")).mode! & 0o7777, 0o775);
  assert.equal(Deno.statSync(join(t.root, "sub/deep/empty")).mode! & 0o7777, 0o666);
  assert.equal(await Deno.readTextFile(join(t.root, "notes.txt")), "the user's, edited later\n");
  assert.equal(Deno.readLinkSync(join(t.root, "sub/link")), "notes.txt");
  assert.deepEqual(_temps(t.root), []);
  // An empty file made since (a user's) is not replaced either.
  await Deno.writeTextFile(join(t.root, "late"), "mine");
  const [late] = await a.send([
    { op: "write", rel: "late", from: join(t.upper, "empty"), mode: 0o644, size: 0, expect: null },
  ]);
  assert.equal(late.conflict, true);
  assert.equal(await Deno.readTextFile(join(t.root, "late")), "mine");
  assert.equal((await a.close()).code, 0);
});

Deno.test("the applier refuses a folder on the way swapped for a link out of the root", async () => {
  await using t = await _setUp();
  await Deno.writeTextFile(join(t.upper, "x"), "x");
  await Deno.symlink(t.store, join(t.root, "out"));
  const a = _applier(t.root);
  await a.ready;
  const [r] = await a.send([
    { op: "write", rel: "out/x", from: join(t.upper, "x"), mode: 0o644, size: 1, expect: null },
  ]);
  assert.equal(r.ok, false);
  assert.match(r.error!, /link elsewhere/);
  assert.deepEqual([...Deno.readDirSync(t.store)], []);
  assert.equal((await a.close()).code, 0);
});

// A folder whose new mode shuts its owner out (`mkdir d; echo > d/f; chmod 600 d`): without
// capabilities, as in its namespace, the applier could not go in to put what it holds, and its
// private folder stayed in the tree (found by tests/e2e/layers/judge_property_test.ts).
Deno.test("the applier gives a folder that shuts its owner out its mode last: its contents applied, no private folder left", async () => {
  await using t = await _setUp();
  await Deno.writeTextFile(join(t.upper, "made.txt"), "made\n");
  // Control: without capabilities, a folder of mode 0600 cannot be entered.
  await Deno.mkdir(join(t.base, "shut"), { mode: 0o600 });
  await Deno.chmod(join(t.base, "shut"), 0o600);
  const probe = await new Deno.Command("/usr/bin/setpriv", {
    args: ["--bounding-set=-all", "--", "/bin/sh", "-c", `cd '${t.base}/shut'`],
    stderr: "null",
  }).output();
  assert.equal(probe.success, false, "a capless process entered a folder of mode 0600");
  const a = _applier(t.root, true);
  await a.ready;
  const write = { op: "write", from: join(t.upper, "made.txt"), mode: 0o644, size: 5 } as const;
  const r = await a.send([
    { op: "dir", rel: "d", mode: 0o600, expect: null },
    { ...write, rel: "d/made.txt", expect: null },
    { op: "dir", rel: "d/e", mode: 0o500, expect: null },
  ]);
  assert.deepEqual(r.map((x) => x.ok), [true, true, true], JSON.stringify(r));
  // A later batch still writes there; the durable request that ends a settlement shuts them.
  const [later] = await a.send([{ ...write, rel: "d/e/later.txt", expect: null }], true);
  assert.equal(later.ok, true, later.error);
  assert.equal(Deno.statSync(join(t.root, "d")).mode! & 0o7777, 0o600);
  assert.equal(Deno.statSync(join(t.root, "d/e")).mode! & 0o7777, 0o500);
  assert.equal(await Deno.readTextFile(join(t.root, "d/made.txt")), "made\n");
  assert.equal(await Deno.readTextFile(join(t.root, "d/e/later.txt")), "made\n");
  assert.deepEqual(_temps(t.root), []);
  assert.equal((await a.close()).code, 0);
});
