import assert from "node:assert/strict";
import { callToolResult } from "../_call_result.ts";
import type { ParkedCall } from "../_input_rounds.ts";
import { failure, withFault } from "../../tool/result.ts";
import { MAX_TASKS_PER_PRINCIPAL, TASK_TTL_MS, TaskStore } from "./_task_store.ts";

/** A call the test settles by hand, with questions it opens. */
function fakeCall() {
  let settle!: (v: unknown) => void;
  let fail!: (e: unknown) => void;
  const done = new Promise<unknown>((res, rej) => [settle, fail] = [res, rej]);
  const open: Record<string, { method: string; params: Record<string, unknown> }> = {};
  const answers: Record<string, unknown> = {};
  let cancelled: Error | undefined;
  let missing: Record<string, Record<string, never>> | undefined;
  let changed = () => {};
  const call: ParkedCall = {
    questions: () => ({ ...open }),
    answer: (r) => {
      for (const [k, v] of Object.entries(r ?? {})) {
        if (!(k in open)) continue;
        answers[k] = v;
        delete open[k];
      }
      changed();
    },
    onChange: (fn) => changed = fn,
    done,
    missing: () => missing,
    cancel: (why) => {
      cancelled = why;
    },
  };
  return {
    call,
    settle,
    fail,
    /** Open a question, as the call asks one. */
    ask: (key: string, method = "elicitation/create") => {
      open[key] = { method, params: {} };
      changed();
    },
    open,
    answers,
    cancelled: () => cancelled,
    lack: (m: typeof missing) => missing = m,
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("a task is found only with its own principal: another's id is unknown (-32602), and touches nothing", async () => {
  const store = new TaskStore();
  const f = fakeCall();
  const made = store.create("alice", "T", f.call);
  assert.equal(made.resultType, "task");
  assert.equal(made.status, "working");
  for (
    const act of [
      () => store.get("bob", made.taskId),
      () => store.update("bob", made.taskId, { q: {} }),
      () => store.cancel("bob", made.taskId),
      () => store.get("alice", "no-such-task"),
    ]
  ) {
    assert.throws(
      act,
      (e: Error & { code?: number }) => e.code === -32602 && /not found/.test(e.message),
    );
  }
  f.open.q = { method: "elicitation/create", params: {} };
  assert.equal(f.cancelled(), undefined);
  assert.deepEqual(f.answers, {});
  const seen = store.get("alice", made.taskId);
  assert.equal(seen.status, "input_required");
  assert.deepEqual(Object.keys(seen.inputRequests as object), ["q"]);
  store.update("alice", made.taskId, { q: { action: "accept" }, other: { x: 1 } });
  assert.deepEqual(f.answers, { q: { action: "accept" } });
  assert.equal(store.get("alice", made.taskId).status, "working");
  f.settle(callToolResult({ success: true, n: 1 }));
  await tick();
  const ended = store.get("alice", made.taskId);
  assert.equal(ended.status, "completed");
  assert.equal((ended.result as { isError: boolean }).isError, false);
});

Deno.test("a tool's own failure completes its task (isError); corral's fault, a throw or a missing capability fails it", async () => {
  const store = new TaskStore();
  const cases: Array<[unknown, string, number | undefined]> = [
    [callToolResult({ success: false, error: "bad input" }), "completed", undefined],
    [callToolResult(withFault(failure("T", "boom"), "error", "threw")), "failed", -32603],
    [new Error("lane broke"), "failed", -32603],
  ];
  for (const [value, status, code] of cases) {
    const f = fakeCall();
    const { taskId } = store.create("p", "T", f.call);
    if (value instanceof Error) f.fail(value);
    else f.settle(value);
    await tick();
    const got = store.get("p", taskId);
    assert.equal(got.status, status, JSON.stringify(got));
    assert.equal((got.error as { code?: number } | undefined)?.code, code);
    assert.equal("result" in got, status === "completed");
  }
  const f = fakeCall();
  const { taskId } = store.create("p", "T", f.call);
  f.lack({ sampling: {} });
  f.settle(callToolResult({ success: false, error: "no sampling" }));
  await tick();
  const got = store.get("p", taskId) as { status: string; error: { code: number; data: unknown } };
  assert.equal(got.status, "failed");
  assert.equal(got.error.code, -32021);
  assert.deepEqual(got.error.data, { requiredCapabilities: { sampling: {} } });
});

Deno.test("cancel stops the call and shows cancelled; a result after it does not change that; an ended task stays", async () => {
  const store = new TaskStore();
  const f = fakeCall();
  const { taskId } = store.create("p", "T", f.call);
  store.cancel("p", taskId);
  assert.match(String(f.cancelled()?.message), /cancelled/);
  f.settle(callToolResult({ success: true }));
  await tick();
  assert.equal(store.get("p", taskId).status, "cancelled");
  const g = fakeCall();
  const other = store.create("p", "T", g.call);
  g.settle(callToolResult({ success: true }));
  await tick();
  store.cancel("p", other.taskId);
  assert.equal(g.cancelled(), undefined);
  assert.equal(store.get("p", other.taskId).status, "completed");
});

Deno.test("tasks are bounded per principal (an ended one gives way, running ones refuse) and expire after their TTL", async () => {
  let now = 1_000_000;
  const store = new TaskStore(() => now);
  const calls = Array.from({ length: MAX_TASKS_PER_PRINCIPAL }, () => fakeCall());
  const ids = calls.map((f) => store.create("p", "T", f.call).taskId as string);
  const extra = fakeCall();
  assert.throws(() => store.create("p", "T", extra.call), /tasks of this caller are running/);
  assert.ok(extra.cancelled(), "the refused call is stopped");
  // Another principal has room of its own.
  store.create("q", "T", fakeCall().call);
  calls[3].settle(callToolResult({ success: true }));
  await tick();
  store.create("p", "T", fakeCall().call);
  assert.throws(() => store.get("p", ids[3]), /not found/);
  assert.equal(store.get("p", ids[4]).status, "working");
  now += TASK_TTL_MS;
  assert.throws(() => store.get("p", ids[4]), /not found/);
  assert.ok(calls[4].cancelled(), "a task running past its TTL is cancelled");
  assert.equal(store.size, 0);
});

Deno.test("each change of a task's status is told to the watchers with the task as tasks/get shows it, once", async () => {
  const store = new TaskStore();
  const seen: Array<[string, string, unknown]> = [];
  const stop = store.watch((principal, t) => seen.push([principal, String(t.status), t.taskId]));
  const a = fakeCall();
  const id = store.create("alice", "T", a.call).taskId as string;
  assert.equal(store.owns("alice", id), true);
  assert.equal(store.owns("bob", id), false);
  a.ask("confirm");
  a.call.answer({ confirm: { action: "accept" } });
  a.settle(callToolResult({ success: true }));
  await tick();
  assert.deepEqual(seen.map(([p, s]) => [p, s]), [
    ["alice", "input_required"],
    ["alice", "working"],
    ["alice", "completed"],
  ]);
  assert.ok(seen.every(([, , t]) => t === id));
  // Cancelled: told once; what the call does after changes nothing.
  const b = fakeCall();
  const other = store.create("bob", "T", b.call).taskId as string;
  store.cancel("bob", other);
  b.settle(callToolResult({ success: true }));
  await tick();
  assert.deepEqual(seen.slice(3).map(([p, s, t]) => [p, s, t]), [["bob", "cancelled", other]]);
  stop();
  const c = fakeCall();
  store.create("alice", "T", c.call);
  c.settle(callToolResult({ success: true }));
  await tick();
  assert.equal(seen.length, 4, "no watcher after stop");
});
