// A read grant of `/` (or of /proc, /dev, /sys, /tmp) never shows the host's
// /proc, /dev, /sys or /tmp: the namespace's own are mounted again over any
// grant that covers them. Attacked with RunBashCode holding `r` of `/` and `x`.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { findBwrap, namespaceArgs } from "../../../core/jail/mod.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const BWRAP = await findBwrap();
if (BWRAP === undefined) throw new Error("wide_grant_test: no working bwrap here");

// What bwrap's --dev makes (and nothing of the host's, such as kmsg, mem, sda, loop0).
const MINIMAL_DEV = new Set([
  "console",
  "core",
  "fd",
  "full",
  "mqueue",
  "null",
  "ptmx",
  "pts",
  "random",
  "shm",
  "stderr",
  "stdin",
  "stdout",
  "tty",
  "urandom",
  "zero",
]);

async function _wideRegistry(ws: string, hidden: string): Promise<Registry> {
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["/", "."], write: ["."] } } }),
    "t.json",
    ws,
  );
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: `${ws}/state/corral/cache`,
    reporter: new Reporter({ sink: () => {}, color: false }),
    trusted: [{ path: hidden, what: "a secret folder", secret: true }],
  });
}

Deno.test("a read grant of / shows no host process, device, /sys, /tmp file nor hidden secret", async () => {
  const { ws } = await tempLayout();
  const canary = `corral_wide_${crypto.randomUUID().replaceAll("-", "")}`;
  // A host process with the canary in its arguments and environment.
  const host = new Deno.Command("bash", {
    args: ["-c", `sleep 600; : ${canary}`],
    env: { WIDE_CANARY: canary },
    stdout: "null",
    stderr: "null",
  }).spawn();
  const tmpName = `corral_wide_tmp_${crypto.randomUUID()}`;
  const hostTmp = `/tmp/${tmpName}`;
  await Deno.writeTextFile(hostTmp, canary);
  const hidden = await Deno.realPath(
    await Deno.makeTempDir({ dir: "/var/tmp", prefix: "corral_hid_" }),
  );
  await Deno.writeTextFile(`${hidden}/secret.txt`, canary);
  const registry = await _wideRegistry(ws, hidden);
  try {
    for (let i = 0; i < 3; i++) {
      const res = await registry.call("RunBashCode", {
        code: [
          "echo SELF_MARKER >/dev/null",
          "echo PIDS $(ls /proc | grep -c '^[0-9]')",
          "for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ /proc/[0-9]*/task/*/cmdline; do",
          "  cat \"$f\" 2>/dev/null | tr '\\0' ' '; echo; done",
          "echo DEV $(ls -A /dev)",
          "echo SYS $(ls -A /sys 2>&1) END",
          "cat /sys/class/net/*/address 2>/dev/null",
          `cat /tmp/${tmpName} 2>/dev/null; echo TMP $(ls -A /tmp) END`,
          `cat ${hidden}/secret.txt 2>/dev/null; echo HID $(ls -A ${hidden}) END`,
          'echo home > "$HOME/h" && echo HOME_OK $HOME',
          "cat /proc/1/mountinfo | grep -c ' /proc ' ; true",
        ].join("\n"),
      });
      assert.equal(res.success, true, res.error);
      const out = String(res.stdout);
      // Positive control: the namespace's own processes were read.
      assert.match(out, /SELF_MARKER/, out);
      assert.ok(!out.includes(canary), `a host secret is visible inside:\n${out}`);
      const pids = Number(out.match(/^PIDS (\d+)$/m)?.[1]);
      assert.ok(pids > 0 && pids < 15, `host processes visible: ${pids} pids\n${out}`);
      const dev = out.match(/^DEV (.*)$/m)![1].split(" ").filter(Boolean);
      assert.ok(dev.length > 0, out);
      for (const d of dev) assert.ok(MINIMAL_DEV.has(d), `host device /dev/${d} visible`);
      assert.match(out, /^SYS\s+END$/m, out);
      assert.doesNotMatch(out, /([0-9a-f]{2}:){5}[0-9a-f]{2}/, out);
      assert.match(out, /^HID\s+END$/m, out);
      const tmp = out.match(/^TMP (.*) END$/m)![1].split(" ");
      assert.ok(!tmp.includes(tmpName) && tmp.includes("home"), out);
      assert.match(out, /^HOME_OK \/tmp\/home$/m, out);
    }
    // The host is untouched and still answers.
    assert.equal(await Deno.readTextFile(hostTmp), canary);
    assert.equal(await Deno.readTextFile(`${hidden}/secret.txt`), canary);
    await assert.rejects(Deno.stat(`${ws}/h`), Deno.errors.NotFound);
    const again = await registry.call("RunBashCode", { code: "echo alive" });
    assert.equal(String(again.stdout).trim(), "alive");
  } finally {
    await registry.close();
    host.kill("SIGKILL");
    await host.status;
    await Deno.remove(hostTmp);
    await Deno.remove(hidden, { recursive: true });
  }
});

