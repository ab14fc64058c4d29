// A PyPI server for real: corral installs mcp==2.3.0 (the official MCP Python
// SDK) with its dependencies from this machine's package index into a private
// venv, checked against the wheel's published SHA-256, and hosts a server
// written against that SDK (tests/fixtures/hosted/mcp_sdk_server.py) run by
// the venv's python3 in corral's namespace. Attacks: reads and writes outside
// the grant and into its own venv, the host's environment, a wrong sha256, and
// a venv changed after its install (a modified module, a planted .pth, a
// retargeted interpreter), each of which must refuse the start.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { parseConfig } from "../../../core/config/corral_config.ts";
import {
  installDir,
  installed,
  type InstallRecord,
  installServer,
} from "../../../core/hosted/install.ts";
import { HOSTED_FIXTURES } from "../../../testing/mod.ts";
import {
  approve,
  type HostedLayout,
  hostedLayout,
  hostedRegistry,
  SERVERS_DIR,
} from "../../_hosted_helpers.ts";

/** The published SHA-256 of mcp-2.3.0-py3-none-any.whl (its index lists the same). */
const MCP_SHA256 = "dd0c44c089d16453e8ae31a3877a0054d7a2314caaa81f5e0541b9b1734b2377";
const SDK_SERVER = join(HOSTED_FIXTURES, "mcp_sdk_server.py");

function sdkServers(sha256 = MCP_SHA256) {
  return {
    sdk: {
      pypi: "mcp==2.3.0",
      sha256,
      command: [SDK_SERVER],
      env: { MODE: "test" },
      confirm: { sdk_write: false },
    },
  };
}

const PERMS = { sdk: { read: ["."], write: ["."] } };

/** The shared install (.ci/run makes it ahead); a missing index fails with what is missing. */
async function mcpInstalled(): Promise<InstallRecord> {
  const [entry] = parseConfig(JSON.stringify({ servers: sdkServers() }), "/t/corral.json").servers;
  try {
    return (await installServer(entry))!;
  } catch (err) {
    throw new Error(
      `tests/e2e/hosted/pypi_test.ts needs python3 (with venv) and a Python package index that ` +
        `holds mcp==2.3.0 and its dependencies (on these machines pip's config: ` +
        `extra-index-url file:///opt/pypi/simple, find-links /opt/wheels): ${
          (err as Error).message
        }`,
    );
  }
}

async function sitePackages(venv: string): Promise<string> {
  for await (const e of Deno.readDir(join(venv, "lib"))) {
    if (e.name.startsWith("python3")) return join(venv, "lib", e.name, "site-packages");
  }
  throw new Error(`no lib/python3.*/site-packages in ${venv}`);
}

Deno.test("pypi server: mcp==2.3.0 installed pinned with every dependency recorded", async () => {
  const r = await mcpInstalled();
  assert.equal(r.kind, "pypi");
  assert.equal(r.version, "2.3.0");
  assert.equal(r.sha256, MCP_SHA256);
  assert.match(r.tree ?? "", /^sha256:[0-9a-f]{64}$/);
  const [entry] = parseConfig(JSON.stringify({ servers: sdkServers() }), "/t/c.json").servers;
  assert.equal(r.dir, join(installDir(entry, SERVERS_DIR), "venv"));
  const names = new Map(
    r.distributions!.map((d) => [d.name.toLowerCase().replace(/[-_.]+/g, "-"), d]),
  );
  for (const dep of ["mcp", "pydantic", "pydantic-core", "anyio", "starlette", "jsonschema"]) {
    assert.ok(names.has(dep), `${dep} missing from ${[...names.keys()]}`);
    assert.match(names.get(dep)!.version, /^\d+(\.\d+)*/);
    assert.match(names.get(dep)!.record, /^sha256:[0-9a-f]{64}$/);
  }
  assert.equal(names.get("mcp")!.version, "2.3.0");
  assert.equal(r.integrity, names.get("mcp")!.record.replace("sha256:", "sha256-record:"));
  // Each recorded hash is that of the distribution's RECORD as it lies in the venv.
  const site = await sitePackages(r.dir);
  for (
    const [dist, name] of [["mcp-2.3.0", "mcp"], [
      `pydantic-${names.get("pydantic")!.version}`,
      "pydantic",
    ]]
  ) {
    const bytes = await Deno.readFile(join(site, `${dist}.dist-info`, "RECORD"));
    assert.equal(
      names.get(name)!.record,
      `sha256:${createHash("sha256").update(bytes).digest("hex")}`,
    );
  }
});

