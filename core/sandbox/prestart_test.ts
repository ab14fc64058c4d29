import assert from "node:assert/strict";
import { limitsProbe } from "../jail/mod.ts";
import { adoptPrestarted, dropPrestarted, type LaunchPlan, prestart } from "./prestart.ts";

/** A plan whose "sandbox" echoes its first two lines back (the token and the init line). */
function _plan(extra = ""): LaunchPlan {
  return {
    init: JSON.stringify({ read: [], write: [], run: [], net: [] }),
    spec: { pids: 64, memoryMb: 256 },
    allowRlimit: true,
    command: "/bin/sh",
    args: ["-c", `head -n 2; sleep 30${extra}`],
    openBinds: false,
    cwd: "/",
    env: { PATH: "/usr/bin:/bin" },
  };
}

async function _lines(stdout: ReadableStream<Uint8Array>, n: number): Promise<string[]> {
  const reader = stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (text.split("\n").length <= n) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  reader.releaseLock();
  return text.split("\n").slice(0, n);
}

Deno.test("a sandbox started ahead is adopted with its token for exactly its plan, once", async () => {
  prestart(_plan(), limitsProbe());
  const adopted = adoptPrestarted(_plan());
  assert.ok(adopted, "the same plan adopts it");
  assert.match(adopted.token, /^[0-9a-f]{32}$/);
  // It already got its token and first line, before anyone adopted it.
  const [token, init] = await _lines(adopted.started.child.stdout, 2);
  assert.equal(token, adopted.token);
  assert.deepEqual(JSON.parse(init), JSON.parse(_plan().init));
  assert.equal(adoptPrestarted(_plan()), undefined, "adopted once only");
  adopted.started.child.kill("SIGKILL");
  await adopted.started.child.status;
  await adopted.started.limits.release();
});

Deno.test("a sandbox started ahead for another plan is killed, not adopted", async () => {
  const pidFile = await Deno.makeTempFile();
  const plan = { ..._plan(), args: ["-c", `echo $$ > ${pidFile}; exec sleep 30`] };
  prestart(plan, limitsProbe());
  let pid = "";
  for (let i = 0; i < 200 && !pid; i++) {
    pid = (await Deno.readTextFile(pidFile)).trim();
    if (!pid) await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok(/^\d+$/.test(pid), "the early sandbox runs");
  assert.equal(adoptPrestarted({ ...plan, cwd: "/tmp" }), undefined, "another plan");
  assert.equal(adoptPrestarted(plan), undefined, "nothing left to adopt");
  let alive = true;
  for (let i = 0; i < 200 && alive; i++) {
    alive = await Deno.stat(`/proc/${pid}`).then(() => true, () => false);
    if (alive) await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(alive, false, "the early sandbox was killed");
  await dropPrestarted();
  await Deno.remove(pidFile);
});

Deno.test("built-in tool modules, and only those, are loaded ahead", async () => {
  const root = new URL("../..", import.meta.url).pathname;
  const builtin = `${root}toolsets/files/word_count.ts`;
  prestart(_plan(), limitsProbe(), [builtin, "/tmp/plugins/evil.ts"]);
  const adopted = adoptPrestarted(_plan())!;
  const [, init] = await _lines(adopted.started.child.stdout, 2);
  assert.deepEqual(JSON.parse(init).preload, [builtin]);
  adopted.started.child.kill("SIGKILL");
  await adopted.started.child.status;
  await adopted.started.limits.release();
});
