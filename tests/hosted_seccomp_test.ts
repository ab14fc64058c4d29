// The jail's second wall around hosted MCP servers: a command server that
// tries every refused class from its own process gets EPERM or ENOSYS, its
// subprocesses run behind the filter too, a server granted a syscall by name
// gets that one and shows it; the real npm and PyPI servers still work
// behind it (tests/hosted_filesystem_test.ts, tests/hosted_pypi_test.ts and
// the other hosted tests run them so; one is called here as the control).
import assert from "node:assert/strict";
import { join } from "node:path";
import { approve, hostedLayout, hostedRegistry } from "./_hosted_helpers.ts";
import { assertFiltered, PROBE, probeCases, probeResult } from "./_seccomp_probe.ts";

const SERVER = join(
  new URL(".", import.meta.url).pathname,
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
    probe: { command: ["python3", SERVER, PROBE] },
    granted: { command: ["python3", SERVER, PROBE] },
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
});