Deno.test("pypi server (mcp 2.x SDK): reads and writes inside its grant only, never its venv, sees only its own environment", async () => {
  const record = await mcpInstalled();
  await using l = await hostedLayout();
  await Deno.writeTextFile(join(l.ws, "in.txt"), "inside");
  Deno.env.set("HOST_ONLY_VARIABLE", "host-only-value");
  const first = await hostedRegistry(l, sdkServers(), PERMS);
  assert.deepEqual((await approve(first.registry, "sdk")).sort(), [
    "sdk_env",
    "sdk_read",
    "sdk_write",
  ]);
  await first.registry.close();
  const { registry } = await hostedRegistry(l, sdkServers(), PERMS);
  const module = join(await sitePackages(record.dir), "mcp", "__init__.py");
  const before = await Deno.readTextFile(module);
  try {
    const ok = await registry.call("sdk_read", { path: join(l.ws, "in.txt") });
    assert.equal(ok.success, true, JSON.stringify(ok));
    assert.match(JSON.stringify(ok.result), /inside/);
    for (const path of [join(l.outside, "canary.txt"), "/etc/shadow"]) {
      const r = await registry.call("sdk_read", { path });
      assert.equal(r.success, false, `${path}: ${JSON.stringify(r)}`);
      assert.doesNotMatch(JSON.stringify(r), /CANARY-SECRET|root:/);
    }
    const w = await registry.call("sdk_write", { path: join(l.ws, "out.txt"), text: "written" });
    assert.equal(w.success, true, JSON.stringify(w));
    assert.equal(await Deno.readTextFile(join(l.ws, "out.txt")), "written");
    // Outside the grant, and its own code (the venv is bound read-only): refused.
    for (const path of [join(l.outside, "canary.txt"), module, join(record.dir, "evil.pth")]) {
      const r = await registry.call("sdk_write", { path, text: "import os  # planted" });
      assert.equal(r.success, false, `${path}: ${JSON.stringify(r)}`);
    }
    assert.equal(await Deno.readTextFile(join(l.outside, "canary.txt")), "CANARY-SECRET\n");
    assert.equal(await Deno.readTextFile(module), before);
    await assert.rejects(Deno.stat(join(record.dir, "evil.pth")), Deno.errors.NotFound);

    const env = await registry.call("sdk_env", {});
    assert.equal(env.success, true, JSON.stringify(env));
    // The SDK answers with structured content: {"result": "<the JSON text>"}.
    const vars = JSON.parse((env.result as { result: string }).result);
    assert.equal(vars.MODE, "test", JSON.stringify(env.result));
    const allowed = [
      "PATH",
      "HOME",
      "LANG",
      "NO_COLOR",
      "DENO_NO_UPDATE_CHECK",
      "PYTHONDONTWRITEBYTECODE",
      "MODE",
      // Set by the launcher's bash, not taken from the host.
      "PWD",
      "SHLVL",
    ];
    for (const k of Object.keys(vars)) {
      assert.ok(allowed.includes(k), `host variable ${k} reached it`);
    }
    assert.doesNotMatch(JSON.stringify(env), /HOST_ONLY_VARIABLE|host-only-value/);
  } finally {
    await registry.close();
  }
});

