// A crash during an apply leaves every file whole (issue 37, class 4). A jailed bash rewrites
// 3,000 files of 16 KB through `corral call`; the moment the applier stages its first batch (its
// private folder appears in the tree), corral is killed (SIGKILL). Every file is then either
// the old one or the new one, whole, and no temporary is left in the tree: the applier, which
// outlives corral, finishes its batch and exits. When the applier itself is killed too, its
// private folder is left behind (the control), every file is still whole, and the next start of
// corral removes it, as its journal names it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { TEMP_PREFIX } from "../../../core/guard/temp_names.ts";
import { HOST_PERMISSION_FLAGS } from "../../../core/sandbox/host_flags.ts";
import { ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const FILES = 3000;
const FILL = 16_000;
const oldText = (i: number) => `OLD ${i}\n${"o".repeat(FILL)}\nEND\n`;
const newText = (i: number) => `NEW ${i}\n${"n".repeat(FILL)}\nEND\n`;

async function _setUp() {
  const t = await tempLayout();
  await Deno.mkdir(join(t.ws, "d"));
  for (let i = 1; i <= FILES; i++) await Deno.writeTextFile(join(t.ws, "d", `f${i}`), oldText(i));
  const policy = join(t.outside, "p.json");
  await Deno.writeTextFile(
    policy,
    JSON.stringify({
      toolsets: { system: { run: ["bash"], read: ["."], write: ["."], timeout_ms: 600_000 } },
    }),
  );
  return { ...t, policy, env: { CORRAL_CACHE_DIR: join(t.base, "cache") } };
}

/** `corral call RunBashCode` that rewrites every file, as a child process. */
function _rewrite(t: Awaited<ReturnType<typeof _setUp>>): Deno.ChildProcess {
  const code = `s=$(printf 'n%.0s' $(seq 1 ${FILL})); cd d; ` +
    `for i in $(seq 1 ${FILES}); do printf 'NEW %d\\n%s\\nEND\\n' $i "$s" > f$i; done`;
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...HOST_PERMISSION_FLAGS,
      `${ROOT}main.ts`,
      "call",
      "RunBashCode",
      "-r",
      "-w",
      "-x",
      "--permissions",
      t.policy,
      "--args",
      JSON.stringify({ code, timeout: 600 }),
    ],
    cwd: t.ws,
    env: { NO_COLOR: "1", ...t.env, CORRAL_CONFIG_DIR: join(t.base, "no-config") },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

/** corral's private folders in `dir`. */
function _privates(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(TEMP_PREFIX));
}

/** Every process below `pid` (children first found, then theirs). */
function _descendants(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number) => {
    let tasks: string[] = [];
    try {
      tasks = [...Deno.readDirSync(`/proc/${p}/task`)].map((e) => e.name);
    } catch {
      return;
    }
    for (const task of tasks) {
      let kids = "";
      try {
        kids = Deno.readTextFileSync(`/proc/${p}/task/${task}/children`);
      } catch { /* gone */ }
      for (const k of kids.split(" ").filter(Boolean).map(Number)) {
        out.push(k);
        walk(k);
      }
    }
  };
  walk(pid);
  return out;
}

function _cmdline(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
  } catch {
    return "";
  }
}

function _alive(pid: number): boolean {
  try {
    return !Deno.readTextFileSync(`/proc/${pid}/stat`).includes(") Z ");
  } catch {
    return false;
  }
}

/** Wait (bounded) for `cond`, looking every few milliseconds. */
async function _until(cond: () => boolean, what: string, ms = 300_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Each file old or new, whole; how many are new. */
async function _wholeFiles(ws: string): Promise<number> {
  let fresh = 0;
  for (let i = 1; i <= FILES; i++) {
    const text = await Deno.readTextFile(join(ws, "d", `f${i}`));
    if (text === newText(i)) fresh++;
    else assert.equal(text, oldText(i), `d/f${i} is torn or missing: ${text.length} bytes`);
  }
  return fresh;
}

/** Run the rewrite and kill corral once the applier stages; returns the applier's processes. */
async function _killDuringApply(t: Awaited<ReturnType<typeof _setUp>>, applierToo: boolean) {
  const corral = _rewrite(t);
  await _until(() => _privates(join(t.ws, "d")).length > 0, "the applier's private folder");
  const applier = _descendants(corral.pid).filter((p) => _cmdline(p).includes("tree_applier.ts"));
  assert.ok(applier.length > 0, "the applier runs under corral");
  if (applierToo) {
    // Its deno process (the deepest one): killed before corral.
    for (const p of applier.slice(-1)) Deno.kill(p, "SIGKILL");
  }
  corral.kill("SIGKILL");
  await corral.status;
  await _until(() => applier.every((p) => !_alive(p)), "the applier's end");
  return applier;
}

Deno.test("SIGKILL of corral during an apply: every file old or new, whole; no temporary left", async () => {
  const t = await _setUp();
  await _killDuringApply(t, false);
  const fresh = await _wholeFiles(t.ws);
  assert.ok(fresh > 0, "the batch under way was finished");
  assert.deepEqual(_privates(join(t.ws, "d")), [], "the applier removed its private folder");
  await new Deno.Command("rm", { args: ["-rf", t.base] }).output();
});

Deno.test("SIGKILL of corral and its applier: files whole; the next start removes the temporaries", async () => {
  const t = await _setUp();
  await _killDuringApply(t, true);
  await _wholeFiles(t.ws);
  // Control: the killed applier left its private folder (with staged files) in the tree.
  assert.equal(_privates(join(t.ws, "d")).length, 1);
  const next = await runCli(
    [
      "call",
      "RunBashCode",
      "-r",
      "-w",
      "-x",
      "--permissions",
      t.policy,
      "--args",
      '{"code":"true"}',
    ],
    { cwd: t.ws, env: t.env },
  );
  assert.equal(next.code, 0, next.stdout + next.stderr);
  assert.deepEqual(_privates(join(t.ws, "d")), []);
  await _wholeFiles(t.ws);
  await new Deno.Command("rm", { args: ["-rf", t.base] }).output();
});
