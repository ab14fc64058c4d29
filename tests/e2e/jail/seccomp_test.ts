// The jail's second wall (core/seccomp/), attacked from jailed python and
// bash: every refused class answers EPERM or ENOSYS, while the same calls
// without the filter reach the kernel (the control); threads, fork and
// sockets still work; every process of every sandbox kind runs behind it; a
// missing or unloadable filter fails closed; a granted syscall is shown and
// audited. The hosted server's side is tests/e2e/hosted/seccomp_test.ts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { findBwrap } from "../../../core/jail/mod.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { registryBanner } from "../../../core/registry/banner.ts";
import { Registry } from "../../../core/registry/registry.ts";
import type { RegistryOptions } from "../../../core/registry/_registry_options.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";
import { tempLayout } from "../../_helpers.ts";
import {
  assertFiltered,
  assertUnfiltered,
  PROBE,
  probeCases,
  probeResult,
} from "../../_seccomp_probe.ts";

// Fail closed here too: a machine without bwrap fails these tests (CI installs it).
if (await findBwrap() === undefined) throw new Error("seccomp_test: no working bwrap here");

const CASES = probeCases();
const PROBE_CODE = `${await Deno.readTextFile(PROBE)}\nprint(json.dumps(probe(json.loads(${
  JSON.stringify(JSON.stringify(CASES))
}))))\n`;

async function system(
  ws: string,
  entry: Record<string, unknown>,
  options: Partial<RegistryOptions> = {},
): Promise<{ registry: Registry; lines: string[] }> {
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { system: { run: ["bash", "python3"], read: ["."], write: ["."], ...entry } },
    }),
    join(ws, "..", "permissions.json"),
    ws,
  );
  const lines: string[] = [];
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    ...options,
  });
  return { registry, lines };
}

async function run(registry: Registry, tool: string, code: string): Promise<string> {
  const r = await registry.call(tool, { code });
  assert.equal(r.success, true, JSON.stringify(r));
  return `${r.stdout}\n${r.stderr}`;
}

Deno.test("jailed python: each refused class answers EPERM or ENOSYS; without the filter the same calls reach the kernel", async () => {
  const { ws } = await tempLayout();
  const on = await system(ws, {});
  const off = await system(ws, { seccomp: "off" });
  try {
    assert.deepEqual(on.registry.get("RunPythonCode")?.seccomp, { filter: "on", except: [] });
    assertFiltered(
      probeResult(await run(on.registry, "RunPythonCode", PROBE_CODE)),
      CASES,
      "python",
    );
    // The control: the filter, not the kernel, gave those answers.
    assertUnfiltered(
      probeResult(await run(off.registry, "RunPythonCode", PROBE_CODE)),
      CASES,
      "python, filter off",
    );
    assert.ok(
      registryBanner(off.registry).some((l) =>
        /WITHOUT the jail's syscall filter \("seccomp": "off"/.test(l)
      ),
    );
  } finally {
    await on.registry.close();
    await off.registry.close();
  }
});

Deno.test("jailed bash: no capability, no nested namespace, no mount, and its python subprocess is refused alike", async () => {
  const { ws } = await tempLayout();
  await Deno.copyFile(PROBE, join(ws, "probe.py"));
  const { registry } = await system(ws, { read: ["."], write: ["."] });
  try {
    const out = await run(
      registry,
      "RunBashCode",
      `grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; ` +
        `unshare -U true; echo "userns=$?"; unshare -m true; echo "mountns=$?"; ` +
        `mkdir -p m; mount -t tmpfs none m; echo "mount=$?"; ` +
        `python3 probe.py '${JSON.stringify(CASES)}'`,
    );
    // Root of a user namespace of its own, holding no capability, no new privileges.
    for (const cap of ["CapEff", "CapPrm", "CapBnd", "CapAmb"]) {
      assert.match(out, new RegExp(`${cap}:\\s+0{16}\\n`), cap);
    }
    assert.match(out, /NoNewPrivs:\s+1/);
    assert.match(out, /userns=1/);
    assert.match(out, /mountns=1/);
    assert.match(out, /mount=(1|32)/);
    assert.match(out, /unshare: unshare failed: Operation not permitted/);
    assertFiltered(probeResult(out), CASES, "bash's python");
  } finally {
    await registry.close();
  }
});

