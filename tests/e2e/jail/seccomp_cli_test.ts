// The jail's second wall as an operator meets it: a syscall granted by name in
// permissions.json (let through, shown by corral list, recorded in the
// audit; a wrong name refused naming it and its file), and a machine where
// the filter cannot be made (corral call refuses, corral list and corral
// config say why and how to opt out).
import assert from "node:assert/strict";
import { join } from "node:path";
import { parsePolicy } from "../../../core/config/policy.ts";
import { ARCH_TABLES } from "../../../core/seccomp/mod.ts";
import { toolTable } from "../../../core/cli/_tool_table.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

Deno.test("a refused syscall granted by name is let through, that one only, and shown and audited", async () => {
  const { base, ws } = await tempLayout();
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        system: {
          run: ["bash", "python3"],
          read: ["."],
          write: ["."],
          allow_syscalls: ["unshare", "io_uring_setup"],
        },
      },
    }),
    join(base, "permissions.json"),
    ws,
  );
  const audit = join(base, "audit.jsonl");
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    auditPath: audit,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  try {
    const t = registry.get("RunBashCode")!;
    assert.deepEqual(t.seccomp, { filter: "on", except: ["unshare", "io_uring_setup"] });
    assert.match(toolTable([t], false)[1], /\+ seccomp filter except unshare, io_uring_setup/);
    const n = ARCH_TABLES[Deno.build.arch].numbers;
    await Deno.writeTextFile(
      join(ws, "errnos.py"),
      "import ctypes\nl = ctypes.CDLL(None, use_errno=True)\n" +
        "def e(n, *a):\n    ctypes.set_errno(0)\n    l.syscall(n, *a)\n    return ctypes.get_errno()\n" +
        `print("errnos", e(${n.io_uring_setup}, 1, 1), e(${n.ptrace}, 3, 0, 0, 0), e(${n.bpf}, 0, 1, 0))\n`,
    );
    const r = await registry.call("RunBashCode", {
      code:
        "unshare -U true && echo userns-made; grep Seccomp: /proc/self/status; python3 errnos.py",
    });
    assert.equal(r.success, true, JSON.stringify(r));
    assert.match(String(r.stdout), /userns-made/);
    assert.match(String(r.stdout), /Seccomp:\s+2/);
    // io_uring_setup reaches the kernel (EFAULT); ptrace and bpf stay refused (EPERM).
    assert.match(String(r.stdout), /errnos 14 1 1/);
    const line = (await Deno.readTextFile(audit)).trim().split("\n").map((l) => JSON.parse(l))
      .find((l) => l.tool === "RunBashCode");
    assert.equal(line?.seccomp, "on, except unshare, io_uring_setup");
  } finally {
    await registry.close();
  }
  // A name no rule refuses: a clear error naming the value, the key and the file.
  assert.throws(
    () =>
      parsePolicy(
        JSON.stringify({ servers: { b: { allow_syscalls: ["unshare", "unshar"] } } }),
        "/etc/corral/permissions.json",
        ws,
      ),
    (e: Error) =>
      e.message.includes("/etc/corral/permissions.json") &&
      e.message.includes("servers.b.allow_syscalls[1]") &&
      e.message.includes('"unshar" is no syscall') && e.message.includes("did you mean: unshare"),
  );
  // Never for every toolset at once.
  assert.throws(
    () => parsePolicy(JSON.stringify({ defaults: { allow_syscalls: ["bpf"] } }), "p.json", ws),
    /defaults/,
  );
});

Deno.test("where the filter cannot be made: corral call refuses, list and config say why and name the opt-out", async () => {
  const { base, ws } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/permissions.json`,
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
  );
  const env = {
    CORRAL_SECCOMP_PYTHON: "/nonexistent/python3",
    CORRAL_CONFIG_DIR: join(base, "config"),
  };
  const args = ["--permissions", `${base}/permissions.json`];
  const call = await runCli(["call", "RunBashCode", ...args, "--args", '{"code":"echo ran"}'], {
    cwd: ws,
    env,
  });
  assert.equal(call.code, 1, call.stderr);
  assert.doesNotMatch(call.stdout, /"ran/);
  assert.match(call.stdout, /not loaded: needs the jail's second wall, a syscall filter/);
  assert.match(call.stdout, /python3-seccomp/);
  assert.match(call.stdout, /"seccomp\\": \\"off\\" in toolsets\.system/);
  // The banner says it once, for every tool it keeps from loading.
  assert.match(
    call.stderr,
    /Warning: \d+ tools not loaded \([^)]*RunBashCode[^)]*\): needs the jail's second wall/,
  );
  const list = await runCli(["list", "--json", ...args], { cwd: ws, env });
  const tools = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
  const bash = tools.find((t) => t.name === "RunBashCode")!;
  assert.equal(bash.status, "skipped");
  assert.equal(bash.seccomp, null);
  const config = await runCli(["config", ...args], { cwd: ws, env });
  assert.match(
    config.stdout,
    /syscall filter \(the second wall\): MISSING: \/nonexistent\/python3 cannot be run/,
  );
  assert.match(config.stdout, /opt out with "seccomp": "off"/);
  // The same machine with libseccomp at hand: the filter is made, and list shows it.
  const made = await runCli(["list", "--json", ...args], {
    cwd: ws,
    env: { CORRAL_CONFIG_DIR: env.CORRAL_CONFIG_DIR },
  });
  const on = (JSON.parse(made.stdout) as Array<Record<string, unknown>>).find((t) =>
    t.name === "RunBashCode"
  )!;
  assert.deepEqual(on.seccomp, { filter: "on", except: [] });
  assert.match(
    made.stderr + (await runCli(["list", ...args], { cwd: ws })).stdout,
    /mounts = grant, seccomp filter; /,
  );
});
