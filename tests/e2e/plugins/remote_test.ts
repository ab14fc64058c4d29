import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../../../testing/mod.ts";

const MODULE = `export const TOOL_CONFIG = {
  name: "RemoteHello",
  description: "A tool served from a remote module",
  function: () => ({ success: true, hello: "from afar" }),
};
`;

/** A copy of corral, so that installing pins the module in the copy's deno.lock only. */
async function corralCopy(): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_copy_" }));
  for (
    const name of ["core", "toolsets", "main.ts", "deno.json", "deno.lock", "permissions.json"]
  ) {
    const out = await new Deno.Command("cp", { args: ["-r", join(ROOT, name), dir] }).output();
    assert.ok(out.success, `copy ${name}`);
  }
  await Deno.mkdir(join(dir, "plugins"));
  return dir;
}

async function corral(dir: string, args: string[]) {
  // Run from a workspace of its own (never corral's folder), with the copy's
  // own config directory (never the developer's).
  const ws = join(dir, "..", `${dir.split("/").at(-1)}_ws`);
  await Deno.mkdir(ws, { recursive: true });
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(dir, "main.ts"), ...args],
    cwd: ws,
    env: { NO_COLOR: "1", CORRAL_CACHE_DIR: "", CORRAL_CONFIG_DIR: join(dir, ".config") },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("a remote (http or https) package plugin installs into the cache and lock, then loads offline in its sandbox", async () => {
  let served = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    served++;
    return new Response(MODULE, { headers: { "content-type": "application/typescript" } });
  });
  const spec = `http://127.0.0.1:${server.addr.port}/remote_hello.ts`;
  const dir = await corralCopy();
  try {
    const install = await corral(dir, ["plugins", "install", spec]);
    assert.equal(install.code, 0, install.stderr);
    assert.ok(served >= 1, "the module was fetched at install time");
    const lock = await Deno.readTextFile(join(dir, "deno.lock"));
    assert.ok(lock.includes(spec), "the module is pinned in deno.lock");
    // A new config goes to corral's config directory.
    const config = JSON.parse(await Deno.readTextFile(join(dir, ".config", "corral.json")));
    assert.deepEqual(config.plugins, [spec]);

    // Running corral never downloads: stop the server, then load and call.
    await server.shutdown();
    const before = served;
    const list = await corral(dir, ["list", "--json", "-r"]);
    assert.equal(list.code, 0, list.stderr);
    const tool = (JSON.parse(list.stdout) as Array<Record<string, unknown>>)
      .find((t) => t.name === "RemoteHello");
    assert.equal(tool?.status, "loaded", list.stderr);
    assert.equal(tool?.isolation, "process");
    const call = await corral(dir, ["call", "RemoteHello", "--args", "{}", "-r"]);
    assert.equal(call.code, 0, call.stderr);
    assert.equal(JSON.parse(call.stdout).hello, "from afar");
    assert.equal(served, before, "nothing was fetched at run time");
  } finally {
    await server.shutdown().catch(() => {});
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(`${dir}_ws`, { recursive: true }).catch(() => {});
  }
});
