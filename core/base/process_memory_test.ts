import assert from "node:assert/strict";
import { processTreeMemory } from "./process_memory.ts";

Deno.test("processTreeMemory counts every process below the one it is given, and no process as nothing", async () => {
  // A shell with two children, each holding 8 MiB of its own (every page written), which each
  // says once it holds them.
  const hold = 'import sys; b = b"x" * (8 << 20); print("held", flush=True); sys.stdin.read()';
  const child = new Deno.Command("/bin/sh", {
    // An asynchronous list's stdin is /dev/null unless redirected: both read the shell's own.
    args: ["-c", `exec 3<&0; python3 -c '${hold}' <&3 & python3 -c '${hold}' <&3 & wait`],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const said = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (let text = ""; (text.match(/held/g) ?? []).length < 2;) {
      const { value, done } = await said.read();
      assert.ok(!done, "both children said they hold their buffers");
      text += value;
    }
    const tree = (await processTreeMemory([child.pid])).get(child.pid);
    assert.ok(tree, "the shell is alive");
    assert.equal(tree.processes, 3, "the shell and its two children");
    assert.ok(tree.rss >= 16 * 1024 * 1024, `RSS ${tree.rss}`);
    assert.ok(tree.pss >= 16 * 1024 * 1024 && tree.pss <= tree.rss, `PSS ${tree.pss}`);
    const own = (await processTreeMemory([Deno.pid])).get(Deno.pid)!;
    assert.ok(own.processes >= 4 && own.rss > tree.rss, "this test's own tree holds the shell's");
  } finally {
    await child.stdin.close();
    await said.cancel();
    await child.status;
  }
  // A PID above Linux's largest is no process (the shell's own may be reused at once).
  const none = await processTreeMemory([2 ** 22 + 1, -1]);
  assert.equal(none.size, 0, "nothing read for no process");
});
