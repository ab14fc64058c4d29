import assert from "node:assert/strict";
import { ROOT } from "../../../testing/mod.ts";

/** Run findBwrap in a fresh process (it is memoized per process). */
async function probe(cacheFile: string, maxAgeMs?: number): Promise<string> {
  const code = `import { findBwrap } from "${ROOT}core/jail/jail.ts";
console.log(String(await findBwrap({ cacheFile: ${JSON.stringify(cacheFile)}${
    maxAgeMs === undefined ? "" : `, maxAgeMs: ${maxAgeMs}`
  } })));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", `${ROOT}deno.json`, code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim();
}

function installedBwrap(): string | undefined {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${dir}/bwrap`).isFile) return `${dir}/bwrap`;
    } catch { /* not here */ }
  }
  return undefined;
}

Deno.test("the bwrap probe's outcome is remembered per binary and trusted only while fresh", async () => {
  const dir = await Deno.makeTempDir({ prefix: "corral_bwrap_" });
  const file = `${dir}/bwrap.json`;
  try {
    const bwrap = installedBwrap();
    const first = await probe(file);
    if (!bwrap) {
      // No binary: nothing to probe, nothing remembered.
      assert.equal(first, "undefined");
      await assert.rejects(Deno.stat(file), Deno.errors.NotFound);
      return;
    }
    const record = JSON.parse(await Deno.readTextFile(file));
    assert.equal(record.path, bwrap);
    assert.equal(first, record.ok ? bwrap : "undefined");

    // A remembered "does not work" is trusted while fresh (so no probe ran)…
    await Deno.writeTextFile(file, JSON.stringify({ ...record, ok: false, at: Date.now() }));
    assert.equal(await probe(file), "undefined");
    // …and probed again once stale, or when the binary differs.
    assert.equal(await probe(file, 1), first);
    await Deno.writeTextFile(
      file,
      JSON.stringify({ ...record, ok: false, size: record.size + 1, at: Date.now() }),
    );
    assert.equal(await probe(file), first);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
