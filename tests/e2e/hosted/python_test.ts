// A Python MCP server hosted as a "command" server: no Deno flags bound it,
// only corral's namespace (its grant), limits and scrubbed environment.
import assert from "node:assert/strict";
import { join } from "node:path";
import { HOSTED_FIXTURES, PY_STDIO_RPC, pyFixtureServer } from "../../../testing/mod.ts";
import { approve, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";

const PY_SERVER = join(HOSTED_FIXTURES, "py_server.py");

Deno.test("a python3 server reads inside its grant only and sees only its own environment", async () => {
  await using l = await hostedLayout();
  await Deno.writeTextFile(join(l.ws, "in.txt"), "inside");
  Deno.env.set("HOST_ONLY_VARIABLE", "host-only-value");
  const servers = {
    py: { command: pyFixtureServer(PY_SERVER), env: { MODE: "test" } },
  };
  const first = await hostedRegistry(l, servers, { py: { read: ["."] } });
  assert.deepEqual((await approve(first.registry, "py")).sort(), ["py_env", "py_read"]);
  await first.registry.close();
  const { registry } = await hostedRegistry(l, servers, { py: { read: ["."] } });
  try {
    const ok = await registry.call("py_read", { path: join(l.ws, "in.txt") });
    assert.equal(ok.success, true, JSON.stringify(ok));
    assert.match(JSON.stringify(ok.result), /inside/);
    for (const path of [join(l.outside, "canary.txt"), "/etc/shadow", "/proc/1/environ"]) {
      const r = await registry.call("py_read", { path });
      assert.doesNotMatch(JSON.stringify(r), /CANARY-SECRET|host-only-value/);
      if (path !== "/proc/1/environ") assert.equal(r.success, false, path);
    }
    const env = JSON.stringify(await registry.call("py_env", {}));
    assert.match(env, /MODE/);
    assert.doesNotMatch(env, /HOST_ONLY_VARIABLE|host-only-value/);
  } finally {
    await registry.close();
  }
});

Deno.test("a venv's interpreter, or a script of the venv, is a command that works: the venv and its base interpreter are bound read-only", async () => {
  await using l = await hostedLayout();
  const venv = join(l.base, "venvs", "mcp");
  const made = await new Deno.Command("python3", {
    args: ["-m", "venv", "--without-pip", venv],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(made.success, new TextDecoder().decode(made.stderr));
  // A script of the venv, as pip installs one: its shebang is the venv's python.
  const script = join(venv, "bin", "py-mcp-server");
  const source = await Deno.readTextFile(PY_SERVER);
  await Deno.writeTextFile(script, `#!${venv}/bin/python\n${source}`, { mode: 0o755 });
  const servers = {
    interp: { command: pyFixtureServer(PY_SERVER, { python: join(venv, "bin", "python") }) },
    script: { command: [script, PY_STDIO_RPC] },
  };
  const perms = { interp: { read: ["."] }, script: { read: ["."] } };
  const first = await hostedRegistry(l, servers, perms);
  assert.deepEqual((await approve(first.registry, "interp")).sort(), ["py_env", "py_read"]);
  assert.deepEqual((await approve(first.registry, "script")).sort(), ["py_env", "py_read"]);
  await first.registry.close();
  const { registry } = await hostedRegistry(l, servers, perms);
  try {
    // Names collide: the second server's tools are prefixed with its name.
    for (const name of ["py_env", "script_py_env"]) {
      const r = await registry.call(name, {});
      assert.equal(r.success, true, JSON.stringify(r));
      const env = JSON.parse(String(r.result));
      // Python runs as the venv's (its sys.prefix), with the venv's bin first on PATH.
      assert.equal(env.__sys_prefix__, venv, name);
      assert.ok(env.PATH.startsWith(`${join(venv, "bin")}:`), env.PATH);
    }
    // The venv is there, though it is outside the grant (bound read-only as its code).
    const cfg = await registry.call("py_read", { path: join(venv, "pyvenv.cfg") });
    assert.match(JSON.stringify(cfg.result), /home = /);
  } finally {
    await registry.close();
  }
});

Deno.test("a command server's /etc holds corral's own passwd, group, hosts and resolv.conf, none of the host's accounts or names", async () => {
  await using l = await hostedLayout();
  const servers = { py: { command: pyFixtureServer(PY_SERVER) } };
  const first = await hostedRegistry(l, servers, { py: {} });
  await approve(first.registry, "py");
  await first.registry.close();
  const { registry } = await hostedRegistry(l, servers, { py: {} });
  const host = (f: string) => Deno.readTextFileSync(f).split("\n").filter((x) => /^\w/.test(x));
  try {
    const read = async (path: string) => {
      const r = await registry.call("py_read", { path });
      assert.equal(r.success, true, `${path}: ${JSON.stringify(r)}`);
      return String(r.result);
    };
    const passwd = await read("/etc/passwd");
    assert.match(passwd, /^root:x:0:0:root:\/tmp\/home:/m);
    assert.match(passwd, /^nobody:x:65534:/m);
    // Not one of the host's other accounts, groups or names.
    for (const line of host("/etc/passwd")) {
      const name = line.split(":")[0];
      if (!["root", "nobody"].includes(name)) {
        assert.ok(!passwd.includes(`${name}:`), `${name} is in the namespace's passwd`);
      }
    }
    const group = await read("/etc/group");
    for (const line of host("/etc/group")) {
      const name = line.split(":")[0];
      if (!["root", "nogroup"].includes(name)) {
        assert.ok(!group.includes(`${name}:`), `group ${name} is in the namespace's group`);
      }
    }
    assert.equal(
      (await read("/etc/hosts")).trim(),
      "127.0.0.1\tlocalhost\n::1\tip6-localhost ip6-loopback",
    );
    assert.match(await read("/etc/resolv.conf"), /^nameserver 127\.0\.0\.1$/m);
    for (const secret of ["/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key"]) {
      assert.equal((await registry.call("py_read", { path: secret })).success, false, secret);
    }
  } finally {
    await registry.close();
  }
});
