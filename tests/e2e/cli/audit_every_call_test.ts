// Every call that ran has its own audit line (issue 39): one line per call,
// with its outcome and its own change list, whether its writes were refused
// at the apply, conflicted, its server was killed mid-call (a timeout, a
// crash), it was cancelled, or its session ended under it; for hosted
// servers (tests/fixtures/hosted/hostile_server.ts, a real process in
// corral's namespace, holding a secret as real servers do) and for process
// and worker sandboxes. The tally of refusals (core/audit/audit.ts)
// may count refusals before a call ran; it never stands for a call that ran.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Registry } from "../../../core/registry/registry.ts";
import { layerBases } from "../../../core/config/install_dir.ts";
import { fixtureRegistry, fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import { approve, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";
import { tempLayout } from "../../_helpers.ts";

type Line = Record<string, unknown> & {
  kind?: string;
  tool?: string;
  outcome?: string;
  reason?: string;
  session?: string;
  changes?: {
    paths: string[];
    refused: Array<{ path: string }>;
    conflicts: Array<{ path: string }>;
  };
};

const FIXTURE = join(HOSTED_FIXTURES, "hostile_server.ts");
const SERVERS = {
  hostile: {
    command: fixtureServer(FIXTURE),
    // A secret in its environment: results are scrubbed (a copy), the lines keep their changes.
    env: { SECRET_TOKEN: { secret: "AUDIT_EVERY_CALL_SECRET" } },
  },
};
const PERMS = { hostile: { read: ["."], write: ["."] } };

async function _lines(path: string): Promise<Line[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** Wait until a sandbox's layer (any base) holds `name` with `text`: the call has written it. */
async function _written(name: string, text: string): Promise<void> {
  const holds = (f: string) => {
    try {
      return Deno.readTextFileSync(f).includes(text);
    } catch {
      return false; // not in this layer (yet)
    }
  };
  const list = (dir: string) => {
    try {
      return [...Deno.readDirSync(dir)].map((e) => `${dir}/${e.name}`);
    } catch {
      return [];
    }
  };
  for (let i = 0; i < 600; i++) {
    for (const base of layerBases()) {
      for (const sandbox of list(`${base}/sandboxes`)) {
        if (list(sandbox).some((root) => holds(`${root}/u/${name}`))) return;
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no layer holds ${name} with ${text}`);
}

/** The call lines (not connections, server events, changes apart or tallies) of `tool`. */
const _calls = (lines: Line[], tool: string) =>
  lines.filter((l) => l.kind === undefined && l.tool === tool);

/** The lines of any kind whose change list names `path`. */
const _naming = (lines: Line[], path: string) =>
  lines.filter((l) =>
    [...l.changes?.paths ?? [], ...(l.changes?.refused ?? []).map((r) => r.path)].some((p) =>
      p.endsWith(path)
    ) || (l.changes?.conflicts ?? []).some((c) => c.path === path)
  );

async function _hosted(l: Awaited<ReturnType<typeof hostedLayout>>): Promise<Registry> {
  Deno.env.set("AUDIT_EVERY_CALL_SECRET", "audit-every-call-secret-value");
  const first = await hostedRegistry(l, SERVERS, PERMS);
  await approve(first.registry, "hostile");
  await first.registry.close();
  return (await hostedRegistry(l, SERVERS, PERMS)).registry;
}

Deno.test("hosted: ten calls whose writes are refused at the apply leave ten lines, each with its refusal", async () => {
  await using l = await hostedLayout();
  const registry = await _hosted(l);
  try {
    for (let i = 0; i < 10; i++) {
      const r = await registry.call("write", { path: join(l.ws, ".envrc"), text: `export X=${i}` });
      assert.equal(r.success, false, JSON.stringify(r));
      assert.match(String(r.error), /\.envrc: protected/);
    }
  } finally {
    await registry.close();
  }
  await assert.rejects(Deno.stat(join(l.ws, ".envrc")), Deno.errors.NotFound);
  const lines = await _lines(l.audit);
  const calls = _calls(lines, "write");
  assert.equal(calls.length, 10, JSON.stringify(lines));
  for (const c of calls) {
    assert.equal(c.outcome, "denied");
    assert.equal(c.reason, "changes");
    assert.deepEqual(c.changes?.refused.map((r) => r.path), [".envrc"]);
  }
  assert.deepEqual(lines.filter((x) => x.kind === "refusals"), [], "no call folded into a tally");
});

Deno.test("hosted: a conflicted, a killed, a crashed, a cancelled call and one whose session ended: one line each, with its changes", async () => {
  await using l = await hostedLayout();
  const registry = await _hosted(l);
  const id = crypto.randomUUID();
  try {
    // Conflicted: the user changes the file while the server holds its own version.
    const conflicted = registry.call("write", {
      path: join(l.ws, "conflict.txt"),
      text: `conflict ${id}`,
      ms: 1500,
    });
    await _written("conflict.txt", `conflict ${id}`);
    await Deno.writeTextFile(join(l.ws, "conflict.txt"), "the user's\n");
    const c = await conflicted;
    assert.equal(c.success, false, JSON.stringify(c));
    assert.match(String(c.error), /conflict\.txt \(this call's version/);
    assert.equal(await Deno.readTextFile(join(l.ws, "conflict.txt")), "the user's\n");

    // Killed mid-call: it writes, then never answers; its timeout kills the server.
    const killed = await registry.call(
      "write",
      { path: join(l.ws, "killed.txt"), text: `killed ${id}`, then: "hang" },
      { timeoutMs: 4000 },
    );
    assert.match(String(killed.error), /timed out after 4000 ms/);

    // Cancelled once it has written; the server keeps running.
    const stop = new AbortController();
    const cancelling = registry.call(
      "write",
      { path: join(l.ws, "cancelled.txt"), text: `cancelled ${id}`, then: "hang" },
      { signal: stop.signal, timeoutMs: 60_000 },
    );
    await _written("cancelled.txt", `cancelled ${id}`);
    stop.abort(new Error("the client cancelled"));
    assert.match(String((await cancelling).error), /cancelled$/);

    // Crashed mid-call: it writes, then exits (last of this session: its next start waits).
    const crashed = await registry.call("write", {
      path: join(l.ws, "crashed.txt"),
      text: `crashed ${id}`,
      then: "crash",
    });
    assert.equal(crashed.success, false);

    // The session ends under the call: its server (its own, another session's) stops with it.
    const ending = registry.call(
      "write",
      { path: join(l.ws, "ended.txt"), text: `ended ${id}`, then: "hang" },
      { principal: "session-ending", timeoutMs: 60_000 },
    );
    await _written("ended.txt", `ended ${id}`);
    await registry.endPrincipal("session-ending");
    assert.equal((await ending).success, false);
  } finally {
    await registry.close();
  }
  // Each write reached the tree, and each call's line is the one that lists it.
  for (const name of ["killed", "crashed", "cancelled", "ended"]) {
    assert.equal(await Deno.readTextFile(join(l.ws, `${name}.txt`)), `${name} ${id}`);
  }
  const lines = await _lines(l.audit);
  const calls = _calls(lines, "write");
  assert.equal(calls.length, 5, JSON.stringify(calls));
  const expect: Array<[string, string, string, string?]> = [
    ["conflict.txt", "error", "conflict"],
    ["killed.txt", "error", "timeout"],
    ["crashed.txt", "error", "server"],
    ["cancelled.txt", "error", "cancelled"],
    ["ended.txt", "error", "server", "session-ending"],
  ];
  for (const [path, outcome, reason, session] of expect) {
    const naming = _naming(lines, path);
    assert.equal(naming.length, 1, `${path}: ${JSON.stringify(naming)}`);
    const [line] = naming;
    assert.equal(line.kind, undefined, `${path} is on a call's line, not apart`);
    assert.equal(line.tool, "write");
    assert.deepEqual([line.outcome, line.reason], [outcome, reason], path);
    assert.equal(line.session, session ?? "local");
    if (path === "conflict.txt") assert.deepEqual(line.changes?.conflicts.length, 1);
    else assert.deepEqual(line.changes?.paths, [`+${path}`]);
  }
  assert.deepEqual(lines.filter((x) => x.kind === "refusals"), []);
});

/** A registry of ./fixtures/audit_ran in `isolation`, writing to the workspace, audited. */
async function _plugin(isolation: "process" | "worker") {
  const { ws, base } = await tempLayout();
  const audit = join(base, "audit.jsonl");
  const { registry } = await fixtureRegistry(
    ["audit_ran/ran_tools.ts"],
    // A busy machine may take more than the default 10 s to import the fixture: not what this tests.
    {
      read: ["."],
      write: ["."],
      isolation,
      max_arg_bytes: 4096,
      timeout_ms: 60_000,
      discovery_timeout_ms: 60_000,
    },
    ws,
    {},
    { auditPath: audit, privileges: "rwx" },
  );
  return { ws, base, audit, registry };
}

Deno.test("process sandbox: a call killed mid-call and one whose session ended have their own lines, with their writes", async () => {
  const { ws, audit, registry } = await _plugin("process");
  const id = crypto.randomUUID();
  try {
    const killed = await registry.call(
      "RanWrite",
      { path: "killed.txt", text: `killed ${id}`, ms: 60_000 },
      { timeoutMs: 3000 },
    );
    assert.match(String(killed.error), /timed out after 3000 ms/);
    const ending = registry.call(
      "RanWrite",
      { path: "ended.txt", text: `ended ${id}`, ms: 60_000 },
      { principal: "session-ending", timeoutMs: 60_000 },
    );
    await _written("ended.txt", `ended ${id}`);
    await registry.endPrincipal("session-ending");
    assert.equal((await ending).success, false);
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(join(ws, "killed.txt")), `killed ${id}`);
  assert.equal(await Deno.readTextFile(join(ws, "ended.txt")), `ended ${id}`);
  const lines = await _lines(audit);
  assert.equal(_calls(lines, "RanWrite").length, 2);
  for (const [path, reason] of [["killed.txt", "timeout"], ["ended.txt", "crashed"]]) {
    const naming = _naming(lines, path);
    assert.equal(naming.length, 1, `${path}: ${JSON.stringify(lines)}`);
    assert.equal(naming[0].kind, undefined, `${path} is on its call's line`);
    assert.deepEqual([naming[0].outcome, naming[0].reason], ["error", reason], path);
    assert.deepEqual(naming[0].changes?.paths, [`+${path}`]);
  }
});

for (const isolation of ["process", "worker"] as const) {
  Deno.test(`${isolation} sandbox: calls that ran and were refused by Deno are each written, never only counted`, async () => {
    const { base, audit, registry } = await _plugin(isolation);
    const canary = join(base, "outside.txt");
    try {
      for (let i = 0; i < 3; i++) {
        const r = await registry.call("RanOutside", { path: canary });
        assert.equal(r.success, false, JSON.stringify(r));
      }
      // Control: refusals before a call runs (arguments over the limit) are still counted.
      for (let i = 0; i < 3; i++) await registry.call("RanOutside", { path: "x".repeat(5000) });
    } finally {
      await registry.close();
    }
    await assert.rejects(Deno.stat(canary), Deno.errors.NotFound);
    const lines = await _lines(audit);
    const ran = _calls(lines, "RanOutside").filter((x) => x.reason === "permission");
    assert.equal(ran.length, 3, JSON.stringify(lines));
    for (const x of ran) assert.equal(x.outcome, "denied");
    const early = _calls(lines, "RanOutside").filter((x) => x.reason === "arguments");
    assert.equal(early.length, 1, "the first refusal of its window, in full");
    const tally = lines.find((x) => x.kind === "refusals");
    assert.equal(tally?.reason, "arguments");
    assert.equal(tally?.count, 2);
  });
}