Deno.test("pypi server: a wrong sha256 refuses the install, naming the server and both hashes", async () => {
  await mcpInstalled();
  const root = await Deno.makeTempDir({ prefix: "corral_pypi_" });
  try {
    const wrong = MCP_SHA256.slice(0, -4) + "0000";
    const [entry] = parseConfig(
      JSON.stringify({ servers: { bad: { ...sdkServers(wrong).sdk } } }),
      "/t/corral.json",
    ).servers;
    const err = await installServer(entry, root).then(() => undefined, (e: Error) => e);
    assert.ok(err, "the install with a wrong sha256 succeeded");
    assert.match(err.message, /^Cannot install server "bad" \(mcp==2\.3\.0\): /);
    assert.match(err.message, new RegExp(`has sha256 ${MCP_SHA256}`));
    assert.match(err.message, new RegExp(`expects ${wrong}`));
    assert.match(String(installed(entry, root)), /not installed/);
    // Another pin is another install: the shared one (the right pin) does not count for it.
    assert.match(String(installed(entry, SERVERS_DIR)), /mcp==2\.3\.0 is not installed/);
    // Nothing half-installed is left behind.
    await assert.rejects(Deno.stat(installDir(entry, root)), Deno.errors.NotFound);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/** A copy of the shared install under `root`, its record pointing at the copy. */
async function copyInstall(record: InstallRecord, root: string): Promise<InstallRecord> {
  const from = join(record.dir, "..");
  const to = join(root, from.split("/").at(-1)!);
  const cp = await new Deno.Command("cp", { args: ["-a", from, to] }).output();
  assert.ok(cp.success, new TextDecoder().decode(cp.stderr));
  const copy = { ...record, dir: join(to, "venv") };
  await Deno.writeTextFile(join(to, "install.json"), JSON.stringify(copy, null, 2));
  return copy;
}

async function refusedAfter(
  l: HostedLayout,
  root: string,
  tamper: () => Promise<void>,
  undo: () => Promise<void>,
): Promise<string> {
  // Created (and its install checked) before the change: the start is what must refuse.
  const { registry } = await hostedRegistry(l, sdkServers(), PERMS, {}, { serversDir: root });
  try {
    await tamper();
    const r = await registry.call("sdk_read", { path: join(l.ws, "in.txt") });
    assert.equal(r.success, false, JSON.stringify(r));
    return JSON.stringify(r);
  } finally {
    await registry.close();
    await undo();
  }
}

Deno.test("pypi server: a venv changed after its install refuses to start", async () => {
  const shared = await mcpInstalled();
  await using l = await hostedLayout();
  const root = join(l.base, "servers");
  await Deno.mkdir(root);
  const copy = await copyInstall(shared, root);
  await Deno.writeTextFile(join(l.ws, "in.txt"), "inside");
  const first = await hostedRegistry(l, sdkServers(), PERMS, {}, { serversDir: root });
  assert.equal((await approve(first.registry, "sdk")).length, 3);
  await first.registry.close();

  const site = await sitePackages(copy.dir);
  const module = join(site, "mcp", "__init__.py");
  const original = await Deno.readTextFile(module);
  const ran = join(l.ws, "tampered-code-ran");
  const payload = `\nopen(${JSON.stringify(ran)}, "w").write("x")\n`;
  const rel = (p: string) => p.slice(copy.dir.length + 1).replaceAll(".", "\\.");
  const python = join(copy.dir, "bin", "python3");
  const target = await Deno.readLink(python);
  const cases: Array<[string, () => Promise<void>, () => Promise<void>]> = [
    [
      `${rel(module)} modified`,
      () => Deno.writeTextFile(module, original + payload),
      () => Deno.writeTextFile(module, original),
    ],
    [
      `${rel(join(site, "zz_evil.pth"))} added`,
      () => Deno.writeTextFile(join(site, "zz_evil.pth"), `import os;${payload.trim()}\n`),
      () => Deno.remove(join(site, "zz_evil.pth")),
    ],
    [
      "bin/python3 modified",
      async () => {
        await Deno.remove(python);
        await Deno.symlink("/bin/sh", python);
      },
      async () => {
        await Deno.remove(python);
        await Deno.symlink(target, python);
      },
    ],
  ];
  for (const [what, tamper, undo] of cases) {
    const text = await refusedAfter(l, root, tamper, undo);
    assert.match(
      text,
      /server \\"sdk\\" will not start: its venv .* changed after it was installed/,
    );
    assert.match(text, new RegExp(what));
    assert.match(
      text,
      /refusing to start it: run `corral servers install sdk` to install it again/,
    );
    await assert.rejects(Deno.stat(ran), Deno.errors.NotFound, `${what}: the tampered code ran`);
  }
  // Undone, the same copy starts again: the refusals were the changes' doing.
  const { registry } = await hostedRegistry(l, sdkServers(), PERMS, {}, { serversDir: root });
  try {
    const ok = await registry.call("sdk_read", { path: join(l.ws, "in.txt") });
    assert.equal(ok.success, true, JSON.stringify(ok));
  } finally {
    await registry.close();
  }
});
