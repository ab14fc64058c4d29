import assert from "node:assert/strict";
import { runSubprocess } from "./subprocess.ts";

const _base = { command: "bash", cwd: Deno.cwd(), timeoutMs: 10_000, maxOutputBytes: 10_000 };

Deno.test("runSubprocess captures stdout, stderr and the exit code", async () => {
  const r = await runSubprocess({ ..._base, args: ["-c", "echo out; echo err >&2; exit 3"] });
  assert.equal(r.stdout, "out\n");
  assert.equal(r.stderr, "err\n");
  assert.equal(r.exitCode, 3);
  assert.equal(r.timedOut, false);
  assert.equal(r.truncated, false);
});

Deno.test("runSubprocess passes stdin and runs in cwd", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir());
  try {
    const r = await runSubprocess({ ..._base, cwd, args: ["-c", "cat; pwd"], stdin: "hello\n" });
    assert.equal(r.stdout, `hello\n${cwd}\n`);
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("runSubprocess gives the child only allowlisted variables and a scratch HOME", async () => {
  Deno.env.set("CORRAL_TEST_SECRET", "s3cret");
  try {
    const r = await runSubprocess({
      ..._base,
      args: ["-c", 'echo "secret=$CORRAL_TEST_SECRET extra=$EXTRA"; echo "$HOME"'],
      env: { EXTRA: "yes" },
    });
    const [line, home] = r.stdout.trim().split("\n");
    assert.equal(line, "secret= extra=yes");
    assert.notEqual(home, Deno.env.get("HOME"));
    assert.match(home, /corral-home-/);
    // The scratch HOME is removed afterwards.
    await assert.rejects(Deno.stat(home), Deno.errors.NotFound);
  } finally {
    Deno.env.delete("CORRAL_TEST_SECRET");
  }
});

Deno.test("runSubprocess cuts each stream at maxOutputBytes with a marker", async () => {
  const r = await runSubprocess({
    ..._base,
    maxOutputBytes: 100,
    args: ["-c", "head -c 5000 /dev/zero | tr '\\0' a; echo short >&2"],
  });
  assert.equal(r.truncated, true);
  assert.equal(r.stdout, `${"a".repeat(100)}\n…[truncated 4900 bytes]`);
  assert.equal(r.stderr, "short\n");
});

Deno.test("runSubprocess kills a child at the time limit, also with a background grandchild", async () => {
  const r = await runSubprocess({
    ..._base,
    timeoutMs: 300,
    args: ["-c", "echo started; sleep 5 & sleep 5"],
  });
  assert.equal(r.timedOut, true);
  assert.equal(r.stdout, "started\n");
  assert.notEqual(r.exitCode, 0);
});

Deno.test("runSubprocess kills the child when the signal aborts", async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 200);
  const r = await runSubprocess({ ..._base, args: ["-c", "sleep 5"], signal: controller.signal });
  assert.equal(r.aborted, true);
  assert.equal(r.timedOut, false);
  assert.notEqual(r.exitCode, 0);
});

Deno.test("runSubprocess returns the output of a child whose background grandchild keeps the pipe open", async () => {
  const r = await runSubprocess({ ..._base, args: ["-c", "sleep 30 & echo $!"] });
  const pid = Number(r.stdout.trim());
  try {
    assert.equal(r.exitCode, 0);
    assert.equal(r.timedOut, false);
    assert.ok(pid > 0, r.stdout);
  } finally {
    if (pid > 0) Deno.kill(pid, "SIGKILL");
  }
});
