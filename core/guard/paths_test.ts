import assert from "node:assert/strict";
import { join } from "node:path";
import { displayPath, fsError, isInside, resolveInside } from "./paths.ts";

async function _setup(): Promise<{ ws: string; outside: string; cleanup: () => Promise<void> }> {
  const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-ws-" }));
  const outside = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-out-" }));
  await Deno.writeTextFile(join(ws, "a.txt"), "inside");
  await Deno.writeTextFile(join(outside, "secret.txt"), "secret");
  return {
    ws,
    outside,
    cleanup: async () => {
      await Deno.remove(ws, { recursive: true });
      await Deno.remove(outside, { recursive: true });
    },
  };
}

async function _denied(p: Promise<unknown>, given: string, hidden: string): Promise<void> {
  await assert.rejects(p, (err: Error) => {
    assert.equal(err.name, "PermissionDeniedError");
    assert.ok(err.message.includes(JSON.stringify(given)), err.message);
    assert.ok(!err.message.includes(hidden), `message leaks ${hidden}: ${err.message}`);
    return true;
  });
}

Deno.test("resolveInside returns the real path of a file inside the workspace", async () => {
  const { ws, cleanup } = await _setup();
  try {
    assert.equal(await resolveInside("a.txt", [ws], ws), join(ws, "a.txt"));
    assert.equal(await resolveInside("./sub/../a.txt", [ws], ws), join(ws, "a.txt"));
  } finally {
    await cleanup();
  }
});

Deno.test("resolveInside refuses ../ and absolute paths outside the roots, naming the given path", async () => {
  const { ws, outside, cleanup } = await _setup();
  try {
    const rel = join("..", outside.split("/").at(-1)!, "secret.txt");
    await _denied(resolveInside(rel, [ws], ws), rel, outside);
    await _denied(
      resolveInside(join(outside, "secret.txt"), [ws], ws),
      join(outside, "secret.txt"),
      "~~",
    );
    await _denied(resolveInside("../nope.txt", [ws], ws, { create: true }), "../nope.txt", outside);
  } finally {
    await cleanup();
  }
});

Deno.test("resolveInside refuses a symlink inside the workspace that points outside", async () => {
  const { ws, outside, cleanup } = await _setup();
  try {
    await Deno.symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    await Deno.symlink(outside, join(ws, "linkdir"));
    await _denied(resolveInside("link.txt", [ws], ws), "link.txt", outside);
    await _denied(
      resolveInside("linkdir/new.txt", [ws], ws, { create: true }),
      "linkdir/new.txt",
      outside,
    );
    await _denied(resolveInside("linkdir/secret.txt", [ws], ws), "linkdir/secret.txt", outside);
  } finally {
    await cleanup();
  }
});

Deno.test("resolveInside accepts a symlink that stays inside and returns its target", async () => {
  const { ws, cleanup } = await _setup();
  try {
    await Deno.symlink(join(ws, "a.txt"), join(ws, "alias.txt"));
    assert.equal(await resolveInside("alias.txt", [ws], ws), join(ws, "a.txt"));
  } finally {
    await cleanup();
  }
});

Deno.test("resolveInside says 'not found' for a missing file inside, and denies one outside", async () => {
  const { ws, outside, cleanup } = await _setup();
  try {
    await assert.rejects(resolveInside("x.txt", [ws], ws), (err: Error) => {
      assert.ok(err instanceof Deno.errors.NotFound);
      assert.equal(err.message, 'file "x.txt" not found');
      return true;
    });
    await _denied(
      resolveInside(join(outside, "missing.txt"), [ws], ws),
      join(outside, "missing.txt"),
      "~~",
    );
  } finally {
    await cleanup();
  }
});

Deno.test("resolveInside with create resolves missing parents inside the workspace", async () => {
  const { ws, cleanup } = await _setup();
  try {
    assert.equal(
      await resolveInside("new/deep/b.txt", [ws], ws, { create: true }),
      join(ws, "new/deep/b.txt"),
    );
  } finally {
    await cleanup();
  }
});

Deno.test("resolveInside with create refuses a dangling symlink that would write outside", async () => {
  const { ws, outside, cleanup } = await _setup();
  try {
    await Deno.symlink(join(outside, "planted.txt"), join(ws, "dangling.txt"));
    await _denied(
      resolveInside("dangling.txt", [ws], ws, { create: true }),
      "dangling.txt",
      outside,
    );
  } finally {
    await cleanup();
  }
});

Deno.test("resolveInside with noFollow returns the link itself, not its outside target", async () => {
  const { ws, outside, cleanup } = await _setup();
  try {
    await Deno.symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    assert.equal(
      await resolveInside("link.txt", [ws], ws, { noFollow: true }),
      join(ws, "link.txt"),
    );
  } finally {
    await cleanup();
  }
});

Deno.test("isInside does not confuse a sibling with a common prefix", () => {
  assert.ok(isInside("/a/b", "/a"));
  assert.ok(isInside("/a", "/a"));
  assert.ok(!isInside("/ab", "/a"));
  assert.ok(isInside("/x", "/"));
  assert.ok(!isInside("/a", "/a/b"));
  assert.ok(isInside("/a/b/..x", "/a/b"), "a name starting with .. is still inside");
});

Deno.test("displayPath shows workspace paths relative and never an outside host path", () => {
  assert.equal(displayPath("/ws/a/b.txt", "/ws", "given"), "a/b.txt");
  assert.equal(displayPath("/ws", "/ws", "given"), ".");
  assert.equal(displayPath("/etc/passwd", "/ws", "given"), "given");
});

Deno.test("fsError drops the host path from Deno's error messages", () => {
  const e1 = fsError(
    new Deno.errors.NotFound("No such file (os error 2): open '/ws/a.txt'"),
    "a.txt",
  );
  assert.equal(e1.message, 'file "a.txt" not found');
  const e2 = fsError(
    new Error("Directory not empty (os error 39): remove '/host/dir'"),
    "dir",
    "folder",
  );
  assert.equal(e2.message, 'cannot use folder "dir": Directory not empty (os error 39)');
  const e3 = fsError(Object.assign(new Error("x '/host'"), { name: "NotCapable" }), "a.txt");
  assert.equal(e3.name, "PermissionDeniedError");
});
