// The jail's second wall around hosted MCP servers: a command server that
// tries every refused class from its own process gets EPERM or ENOSYS, its
// subprocesses run behind the filter too, a server granted a syscall by name
// gets that one and shows it, and without a filter none starts; the real npm and PyPI servers still work
// behind it (tests/e2e/hosted/filesystem_test.ts, tests/e2e/hosted/pypi_test.ts and
// the other hosted tests run them so; one is called here as the control).
import assert from "node:assert/strict";
import { join } from "node:path";
import { HOSTED_FIXTURES, pyFixtureServer } from "../../../testing/mod.ts";
import { approve, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";
import { assertFiltered, PROBE, probeCases, probeResult } from "../../_seccomp_probe.ts";

const SERVER = join(
  new URL("../../", import.meta.url).pathname,
  "fixtures",
  "seccomp",
  "probe_server.py",
);
const CASES = probeCases();
const FS = "@modelcontextprotocol/server-filesystem@2026.8.31";

Deno.test("a hosted server's own process tries every refused class: EPERM or ENOSYS, and its subprocesses are filtered too", async () => {
  await using l = await hostedLayout();
  await Deno.writeTextFile(join(l.ws, "a.txt"), "inside\n");
  const servers = {
    probe: { command: pyFixtureServer(SERVER, { args: [PROBE] }) },
    granted: { command: pyFixtureServer(SERVER, { args: [PROBE] }) },
    fs: { npm: FS, args: ["${workspace}"] },
  };
  const perms = {
    probe: {},
    granted: { allow_syscalls: ["unshare", "io_uring_setup"] },
    fs: { read: ["."] },
  };
  const first = await hostedRegistry(l, servers, perms);
  for (const name of ["probe", "granted", "fs"]) await approve(first.registry, name);
  await first.registry.close();
  const { registry } = await hostedRegistry(l, servers, perms);
  try {
    assert.deepEqual(registry.get("seccomp_probe")?.seccomp, { filter: "on", except: [] });
    const r = await registry.call("seccomp_probe", { cases: JSON.stringify(CASES) });
    assert.equal(r.success, true, JSON.stringify(r));
    assertFiltered(probeResult(String(r.result)), CASES, "hosted server");
    // A server granted two syscalls by name: those reach the kernel, the rest stay refused.
    const granted = registry.get("granted_seccomp_probe")!;
    assert.deepEqual(granted.seccomp, { filter: "on", except: ["unshare", "io_uring_setup"] });
    const g = probeResult(
      String(
        (await registry.call("granted_seccomp_probe", { cases: JSON.stringify(CASES) })).result,
      ),
    );
    const errno = (name: string) => g.calls.find((c) => c.name === name)!.errno;
    assert.equal(errno("unshare"), 22); // EINVAL: its bad flags reached the kernel
    assert.equal(errno("io_uring_setup"), 14); // EFAULT
    assert.equal(errno("setns"), 1);
    assert.equal(errno("ptrace"), 1);
    assert.equal(errno("socket(AF_VSOCK)"), 1);
    assert.equal(g.seccomp, "2");
    // The audit records the grant with each call of that server.
    const lines = (await Deno.readTextFile(l.audit)).trim().split("\n").map((x) => JSON.parse(x));
    assert.equal(
      lines.find((x) => x.tool === "granted_seccomp_probe")?.seccomp,
      "on, except unshare, io_uring_setup",
    );
    assert.equal(lines.find((x) => x.tool === "seccomp_probe")?.seccomp, "on");
    // The control: a real npm server (Deno, node's libraries) behind the same filter still serves.
    const read = await registry.call("read_text_file", { path: join(l.ws, "a.txt") });
    assert.equal(read.success, true, JSON.stringify(read));
    assert.match(JSON.stringify(read.result), /inside/);
  } finally {
    await registry.close();
  }
  // Fail closed: where the filter cannot be had, no hosted server starts, and each says why.
  const none = await hostedRegistry(l, servers, perms, {}, {
    seccomp: { dir: join(l.base, "no-filter"), python: "/nonexistent/python3" },
  });
  try {
    for (const name of ["seccomp_probe", "read_text_file"]) {
      const t = none.registry.list().find((x) => x.name === name)!;
      assert.equal(t.status, "skipped", name);
      assert.match(t.reason!, /second wall.*\/nonexistent\/python3.*"seccomp": "off" in servers\./);
    }
    const r = await none.registry.call("seccomp_probe", { cases: "[]" });
    assert.equal(r.success, false);
    assert.deepEqual(none.registry.hosted.states(), [], "no server was started");
  } finally {
    await none.registry.close();
  }
});

/** The MCP SDK's PyPI package, as tests/e2e/hosted/pypi_test.ts pins it. */
const MCP_SHA256 = "dd0c44c089d16453e8ae31a3877a0054d7a2314caaa81f5e0541b9b1734b2377";

Deno.test("the real npm and PyPI servers run behind the filter (seen from the host: Seccomp 2 in every process of their namespaces) and serve", async () => {
  await using l = await hostedLayout();
  await Deno.writeTextFile(join(l.ws, "a.txt"), "inside\n");
  const servers = {
    fs: { npm: FS, args: ["${workspace}"] },
    sdk: {
      pypi: "mcp==2.3.0",
      sha256: MCP_SHA256,
      command: [join(HOSTED_FIXTURES, "mcp_sdk_server.py")],
    },
  };
  const perms = { fs: { read: ["."] }, sdk: { read: ["."] } };
  const first = await hostedRegistry(l, servers, perms);
  for (const name of ["fs", "sdk"]) await approve(first.registry, name);
  await first.registry.close();
  const { registry } = await hostedRegistry(l, servers, perms);
  try {
    for (const [tool, args] of [["read_text_file", {}], ["sdk_read", {}]] as const) {
      const r = await registry.call(tool, { ...args, path: join(l.ws, "a.txt") });
      assert.equal(r.success, true, `${tool}: ${JSON.stringify(r)}`);
      assert.match(JSON.stringify(r.result), /inside/);
    }
    // Both servers are alive now: every process working in the workspace is one of theirs.
    const procs = _inWorkspace(l.ws);
    assert.ok(procs.some((p) => p.cmdline.includes("server-filesystem")), JSON.stringify(procs));
    assert.ok(procs.some((p) => p.cmdline.includes("mcp_sdk_server.py")), JSON.stringify(procs));
    for (const p of procs) assert.equal(p.seccomp, "2", p.cmdline);
  } finally {
    await registry.close();
  }
});

/** This machine's processes whose working folder is `ws`, with their seccomp mode. */
function _inWorkspace(ws: string): Array<{ cmdline: string; seccomp: string }> {
  const out = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      if (Deno.readLinkSync(`/proc/${e.name}/cwd`) !== ws) continue;
      const cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).replaceAll("\0", " ");
      const status = Deno.readTextFileSync(`/proc/${e.name}/status`);
      out.push({ cmdline, seccomp: status.match(/^Seccomp:\s*(\d)/m)?.[1] ?? "?" });
    } catch { /* gone, or not ours to read */ }
  }
  return out;
}
