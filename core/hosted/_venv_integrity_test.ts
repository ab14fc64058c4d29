import assert from "node:assert/strict";
import { join } from "node:path";
import { checkVenv, manifestDigest, manifestFile, venvManifest } from "./_venv_integrity.ts";

Deno.test("venv check: an unchanged tree passes; a change, an addition, a removal and a retargeted link are named", async () => {
  const base = await Deno.makeTempDir({ prefix: "corral_venv_" });
  try {
    const venv = join(base, "venv");
    await Deno.mkdir(join(venv, "lib", "a dir"), { recursive: true });
    await Deno.writeTextFile(join(venv, "lib", "a dir", "mod.py"), "x = 1\n");
    await Deno.writeTextFile(join(venv, "lib", "gone.py"), "y = 2\n");
    await Deno.symlink("/usr/bin/python3", join(venv, "python3"));
    const manifest = await venvManifest(venv);
    await Deno.writeTextFile(manifestFile(venv), manifest);
    const tree = manifestDigest(manifest);
    await checkVenv(venv, tree, "reinstall");

    await Deno.writeTextFile(join(venv, "lib", "a dir", "mod.py"), "x = 2\n");
    await Deno.writeTextFile(join(venv, "lib", "evil.pth"), "import os\n");
    await Deno.remove(join(venv, "lib", "gone.py"));
    await Deno.remove(join(venv, "python3"));
    await Deno.symlink("/bin/sh", join(venv, "python3"));
    const err = await checkVenv(venv, tree, "reinstall").then(() => undefined, (e: Error) => e);
    assert.ok(err, "a changed venv passed");
    for (
      const what of [
        "lib/a dir/mod.py modified",
        "lib/evil.pth added",
        "lib/gone.py removed",
        "python3 modified",
      ]
    ) assert.ok(err.message.includes(what), `${what} not in: ${err.message}`);
    assert.match(
      err.message,
      /changed after it was installed: .*; refusing to start it: reinstall$/,
    );

    // A manifest rewritten to match: the record's digest still tells, without naming files.
    await Deno.writeTextFile(manifestFile(venv), await venvManifest(venv));
    await assert.rejects(checkVenv(venv, tree, "r"), /does not match the install record either/);
    await assert.rejects(checkVenv(venv, undefined, "r"), /has no integrity record/);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
