// The launcher as a program of its own (./launch.sh, ./launch_stage.sh), run by path with a
// stand-in for bwrap that reports what it was handed: the descriptors it gets are the paths
// opened and checked, a path reached through a symlink or that is no file or folder is refused
// before bwrap runs, and a compiled corral's copy written out of it runs its second stage from
// beside itself; a copy changed in the store is never run.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  launcherCommand,
  NETNS_ARG,
  OVERLAY_ARG,
  REFUSED_EXIT,
  REFUSED_MARK,
  SECCOMP_ARG,
  VERIFY_ARG,
} from "./launcher.ts";
import { selfFile, shellProgram } from "../base/self_run.ts";

/** A bwrap stand-in: `--args FD -- COMMAND…`; prints its arguments, its net namespace, its fds. */
const _FAKE_BWRAP = `#!/bin/bash
[ "$1" = --args ] || exit 9
tr '\\0' '\\n' </proc/self/fd/"$2"
echo "netns $(readlink /proc/self/ns/net)"
for f in /proc/self/fd/*; do echo "fd \${f##*/} $(readlink "$f")"; done
touch "$CANARY"
`;

interface _Run {
  code: number;
  out: string;
  err: string;
}

async function _launch(command: string[], args: string[], canary: string): Promise<_Run> {
  const out = await new Deno.Command(command[0], {
    args: [...command.slice(1), ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", CANARY: canary },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout), err: dec.decode(out.stderr) };
}

async function _setup(): Promise<{ base: string; fake: string; canary: string }> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_launcher_" }));
  const fake = join(base, "fake-bwrap");
  await Deno.writeTextFile(fake, _FAKE_BWRAP, { mode: 0o755 });
  return { base, fake, canary: join(base, "bwrap-ran") };
}

/** The descriptor the stand-in got in place of `dest`'s PATH, and what it is open on. */
function _boundFd(out: string, option: string, dest: string): string | undefined {
  const lines = out.split("\n");
  const at = lines.findIndex((l, i) => l === option && lines[i + 2] === dest);
  if (at < 0) return undefined;
  const fd = lines[at + 1];
  return lines.find((l) => l.startsWith(`fd ${fd} `))?.slice(`fd ${fd} `.length);
}

Deno.test("launch.sh spells the pseudo-options and the refusal as launcher.ts exports them", async () => {
  const launch = await Deno.readTextFile(selfFile("core/jail/launch.sh"));
  const stage = await Deno.readTextFile(selfFile("core/jail/launch_stage.sh"));
  for (const option of [VERIFY_ARG, OVERLAY_ARG, NETNS_ARG, SECCOMP_ARG]) {
    assert.match(launch, new RegExp(`^\\s+(\\S+ \\| )*${option}( \\| \\S+)*\\)`, "m"), option);
  }
  for (const text of [launch, stage]) {
    assert.ok(
      text.includes(
        `refuse() { printf '${REFUSED_MARK}%s\\t%s\\n' "$1" "$2" >&2; exit ${REFUSED_EXIT}; }`,
      ),
    );
  }
});

Deno.test("the launcher hands bwrap what it opened, and refuses a symlinked or special path before bwrap runs", async () => {
  const { base, fake, canary } = await _setup();
  try {
    const real = join(base, "real");
    await Deno.mkdir(real);
    await Deno.writeTextFile(join(real, "secret.txt"), "canary\n");
    await Deno.symlink(real, join(base, "link"));
    const fifo = join(base, "fifo");
    assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
    // Control: a path that is exactly itself is bound by its descriptor, named nowhere else.
    const ok = await _launch(launcherCommand(), [
      fake,
      "--ro-bind-fd",
      real,
      "/data",
      VERIFY_ARG,
      base,
      "--",
      "true",
    ], canary);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(_boundFd(ok.out, "--ro-bind-fd", "/data"), real, ok.out);
    assert.ok(!ok.out.split("\n").includes(VERIFY_ARG), "a pseudo-option reached bwrap");
    assert.ok(!ok.out.includes(`fd ${base}`), "the verified path stayed open");
    await Deno.remove(canary);
    // A symlinked path: refused, naming what it found, and bwrap never ran.
    const linked = await _launch(launcherCommand(), [
      fake,
      "--bind-fd",
      join(base, "link"),
      "/data",
      "--",
      "true",
    ], canary);
    assert.equal(linked.code, REFUSED_EXIT, linked.err);
    assert.ok(linked.err.includes(`${REFUSED_MARK}${join(base, "link")}\t${real}`), linked.err);
    // A FIFO would block the open, or hand bwrap a pipe: refused unopened.
    const special = await _launch(
      launcherCommand(),
      [fake, "--bind-fd", fifo, "/x", "--", "true"],
      canary,
    );
    assert.equal(special.code, REFUSED_EXIT);
    assert.match(special.err, /not a file or folder/);
    await assert.rejects(Deno.lstat(canary), Deno.errors.NotFound);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("a compiled corral's launcher runs from its copy, with its second stage beside it; a changed copy is written anew", async () => {
  const { base, fake, canary } = await _setup();
  const store = join(base, "store");
  try {
    const copy = shellProgram("core/jail/launch.sh", true, store);
    assert.ok(copy.startsWith(`${store}/`) && copy.endsWith("/core/jail/launch.sh"));
    const command = ["/bin/bash", copy, launcherCommand()[2]];
    // --corral-netns: the copy's stage (./launch_stage.sh beside it) makes a network namespace.
    const run = await _launch(
      command,
      [fake, "--unshare-all", NETNS_ARG, "-", "--", "true"],
      canary,
    );
    assert.equal(run.code, 0, run.err);
    const host = await Deno.readLink("/proc/self/ns/net");
    const inside = run.out.split("\n").find((l) => l.startsWith("netns "))?.slice(6);
    assert.ok(inside?.startsWith("net:[") && inside !== host, run.out);
    assert.ok(run.out.split("\n").includes("--share-net"), run.out);
    // A copy changed in the store, in place or swapped, is never handed out: corral's bytes are.
    const own = await Deno.readTextFile(selfFile("core/jail/launch.sh"));
    await Deno.writeTextFile(copy, '#!/bin/bash\ntouch "$CANARY"\n');
    assert.equal(await Deno.readTextFile(shellProgram("core/jail/launch.sh", true, store)), own);
    const swapped = join(base, "swapped.sh");
    await Deno.writeTextFile(swapped, "#!/bin/bash\nexit 0\n");
    await Deno.rename(swapped, copy);
    assert.equal(shellProgram("core/jail/launch.sh", true, store), copy);
    assert.equal(await Deno.readTextFile(copy), own);
    // The stage the launcher runs from beside itself is checked with it.
    const stage = join(copy, "..", "launch_stage.sh");
    await Deno.writeTextFile(stage, '#!/bin/bash\ntouch "$CANARY"\n');
    assert.equal(shellProgram("core/jail/launch.sh", true, store), copy);
    assert.equal(
      await Deno.readTextFile(stage),
      await Deno.readTextFile(selfFile("core/jail/launch_stage.sh")),
    );
    // Without a store, a compiled corral refuses to run its programs rather than run none.
    assert.throws(() => shellProgram("core/jail/launch.sh", true, undefined), /no folder to write/);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
