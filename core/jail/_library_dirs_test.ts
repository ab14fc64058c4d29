import assert from "node:assert/strict";
import { libraryDirs } from "./_library_dirs.ts";

const _EXEC = Deno.realPathSync(Deno.execPath());

function _stamp(path: string) {
  const st = Deno.statSync(path);
  return { path, size: st.size, mtime: st.mtime?.getTime() ?? 0 };
}

Deno.test("libraryDirs: ldd's folders, remembered in the cache file and read back from it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/libs.json`;
    const fresh = await libraryDirs(_EXEC, file);
    assert.ok(fresh.length > 0 && fresh.every((d) => d.startsWith("/")), String(fresh));
    const record = JSON.parse(await Deno.readTextFile(file));
    assert.equal(record.exec.path, _EXEC);
    // A record that still matches is what the next start uses (ldd never names /usr/bin/env).
    const env = Deno.realPathSync("/usr/bin/env");
    record.libs.push(_stamp(env));
    await Deno.writeTextFile(file, JSON.stringify(record));
    assert.ok((await libraryDirs(_EXEC, file)).includes("/usr/bin"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("libraryDirs: a record that no longer matches a library or the binary is thrown away", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/libs.json`;
    const fresh = await libraryDirs(_EXEC, file);
    const record = JSON.parse(await Deno.readTextFile(file));
    const env = Deno.realPathSync("/usr/bin/env");
    // A library changed since (its size), then the binary itself (its mtime).
    await Deno.writeTextFile(
      file,
      JSON.stringify({ ...record, libs: [...record.libs, { ..._stamp(env), size: 1 }] }),
    );
    assert.deepEqual(await libraryDirs(_EXEC, file), fresh);
    await Deno.writeTextFile(
      file,
      JSON.stringify({ exec: { ...record.exec, mtime: 1 }, libs: [...record.libs, _stamp(env)] }),
    );
    assert.deepEqual(await libraryDirs(_EXEC, file), fresh);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("libraryDirs: a planted record naming a folder outside the system's never reaches the binds", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/libs.json`;
    const fresh = await libraryDirs(_EXEC, file);
    const record = JSON.parse(await Deno.readTextFile(file));
    await Deno.mkdir(`${dir}/secret`);
    await Deno.writeTextFile(`${dir}/secret/id_rsa`, "CANARY");
    for (const path of [`${dir}/secret/id_rsa`, `/usr/../${dir}/secret/id_rsa`]) {
      const planted = {
        ...record,
        libs: [...record.libs, { ..._stamp(`${dir}/secret/id_rsa`), path }],
      };
      await Deno.writeTextFile(file, JSON.stringify(planted));
      const dirs = await libraryDirs(_EXEC, file);
      assert.deepEqual(dirs, fresh, path);
      assert.ok(!dirs.some((d) => d.includes("secret")));
    }
    // Garbage in the file: ldd again.
    await Deno.writeTextFile(file, "{not json");
    assert.deepEqual(await libraryDirs(_EXEC, file), fresh);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