Deno.test("Seccomp: 2 in every process of a sandbox: pid 1, the runtime, bash, a background process an earlier call left, discovery, the tree applier", async () => {
  const { ws } = await tempLayout();
  const mark = `corral-bg-${crypto.randomUUID().slice(0, 8)}`;
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } },
      plugins: { status: { run: ["sh"] } },
    }),
    "test.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
    sources: [{
      id: "plugin:status",
      kind: "plugin",
      modules: [`${FIXTURES}seccomp/discovery_status.ts`],
      policy: policy.plugin("status"),
    }],
  });
  try {
    // Discovery: the sandbox's Deno and its subprocess.
    const seen = registry.get("DiscoveryStatus")?.description ?? "";
    assert.match(seen, /^seen at discovery: Seccomp: 2 Seccomp: 2$/, seen);
    // A call leaves a process running; the next call finds it, still behind the filter.
    await run(
      registry,
      "RunBashCode",
      `(exec -a ${mark} sleep 300) >/dev/null 2>&1 & echo x > w.txt`,
    );
    const out = await run(
      registry,
      "RunBashCode",
      `for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null | cut -c1-60); ` +
        `[ -n "$c" ] && echo "proc $(basename $p) $(grep Seccomp: $p/status | tr -d '\\t') $c"; done`,
    );
    const procs = out.split("\n").filter((l) => l.startsWith("proc "));
    assert.ok(procs.some((l) => l.includes(mark)), out);
    assert.ok(procs.some((l) => l.startsWith("proc 1 ")), out); // pid 1 of the namespace
    assert.ok(procs.some((l) => / (deno|\S*\/deno) /.test(l)), out); // the sandbox's runtime
    for (const l of procs) assert.match(l, /^proc \d+ Seccomp:2 /, l);
    // The tree applier that wrote w.txt (corral's own code, jailed as a tool is).
    assert.equal(await Deno.readTextFile(join(ws, "w.txt")), "x\n");
    const appliers = _hostProcesses(`${ROOT}core/layers/tree_applier.ts`, ws);
    assert.ok(appliers.length > 0, "the applier runs while the sandbox lives");
    for (const a of appliers) assert.equal(a.seccomp, "2", a.cmdline);
  } finally {
    await registry.close();
  }
});

/** Processes of this machine whose command line holds `text` and that work in `cwd`. */
function _hostProcesses(text: string, cwd: string): Array<{ cmdline: string; seccomp: string }> {
  const out = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).replaceAll("\0", " ");
      if (!cmdline.includes(text) || cmdline.includes("bwrap")) continue;
      const status = Deno.readTextFileSync(`/proc/${e.name}/status`);
      // Only the process that runs the code: not the launcher's bash around it.
      if (!/^\S*deno /.test(cmdline) || Deno.readLinkSync(`/proc/${e.name}/cwd`) !== cwd) continue;
      out.push({ cmdline, seccomp: status.match(/^Seccomp:\s*(\d)/m)?.[1] ?? "?" });
    } catch { /* gone */ }
  }
  return out;
}

Deno.test("fail closed: without a filter, tools that hold commands do not load and say why; a filter bwrap cannot load stops the start", async () => {
  const { base, ws } = await tempLayout();
  const none = await system(ws, {}, {
    seccomp: { dir: join(base, "f1"), python: "/nonexistent/python3" },
  });
  try {
    const t = none.registry.list().find((x) => x.name === "RunBashCode")!;
    assert.equal(t.status, "skipped");
    assert.match(
      t.reason!,
      /second wall.*\/nonexistent\/python3.*python3-seccomp.*"seccomp": "off" in toolsets\.system/,
    );
    const r = await none.registry.call("RunBashCode", { code: "echo ran" });
    assert.equal(r.success, false);
    assert.doesNotMatch(JSON.stringify(r), /"ran/);
  } finally {
    await none.registry.close();
  }
  // A filter made, then replaced by bytes that are no program: the next jail does not start,
  // and says why; a later start proves the filter again and makes it anew.
  const dir = join(base, "f2");
  const { registry } = await system(ws, {}, { seccomp: { dir } });
  try {
    assert.equal((await registry.call("RunBashCode", { code: "echo ok" })).success, true);
    assert.equal(registry.get("RunBashCode")!.seccomp?.filter, "on");
    for (const e of Deno.readDirSync(dir)) {
      Deno.writeFileSync(join(dir, e.name, "refuse.bpf"), new Uint8Array(12));
    }
    // Another principal's sandbox starts only now.
    const r = await registry.call("RunBashCode", { code: "echo ran" }, { principal: "other" });
    assert.equal(r.success, false, JSON.stringify(r));
    assert.doesNotMatch(JSON.stringify(r), /"ran/);
    assert.match(JSON.stringify(r), /bwrap: Invalid seccomp data/);
  } finally {
    await registry.close();
  }
  const { registry: again } = await system(ws, {}, { seccomp: { dir } });
  try {
    const r = await again.call("RunBashCode", { code: "grep Seccomp: /proc/self/status" });
    assert.match(String(r.stdout), /Seccomp:\s+2/, JSON.stringify(r));
  } finally {
    await again.close();
  }
});
