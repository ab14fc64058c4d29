// The programs a compiled corral starts as itself (core/base/self_run.ts),
// run the way the binary runs them: `main.ts <subcommand>` under broad
// flags (`deno run -A`, as a binary holds the host's), since no binary can be
// built here (DENO_FACTS.md). The tree applier applies a real write through
// `__applier`; the egress bridge carries a real connection through
// `__egress-bridge`, in a network namespace of its own whose only way out is
// the egress proxy's socket (a refused target stays unreached). The process
// sandbox's `__sandbox-child` is run the same way in tests/e2e/cli/compile_test.ts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { type EgressRecord, startEgress } from "../../../core/egress/egress.ts";
import { findBwrap } from "../../../core/jail/mod.ts";
import { selfCommand, writeSelfFiles, WRITTEN_OUT } from "../../../core/base/mod.ts";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";

const MAIN = [Deno.execPath(), "run", "-A", `--config=${ROOT}deno.json`, `${ROOT}main.ts`];

async function* _lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, nl);
      buf = buf.slice(nl + 1);
    }
  }
}

Deno.test("main.ts __applier (as a compiled corral runs it) applies a real write, a folder and a removal in its root", async () => {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_applier_" }));
  const root = join(base, "root");
  const upper = join(base, "upper");
  await Deno.mkdir(root);
  await Deno.mkdir(upper);
  await Deno.writeTextFile(join(root, "old.txt"), "old\n");
  await Deno.writeTextFile(join(upper, "new.txt"), "written through __applier\n");
  const child = new Deno.Command(MAIN[0], {
    args: [...MAIN.slice(1), "__applier"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = _lines(child.stdout);
  const w = child.stdin.getWriter();
  try {
    const ready = JSON.parse((await lines.next()).value as string);
    assert.deepEqual(ready, { ready: true, ino: (await Deno.stat(root)).ino });
    const ops = [
      { op: "dir", rel: "sub", mode: 0o755 },
      { op: "write", rel: "sub/new.txt", from: join(upper, "new.txt"), mode: 0o644 },
      { op: "remove", rel: "old.txt" },
      { op: "write", rel: "../escape.txt", from: join(upper, "new.txt"), mode: 0o644 },
    ];
    await w.write(new TextEncoder().encode(JSON.stringify({ id: 1, ops }) + "\n"));
    const answer = JSON.parse((await lines.next()).value as string);
    assert.equal(answer.id, 1);
    assert.deepEqual(answer.results.map((r: { ok: boolean }) => r.ok), [true, true, true, false]);
    assert.equal(answer.results[1].sig.kind, "file");
    assert.equal(
      await Deno.readTextFile(join(root, "sub", "new.txt")),
      "written through __applier\n",
    );
    await assert.rejects(Deno.stat(join(root, "old.txt")), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(join(base, "escape.txt")), Deno.errors.NotFound);
  } finally {
    await w.close().catch(() => {});
    await child.status;
    await child.stderr.cancel().catch(() => {});
    await Deno.remove(base, { recursive: true });
  }
});

/** A TCP echo server on the host. */
function _echo(): { port: number; hits: () => number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let hits = 0;
  (async () => {
    for await (const conn of listener) {
      hits++;
      (async () => {
        const buf = new Uint8Array(4096);
        try {
          for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
            await conn.write(buf.subarray(0, n));
          }
        } catch { /* gone */ }
        conn.close();
      })();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    hits: () => hits,
    close: () => listener.close(),
  };
}

Deno.test("main.ts __egress-bridge (as a compiled corral runs it) carries a granted connection to the proxy; a refused one never reaches its target", async () => {
  const bwrap = await findBwrap();
  assert.ok(bwrap, "bubblewrap is needed: the bridge runs in a network namespace of its own");
  const echo = _echo();
  const canary = _echo();
  const base = await Deno.makeTempDir({ prefix: "corral_bridge_" });
  const records: EgressRecord[] = [];
  const egress = startEgress(join(base, "run"), {
    allowed: [`127.0.0.1:${echo.port}`],
    onConnection: (r) => records.push(r),
  });
  const socket = join(egress.dir, "egress.sock");
  // Forwarders for both ports; the proxy grants only the echo's.
  const forwards = [echo.port, canary.port].map((port) => ({
    host: "127.0.0.1",
    port,
    listen: "127.0.0.1",
  }));
  const client = `${FIXTURES}egress/direct_client.ts`;
  const run = async (port: number) => {
    // In the binary: `corral __egress-bridge SOCKET FORWARDS -- COMMAND…` (here corral is main.ts).
    const bridged = selfCommand("__egress-bridge", "corral", [], [
      socket,
      JSON.stringify(forwards),
      "--",
      Deno.execPath(),
      "run",
      "-A",
      "--no-config",
      client,
      "127.0.0.1",
      String(port),
      "hi",
    ], true).command;
    assert.deepEqual(bridged.slice(0, 2), ["corral", "__egress-bridge"]);
    const out = await new Deno.Command(bwrap, {
      args: [
        ...["--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--"],
        ...MAIN,
        ...bridged.slice(1),
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1) ?? "";
    assert.ok(text.startsWith("{"), new TextDecoder().decode(out.stderr));
    return JSON.parse(text) as Record<string, unknown>;
  };
  try {
    const granted = await run(echo.port);
    assert.equal(granted.data, "hi-before|hi-after", JSON.stringify([granted, records]));
    assert.equal(echo.hits(), 1);
    const refused = await run(canary.port);
    assert.notEqual(refused.data, "hi-before|hi-after", JSON.stringify(refused));
    assert.equal(canary.hits(), 0, "the refused target was reached");
    assert.deepEqual(records.map((r) => [r.port, r.verdict, r.via]), [
      [echo.port, "allowed", "forwarder"],
      [canary.port, "refused", "forwarder"],
    ]);
  } finally {
    egress.close();
    echo.close();
    canary.close();
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("the egress preload is written out of corral's own files, byte for byte, once", async () => {
  const store = await Deno.makeTempDir();
  try {
    const rels = [...WRITTEN_OUT["egress-preload"]];
    const first = await writeSelfFiles(rels, store);
    for (const [i, rel] of rels.entries()) {
      assert.equal(await Deno.readTextFile(first[i]), await Deno.readTextFile(join(ROOT, rel)));
    }
    // The preload's import of egress_forward.ts holds in the copy.
    assert.match(await Deno.readTextFile(first[0]), /from "\.\/egress_forward\.ts"/);
    const before = (await Deno.stat(first[0])).mtime;
    assert.deepEqual(await writeSelfFiles(rels, store), first);
    assert.deepEqual((await Deno.stat(first[0])).mtime, before, "written again");
    // A copy changed in the store is written anew from corral's own.
    await Deno.writeTextFile(first[0], "tampered");
    await writeSelfFiles(rels, store);
    assert.equal(await Deno.readTextFile(first[0]), await Deno.readTextFile(join(ROOT, rels[0])));
  } finally {
    await Deno.remove(store, { recursive: true });
  }
});