Deno.test("corral's held folder, missing when a sandbox with a read grant of / starts, is made first and stays hidden", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${base}/cfg`);
  const grant = { toolsets: { system: { run: ["bash"], read: ["/"] } } };
  await Deno.writeTextFile(`${base}/cfg/permissions.json`, JSON.stringify(grant));
  await Deno.writeTextFile(`${base}/cfg/corral.json`, JSON.stringify({ services: {} }));
  // Not there yet, nor its parent: in a read-only bind of / bwrap could make no mount point
  // (and outside /tmp, which every sandbox has of its own).
  const state = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "corral_state_" });
  const held = `${state}/corral/held`;
  const env = { CORRAL_CONFIG_DIR: `${base}/cfg`, CORRAL_HELD_DIR: held };
  const code = `ls -A ${held} 2>&1; echo LISTED; ls -A ${state}/corral`;
  const res = await runCli(
    ["call", "RunBashCode", "--workspace", ws, "--args", JSON.stringify({ code })],
    { env },
  );
  assert.equal(res.code, 0, res.stdout + res.stderr);
  const out = JSON.parse(res.stdout).stdout as string;
  assert.match(out, /^LISTED$/m, out);
  assert.match(out, /held/, "the held folder is there, hidden by an empty mount");
  assert.equal((await Deno.stat(held)).mode! & 0o777, 0o700);
  // A held set made later by the host is not seen from a sandbox either.
  await Deno.mkdir(`${held}/0123abcd`);
  await Deno.writeTextFile(`${held}/0123abcd/manifest.json`, "{}");
  const later = await runCli(
    ["call", "RunBashCode", "--workspace", ws, "--args", JSON.stringify({ code })],
    { env },
  );
  assert.equal(later.code, 0, later.stdout + later.stderr);
  const seen = JSON.parse(later.stdout).stdout as string;
  assert.doesNotMatch(seen, /0123abcd/, seen);
  await Deno.remove(state, { recursive: true });
});

Deno.test("a grant inside /proc, /dev or /sys binds nothing of the host's; one of /tmp leaves /tmp private", () => {
  const runtime = { exec: "/usr/bin/deno", libDirs: ["/lib64"], denoDir: "/c/deno" };
  const read = ["/proc/1", "/proc", "/dev/kmsg", "/sys/kernel", "/sys", "/tmp", "/"];
  const args = namespaceArgs({
    bwrap: BWRAP!,
    runtime,
    read,
    code: [],
    write: [],
    protect: [],
    hide: [],
    system: true,
    net: false,
    cwd: "/",
  });
  for (const p of ["/proc/1", "/proc", "/dev/kmsg", "/sys/kernel", "/sys"]) {
    assert.ok(!args.some((a, i) => a.endsWith("bind-fd") && args[i + 1] === p), `${p} bound`);
  }
  const tmpBind = args.findIndex((a, i) => a === "--ro-bind-fd" && args[i + 1] === "/tmp");
  assert.ok(
    args.lastIndexOf("/tmp") > tmpBind + 2 && args[args.lastIndexOf("/tmp") - 1] === "--tmpfs",
  );
  // After the grant of `/`: the own /proc, /dev, /sys (empty, read-only) and /tmp again.
  const after = args.slice(args.indexOf("/", args.indexOf("--ro-bind-fd")) + 2).join(" ");
  for (
    const own of ["--proc /proc", "--dev /dev", "--tmpfs /sys --remount-ro /sys", "--tmpfs /tmp"]
  ) {
    assert.ok(after.includes(own), `${own} missing after the grant of /: ${after}`);
  }
});
