// No shared cache that holds others' code (issue 20): Deno's cache holds the
// compiled JavaScript of every TypeScript file Deno compiled on the machine,
// and corral's code store holds every plugin's pinned copy and compiled
// output. Jailed bash greps everything it can read for another plugin's
// marker, with the default grant and with a read grant over both caches.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { codeStoreDir } from "../../../core/config/install_dir.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { denoDir } from "../../../core/base/mod.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { ROOT } from "../../../testing/mod.ts";
import { tempLayout } from "../../_helpers.ts";

const _SYSTEM = [
  "proc",
  "sys",
  "dev",
  "usr",
  "lib",
  "lib32",
  "lib64",
  "libx32",
  "bin",
  "sbin",
  "etc",
];

/** Files under `dir` that hold `text` (the host's own view). */
async function _grepHost(dir: string, text: string): Promise<string> {
  const out = await new Deno.Command("grep", { args: ["-rl", text, dir], stderr: "null" }).output();
  return new TextDecoder().decode(out.stdout);
}

Deno.test("jailed bash finds no other plugin's compiled code, in Deno's cache or in corral's code store", async () => {
  const half = [crypto.randomUUID().slice(0, 8), crypto.randomUUID().slice(0, 8)];
  const marker = `corral_marker_${half.join("")}`;
  // Another project's plugin: compiled into the host's Deno cache by a plain `deno run`,
  // and loaded by corral (its pinned copy and its own cache in corral's code store).
  const other = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-other-" }));
  const file = `${other}/other_plugin.ts`;
  await Deno.writeTextFile(
    file,
    `const secret: string = "${marker}";
export const TOOL_CONFIG = {
  name: "OtherTool",
  description: "another plugin",
  function: (): Record<string, unknown> => ({ success: true, n: secret.length }),
};
`,
  );
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-check", `--config=${ROOT}deno.json`, file],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(run.success, new TextDecoder().decode(run.stderr));
  const { ws, base } = await tempLayout();
  const otherPolicy = parsePolicy(JSON.stringify({ toolsets: { other: {} } }), "o.json", other);
  const otherReg = await Registry.create({
    workspace: other,
    policy: otherPolicy,
    noBuiltins: true,
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
    sources: [{
      id: "other",
      kind: "plugin",
      modules: [file],
      policy: otherPolicy.toolset("other"),
    }],
  });
  try {
    const res = await otherReg.call("OtherTool", {});
    assert.equal(res.success, true, res.error);
  } finally {
    await otherReg.close();
  }
  // The control: the marker IS in both caches on the host, so the greps below could find it.
  assert.ok(await _grepHost(`${denoDir()}/gen`, marker), "the marker is in the host's Deno cache");
  assert.ok(await _grepHost(codeStoreDir(), marker), "the marker is in corral's code store");

  const caches = [dirname(denoDir()), dirname(codeStoreDir())];
  const store = await Deno.realPath(codeStoreDir());
  for (const read of [["."], [".", ...caches]]) {
    const policy = parsePolicy(
      JSON.stringify({ toolsets: { system: { run: ["bash"], read, write: ["."] } } }),
      "t.json",
      ws,
    );
    const registry = await Registry.create({
      workspace: ws,
      policy,
      privileges: "rwx",
      cacheDir: `${base}/cache`,
      reporter: new Reporter({ sink: () => {}, color: false }),
    });
    try {
      // The marker is put together inside, so that the script itself never holds it.
      const skip = _SYSTEM.map((d) => `--exclude-dir=${d}`).join(" ");
      const res = await registry.call("RunBashCode", {
        code: [
          `a=corral_marker_${half[0]}; b=${half[1]}`,
          `{ cd / && for d in *; do case " ${_SYSTEM.join(" ")} " in *" $d "*) continue;; esac;` +
          ` grep -rl ${skip} "$a$b" "/$d" 2>/dev/null; done;`,
          ` grep -rl "$a$b" ${caches.join(" ")} 2>/dev/null; } | sed 's/^/FOUND /'`,
          `echo "sets: $(ls ${store} | wc -l)"; echo "deno: $(ls ${denoDir()} 2>/dev/null | wc -l)"`,
          `echo END`,
        ].join("\n"),
        timeout: 120,
      });
      assert.equal(res.success, true, res.error);
      const out = String(res.stdout);
      assert.ok(out.includes("END"), out);
      const found = out.split("\n").filter((l) => l.startsWith("FOUND "));
      assert.deepEqual(
        found,
        [],
        `read ${JSON.stringify(read)}: another plugin's code is readable: ${out}`,
      );
      // Of the code store it sees its own module set's folder alone; of Deno's cache, nothing.
      assert.match(out, /^sets: 1$/m, out);
      assert.match(out, /^deno: 0$/m, out);
    } finally {
      await registry.close();
    }
  }
  await Deno.remove(other, { recursive: true });
  await Deno.remove(base, { recursive: true });
});
