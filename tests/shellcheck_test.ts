// The shell programs corral runs (every `*.sh` under core/, run by path: core/base/self_run.ts
// `shellProgram`) pass `shellcheck` (Debian's package, which .ci/run installs) with no finding
// of any severity, and each is one that a compiled corral writes out (WRITTEN_OUT's `shell`).
// A machine without shellcheck fails here, saying so: the check is never skipped.
import assert from "node:assert/strict";
import { join } from "node:path";
import { WRITTEN_OUT } from "../core/base/mod.ts";
import { ROOT } from "../testing/mod.ts";

/** The options .ci/run gives shellcheck too: no rc file, every severity, one line per finding. */
const OPTIONS = ["--norc", "--severity=style", "--format=gcc"];

/** Every `*.sh` under core/, relative to the root, sorted. */
async function shellFiles(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(join(ROOT, dir))) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(rel);
      else if (e.isFile && e.name.endsWith(".sh")) out.push(rel);
    }
  };
  await walk("core");
  return out.sort();
}

/** shellcheck's findings on `files` (absolute): its exit code and output. */
async function shellcheck(files: string[]): Promise<{ code: number; text: string }> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("shellcheck", {
      args: [...OPTIONS, ...files],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
    assert.fail(
      "shellcheck is not installed, so corral's shell programs cannot be checked: install " +
        "Debian's package (`apt-get install shellcheck`; .ci/run does it where it is root)",
    );
  }
  const dec = new TextDecoder();
  return { code: out.code, text: (dec.decode(out.stdout) + dec.decode(out.stderr)).trim() };
}

Deno.test("every shell program under core/ passes shellcheck with no finding", async () => {
  const files = await shellFiles();
  assert.ok(files.length >= 7, `the walk found corral's shell programs (${files.join(", ")})`);
  const { code, text } = await shellcheck(files.map((f) => join(ROOT, f)));
  assert.equal(text.replaceAll(ROOT, ""), "", "shellcheck's findings");
  assert.equal(code, 0);
});

Deno.test("shellcheck reports what it must: a planted unquoted expansion and a bad test are findings", async () => {
  // Control for the test above: the same options do find faults.
  const dir = await Deno.makeTempDir({ prefix: "corral_shellcheck_" });
  try {
    const bad = join(dir, "bad.sh");
    await Deno.writeTextFile(bad, "#!/bin/bash\nrm -rf $1/tmp\nif [ $# = 0 ] then echo none; fi\n");
    const { code, text } = await shellcheck([bad]);
    assert.notEqual(code, 0);
    assert.match(text, /SC2086/, text);
    const good = join(dir, "good.sh");
    await Deno.writeTextFile(good, '#!/bin/bash\nrm -rf -- "$1/tmp"\n');
    assert.deepEqual(await shellcheck([good]), { code: 0, text: "" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every shell program under core/ is one corral runs by path and writes out of a binary", async () => {
  const files = await shellFiles();
  assert.deepEqual([...WRITTEN_OUT.shell].sort(), files);
  // Each is a file of its own with its interpreter named, never text handed to `-c`.
  for (const f of files) {
    const text = await Deno.readTextFile(join(ROOT, f));
    assert.match(text, /^#!\/bin\/(ba)?sh\n/, `${f} names its shell`);
  }
});
