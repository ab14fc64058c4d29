// A relative CORRAL_SERVERS_DIR (or XDG_CACHE_HOME, CORRAL_CACHE_DIR, or a
// relative serversDir / approvalsDir option) means the folder it was given
// in, at that moment: corral resolves it to an absolute path where it is
// read, so an install records paths that still work from another folder,
// and the folders hidden from tools are absolute.
import assert from "node:assert/strict";
import { isAbsolute, join, relative, resolve } from "node:path";
import { parseConfig } from "../../../core/config/corral_config.ts";
import { installDir, installed } from "../../../core/hosted/install.ts";
import { ROOT } from "../../../testing/mod.ts";
import { hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";

const MEMORY = "@modelcontextprotocol/server-memory@2026.8.31";

/**
 * The servers folder and the cache folder that a corral process sees with
 * each of `cases` in its environment (one child process: test files share
 * this process's environment, so it is never changed here).
 */
async function _dirsWith(cwd: string, cases: Record<string, string>[]): Promise<string[][]> {
  const script = `
    import { serversDir } from "${ROOT}core/hosted/install.ts";
    import { defaultCacheDir } from "${ROOT}core/registry/discovery_cache.ts";
    const out = [];
    for (const vars of ${JSON.stringify(cases)}) {
      for (const k of ["CORRAL_SERVERS_DIR", "CORRAL_CACHE_DIR", "XDG_CACHE_HOME"]) Deno.env.delete(k);
      for (const [k, v] of Object.entries(vars)) Deno.env.set(k, v);
      out.push([serversDir(), defaultCacheDir()]);
    }
    console.log(JSON.stringify(out));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", join(ROOT, "deno.json"), script],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

Deno.test("relative servers and cache folders resolve against the current folder to absolute paths", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir());
  const [servers, xdg, cache, xdgCache] = await _dirsWith(cwd, [
    { CORRAL_SERVERS_DIR: "rel/servers" },
    { XDG_CACHE_HOME: "relcache" },
    { CORRAL_CACHE_DIR: "rel/cache" },
    { XDG_CACHE_HOME: "relcache" },
  ]);
  assert.equal(servers[0], resolve(cwd, "rel/servers"));
  assert.equal(xdg[0], resolve(cwd, "relcache/corral/servers"));
  assert.equal(cache[1], resolve(cwd, "rel/cache"));
  assert.equal(xdgCache[1], resolve(cwd, "relcache/corral"));
  await Deno.remove(cwd, { recursive: true });
  const [e] = parseConfig(
    JSON.stringify({ servers: { memory: { npm: MEMORY } } }),
    "/nowhere/corral.json",
  ).servers;
  const dir = installDir(e, "rel");
  assert.ok(isAbsolute(dir), dir);
  assert.equal(
    dir,
    resolve(Deno.cwd(), "rel", "npm-+modelcontextprotocol+server-memory@2026.8.31"),
  );
});

Deno.test("an install under a relative CORRAL_SERVERS_DIR records absolute paths that work from another folder", async () => {
  await using l = await hostedLayout();
  const [from, other] = [join(l.base, "from"), join(l.base, "other")];
  await Deno.mkdir(from);
  await Deno.mkdir(other);
  // `corral servers install` as a user runs it: in one folder, with a relative value.
  const script = `
    import { parseConfig } from "${ROOT}core/config/corral_config.ts";
    import { installServer } from "${ROOT}core/hosted/install.ts";
    const [e] = parseConfig(JSON.stringify({ servers: { memory: { npm: "${MEMORY}" } } }),
      "/nowhere/corral.json").servers;
    console.log(JSON.stringify(await installServer(e)));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", join(ROOT, "deno.json"), script],
    cwd: from,
    env: { CORRAL_SERVERS_DIR: "rel" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const record = JSON.parse(new TextDecoder().decode(out.stdout));
  for (const p of [record.dir, record.lock]) {
    assert.ok(isAbsolute(p), `a relative path was recorded: ${p}`);
    assert.ok(p.startsWith(join(from, "rel") + "/"), p);
  }
  // Read back from another folder: the record and the paths it holds are found.
  const back = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--config",
      join(ROOT, "deno.json"),
      `import { installServer } from "${ROOT}core/hosted/install.ts";
       import { parseConfig } from "${ROOT}core/config/corral_config.ts";
       const [e] = parseConfig(JSON.stringify({ servers: { memory: { npm: "${MEMORY}" } } }),
         "/nowhere/corral.json").servers;
       const r = await installServer(e, "${join(from, "rel")}");
       await Deno.stat(r.dir); await Deno.stat(r.lock);
       console.log(r.time);`,
    ],
    cwd: other,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(back.success, new TextDecoder().decode(back.stderr));
  // The same install (not made again): its time is the first one's.
  assert.equal(new TextDecoder().decode(back.stdout).trim(), record.time);
  const [e] = parseConfig(
    JSON.stringify({ servers: { memory: { npm: MEMORY } } }),
    "/nowhere/corral.json",
  ).servers;
  assert.equal(typeof installed(e, join(from, "rel")), "object");
});

Deno.test("a registry given relative servers, approvals and cache folders hides them from tools by absolute path", async () => {
  await using l = await hostedLayout();
  const cwd = Deno.cwd();
  // Relative to the current folder, pointing into the layout (the cache gets a file).
  const [servers, approvals, cache] = ["servers", "approvals", "cache"].map((d) =>
    relative(cwd, join(l.base, d))
  );
  assert.ok(!isAbsolute(cache), cache);
  const { registry } = await hostedRegistry(
    l,
    { hostile: { command: [Deno.execPath(), "--version"] } },
    {},
    {},
    { serversDir: servers, approvalsDir: approvals, cacheDir: cache } as { serversDir: string },
  );
  try {
    const paths = registry.trusted.map((t) => t.path);
    for (const d of ["servers", "approvals", "cache"]) {
      assert.ok(paths.includes(join(l.base, d)), `${d}: ${paths.join(" ")}`);
    }
    for (const p of paths) assert.ok(isAbsolute(p), `a relative trusted path: ${p}`);
  } finally {
    await registry.close();
  }
});
