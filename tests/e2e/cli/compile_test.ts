// The single binary: what `deno compile` embeds, and the self re-run path
// (`main.ts __sandbox-child`) that a compiled corral uses as its process
// sandbox. The compiled binary itself cannot be run here (no denort).
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { compileArgs, compileIncludes } from "../../../core/cli/compile.ts";
import { localModuleGraph } from "../../../core/sandbox/module_graph.ts";
import { FRAME_MARK, type SandboxMessage } from "../../../core/sandbox/protocol.ts";
import { sandboxEntryFiles } from "../../../core/sandbox/sandbox.ts";
import { toolModules } from "../../../core/registry/builtin_toolsets.ts";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";
import { tempLayout } from "../../_helpers.ts";

/** The paths in `deno compile`'s "Embedded Files" tree, relative to the root. */
function _embedded(output: string): Set<string> {
  const lines = output.split("\n");
  const start = lines.findIndex((l) => l.trim() === "Embedded Files");
  const files = new Set<string>();
  const stack: Array<{ depth: number; name: string }> = [];
  for (const line of lines.slice(start + 3)) {
    if (!line.trim() || /^(Files|Metadata|Remote modules):/.test(line)) continue;
    const at = line.search(/[^│├└─┬\s]/);
    if (at < 0) continue;
    const name = line.slice(at).replace(/ \([^)]*\)$/, "");
    while (stack.length && stack.at(-1)!.depth >= at) stack.pop();
    stack.push({ depth: at, name });
    files.add(stack.map((s) => s.name).join("/"));
  }
  return files;
}

Deno.test("deno compile embeds the sandbox entry points and every built-in tool module", async () => {
  const { base } = await tempLayout();
  const args = await compileArgs(join(base, "corral"));
  const out = await new Deno.Command(Deno.execPath(), {
    args: [args[0], "--no-check", ...args.slice(1)],
    cwd: ROOT,
    env: { DENORT_BIN: Deno.execPath(), NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  try {
    assert.equal(out.code, 0, text.slice(-2000));
    const embedded = _embedded(text);
    const expected = [
      "main.ts",
      "core/sandbox/sandbox_worker.ts",
      "core/sandbox/sandbox_child.ts",
      "toolsets/toolsets.json",
      "permissions.json",
    ];
    for await (const e of Deno.readDir(join(ROOT, "toolsets"))) {
      if (!e.isDirectory) continue;
      for (const m of await toolModules(join(ROOT, "toolsets", e.name))) {
        expected.push(relative(ROOT, m));
      }
    }
    assert.ok(expected.filter((f) => f.startsWith("toolsets/")).length >= 10);
    // /metrics needs prom-client and its dependencies, bintrees' code without its test data.
    for (const p of ["prom-client", "tdigest", "bintrees"]) {
      assert.match(text, new RegExp(` ${p}/[0-9.]+/\\* \\(`), `npm package ${p} is not embedded`);
    }
    for (const f of expected) assert.ok(embedded.has(f), `${f} is not embedded`);
    assert.deepEqual(
      (await compileIncludes()).map((f) => relative(ROOT, f)).filter((f) => !embedded.has(f)),
      [],
    );
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

async function* _frames(
  stream: ReadableStream<Uint8Array>,
  mark: string,
): AsyncGenerator<SandboxMessage> {
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const at = line.indexOf(mark);
      if (at >= 0) yield JSON.parse(line.slice(at + mark.length));
    }
  }
}

Deno.test("main.ts __sandbox-child started with -A revokes what the grant lacks before tool code runs", async () => {
  const { ws } = await tempLayout();
  const probe = `${FIXTURES}sandbox/probe_tools.ts`;
  const read = [...await sandboxEntryFiles(), ...await localModuleGraph([probe]), ws];
  const child = new Deno.Command(Deno.execPath(), {
    // Broad flags, as a compiled binary has them.
    args: [
      "run",
      "-A",
      "--unstable-worker-options",
      `--config=${ROOT}deno.json`,
      `${ROOT}main.ts`,
      "__sandbox-child",
    ],
    cwd: ws,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
    env: { CORRAL_TEST_SECRET: "s3cr3t" },
  }).spawn();
  const token = crypto.randomUUID().replaceAll("-", "");
  const w = child.stdin.getWriter();
  const send = (x: unknown) =>
    w.write(new TextEncoder().encode(`${typeof x === "string" ? x : JSON.stringify(x)}\n`));
  await send(token);
  await send({ read, write: [], run: [], net: [] });
  const frames = _frames(child.stdout, FRAME_MARK + token);
  try {
    const ready = (await frames.next()).value as Extract<SandboxMessage, { type: "ready" }>;
    assert.equal(ready.type, "ready");
    const held = ready.held!;
    assert.equal(held.read, "granted", "read stays (the worker narrows it)");
    for (const kind of ["write", "run", "net", "env", "sys", "ffi", "import"]) {
      assert.notEqual(held[kind], "granted", `${kind} is still held: ${held[kind]}`);
    }
    // The worker inside still works, and what it tries outside its grant is denied.
    const env = { workspace: ws, grant: { read: [ws], write: [], run: [], net: [] } };
    await send({
      type: "call",
      id: 1,
      module: probe,
      tool: "Probe_r",
      args: {
        inside_file: probe,
        outside_file: "/etc/hostname",
        inside_dir: ws,
        outside_dir: "/var/tmp",
        command: "echo",
        other_command: "ls",
        host: "127.0.0.1:9",
        other_host: "127.0.0.1:9",
      },
      env,
    });
    let result: SandboxMessage | undefined;
    for await (const m of frames) {
      if (m.type === "result") {
        result = m;
        break;
      }
    }
    assert.ok(result?.type === "result");
    const ops = result.result.ops as Record<string, string>;
    assert.equal(ops.read_inside, "ok", JSON.stringify(result.result));
    for (const op of ["write_inside", "run_allowed", "net_allowed", "env", "sys", "ffi"]) {
      assert.match(ops[op], /^denied:/, `${op}: ${ops[op]}`);
    }
  } finally {
    await w.close().catch(() => {});
    await child.status;
    await child.stdout.cancel().catch(() => {});
  }
});
