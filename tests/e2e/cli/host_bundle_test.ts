// The host bundle (core/cli/host_bundle.ts): `corral __bundle` makes it; a
// `corral call` and `corral mcp` then run from it (CORRAL_BUNDLE=require proves it did) and
// answers exactly as from corral's modules, failures and exit codes
// included; a bundle whose source files changed, or made by another Deno,
// is not used.
import assert from "node:assert/strict";
import { bundleFresh, readBundleRecord, uncachedPackages } from "../../../core/cli/host_bundle.ts";
import { INIT_REQUEST, ROOT } from "../../../testing/mod.ts";

const FLAGS = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
];

async function _corral(args: string[], cwd: string, env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...FLAGS, `${ROOT}main.ts`, ...args],
    cwd,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("a bundled call answers as corral's modules do (results, failures, exit codes); other commands never run from it", async () => {
  const made = await _corral(["__bundle"], ROOT, {});
  assert.equal(made.code, 0, made.stderr);
  const record = readBundleRecord();
  assert.ok(record && bundleFresh(record), "a fresh bundle was recorded");
  assert.ok(record.stamps.some(([f]) => f.endsWith("/core/registry/registry.ts")));
  assert.ok(record.stamps.some(([f]) => f.endsWith("/deno.lock")));
  // The sandboxes' graph too (its npm packages are the record's list): a toolset's file, zod's user.
  assert.ok(record.stamps.some(([f]) => f.endsWith("/toolsets/files/word_count.ts")));
  assert.ok(record.stamps.some(([f]) => f.endsWith("/core/sandbox/sandbox_runtime.ts")));
  assert.ok(!record.stamps.some(([f]) => f.includes("/.corral/")), "no file of the build itself");
  const ws = await Deno.makeTempDir();
  const cache = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${ws}/a.txt`, "one two\nthree\n");
    const env = { CORRAL_CACHE_DIR: cache };
    const cases = [
      ["call", "WordCount", "--args", '{"filepath":"a.txt"}'],
      ["call", "WordCount", "--args", '{"filepath":"missing.txt"}'],
      ["call", "WordCountt", "--args", "{}"],
      ["call", "WordCount", "--args", "not json"],
    ];
    for (const args of cases) {
      const off = await _corral(args, ws, { ...env, CORRAL_BUNDLE: "off" });
      const on = await _corral(args, ws, { ...env, CORRAL_BUNDLE: "require" });
      assert.equal(on.code, off.code, `${args.join(" ")}: ${on.stderr}`);
      assert.equal(on.stdout, off.stdout, args.join(" "));
      assert.equal(on.stderr, off.stderr, args.join(" "));
    }
    const first = await _corral(cases[0], ws, { ...env, CORRAL_BUNDLE: "require" });
    assert.match(first.stdout, /"words": 3/);
    // The word "call" elsewhere does not make another command run from the bundle.
    const list = await _corral(["list", "--json", "--toolset", "net"], ws, {
      ...env,
      CORRAL_BUNDLE: "require",
    });
    assert.equal(list.code, 0, list.stderr);
  } finally {
    await Deno.remove(ws, { recursive: true });
    await Deno.remove(cache, { recursive: true });
  }
});

/** `corral mcp` on stdio in `ws`: the lines it answers to initialize, tools/list and a call. */
async function _mcpLines(ws: string, env: Record<string, string>): Promise<string[]> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...FLAGS, `${ROOT}main.ts`, "mcp", "--workspace", ws, "-r"],
    cwd: ws,
    env: { NO_COLOR: "1", ...env },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  const send = (m: unknown) => w.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
  await send(INIT_REQUEST);
  await send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  const call = { name: "WordCount", arguments: { filepath: "a.txt" } };
  await send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: call });
  const lines: string[] = [];
  let text = "";
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  while (!lines.some((l) => l.startsWith('{"result"') && l.includes('"id":3'))) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n")) {
      lines.push(text.slice(0, nl));
      text = text.slice(nl + 1);
    }
  }
  await w.close();
  reader.releaseLock();
  await child.stdout.cancel().catch(() => {});
  const status = await child.status;
  const stderr = new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
  assert.equal(status.code, 0, stderr);
  return lines;
}

Deno.test("corral mcp on stdio runs from the bundle and answers as from corral's modules", async () => {
  const made = await _corral(["__bundle"], ROOT, {});
  assert.equal(made.code, 0, made.stderr);
  const ws = await Deno.makeTempDir();
  const cache = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${ws}/a.txt`, "one two\nthree\n");
    const on = await _mcpLines(ws, { CORRAL_CACHE_DIR: `${cache}/on`, CORRAL_BUNDLE: "require" });
    const off = await _mcpLines(ws, { CORRAL_CACHE_DIR: `${cache}/off`, CORRAL_BUNDLE: "off" });
    assert.deepEqual(on, off);
    assert.equal(on.length, 3, on.join("\n"));
    assert.match(on[1], /"name":"WordCount"/);
    assert.match(on[2], /\\"words\\": 3/);
  } finally {
    await Deno.remove(ws, { recursive: true });
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("a bundle is used only where the Deno cache holds the packages corral's sandboxes load", async () => {
  const made = await _corral(["__bundle"], ROOT, {});
  assert.equal(made.code, 0, made.stderr);
  const record = readBundleRecord()!;
  // What a sandbox loads: zod (every tool) and ajv-formats (schemas), with their dependencies.
  const names = record.npm.map(([n]) => n);
  for (const n of ["zod", "zod-to-json-schema", "ajv", "ajv-formats"]) {
    assert.ok(names.includes(n), n);
  }
  const empty = await Deno.makeTempDir();
  const ws = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${ws}/a.txt`, "one two\n");
    // An empty Deno cache (another user, another HOME): the sandbox, run --cached-only, would
    // find none of them, so the bundle is not used (here: refused, as CORRAL_BUNDLE=require asks).
    const env = { CORRAL_CACHE_DIR: `${empty}/c`, CORRAL_BUNDLE: "require", DENO_DIR: empty };
    const args = ["call", "WordCount", "--args", '{"filepath":"a.txt"}'];
    const refused = await _corral(args, ws, env);
    assert.equal(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /this Deno cache lacks .*zod@3/);
    // This process's own cache holds them all (it ran from the modules).
    assert.deepEqual(uncachedPackages(record), []);
    const pkg = record.npm.find(([n]) => n === "zod")!;
    const before = Deno.env.get("DENO_DIR");
    Deno.env.set("DENO_DIR", empty);
    try {
      assert.ok(uncachedPackages(record).includes(`zod@${pkg[1]}`));
      await Deno.mkdir(`${empty}/npm/registry.npmjs.org/zod/${pkg[1]}`, { recursive: true });
      assert.ok(!uncachedPackages(record).includes(`zod@${pkg[1]}`));
    } finally {
      if (before === undefined) Deno.env.delete("DENO_DIR");
      else Deno.env.set("DENO_DIR", before);
    }
  } finally {
    await Deno.remove(empty, { recursive: true });
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("a bundle is fresh only while every source keeps its stamp and Deno is the same", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/m.ts`;
    await Deno.writeTextFile(file, "export const a = 1;\n");
    await new Promise((r) => setTimeout(r, 3100)); // old enough to be stamped
    const { fileStamp } = await import("../../../core/base/file_stamp.ts");
    const stamp = fileStamp(file)!;
    const record = {
      v: 1,
      deno: Deno.version.deno,
      dir: "x1",
      stamps: [[file, stamp]] as [string, string][],
      npm: [] as [string, string][],
    };
    assert.ok(bundleFresh(record));
    assert.equal(bundleFresh({ ...record, deno: "0.0.1" }), false);
    assert.equal(bundleFresh({ ...record, dir: "../elsewhere" }), false);
    assert.equal(bundleFresh({ ...record, stamps: [] }), false);
    // Rewritten at the same size, its modification time set back: its change time moved.
    const mtime = Deno.statSync(file).mtime!;
    await Deno.writeTextFile(file, "export const a = 2;\n");
    await Deno.utime(file, mtime, mtime);
    assert.equal(bundleFresh(record), false);
    await Deno.remove(file);
    assert.equal(bundleFresh(record), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** `path` exists within `ms` (checked every 200 ms), for a detached build's result. */
async function _appears(path: string, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    try {
      await Deno.stat(path);
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return false;
}

Deno.test("a call builds a stale bundle in the background only where a bundle folder was made", async () => {
  const copy = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_bundle_copy_" }));
  const ws = await Deno.makeTempDir();
  const cache = await Deno.makeTempDir();
  try {
    for (
      const name of ["core", "toolsets", "main.ts", "deno.json", "deno.lock", "permissions.json"]
    ) {
      const out = await new Deno.Command("cp", { args: ["-r", `${ROOT}${name}`, copy] }).output();
      assert.ok(out.success, `copy ${name}`);
    }
    await Deno.writeTextFile(`${ws}/a.txt`, "one two\n");
    const env = { CORRAL_CACHE_DIR: cache };
    const args = ["call", "WordCount", "--args", '{"filepath":"a.txt"}'];
    const call = () =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", ...FLAGS, `${copy}/main.ts`, ...args],
        cwd: ws,
        env: { NO_COLOR: "1", ...env },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
    // No bundle folder: the call runs from the modules and starts no build.
    const plain = await call();
    assert.equal(plain.code, 0, new TextDecoder().decode(plain.stderr));
    await assert.rejects(Deno.stat(`${copy}/.corral`), Deno.errors.NotFound);
    // Control: with the folder made, the same call starts a build that records a fresh bundle.
    await Deno.mkdir(`${copy}/.corral/bundle`, { recursive: true });
    const again = await call();
    assert.equal(again.code, 0, new TextDecoder().decode(again.stderr));
    assert.ok(await _appears(`${copy}/.corral/bundle/current.json`, 180_000), "no bundle was made");
    const failed = await _appears(`${copy}/.corral/bundle/failed.json`, 0);
    assert.equal(failed, false, "the background build failed");
    // The build is over (its lock gone) before the copy is removed.
    for (let i = 0; i < 600 && await _appears(`${copy}/.corral/bundle/build.lock`, 0); i++) {
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await Deno.remove(copy, { recursive: true });
    await Deno.remove(ws, { recursive: true });
    await Deno.remove(cache, { recursive: true });
  }
});
