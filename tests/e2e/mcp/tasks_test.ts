/**
 * The tasks extension through a real `corral mcp --http` with two
 * identities: alice's call of a task tool answers with a task handle at once
 * while its bash runs on in her sandbox; bob, who may call the same tool,
 * can neither read, answer nor cancel her task (the same `-32602` as an id
 * never made), and her task keeps running; a request that does not declare
 * the extension is refused the task methods (`-32021`); alice's
 * `tasks/cancel` kills the process her task started, exactly as a cancelled
 * call's is, and the task then shows `cancelled`. A task is live work of its
 * caller's credential: revoked, the task's process is killed within seconds.
 * Status notifications: a `subscriptions/listen` naming the task streams
 * `notifications/tasks` to alice, and tells bob nothing of it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { revokeToken } from "../../../core/identity/token_store.ts";
import { ROOT } from "../../../testing/mod.ts";
import { rpcAnswers, teamCorral } from "../../_team_helpers.ts";

const TASKS = "io.modelcontextprotocol/tasks";
const WITH_TASKS = { extensions: { [TASKS]: {} } };

type Answer = { result?: Record<string, unknown>; error?: { code?: number; message?: string } };

/** POST one 2026-07-28 request of `token` declaring `caps` (`version`: its header, if other). */
function post(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
  o: { caps?: Record<string, unknown>; id?: string | number; version?: string } = {},
): Promise<Response> {
  const name = params.name ?? params.taskId;
  return fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": o.version ?? "2026-07-28",
      "mcp-method": method,
      ...(typeof name === "string" ? { "mcp-name": name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: o.id ?? 1,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": o.caps ?? WITH_TASKS,
        },
      },
    }),
  });
}

/** One 2026-07-28 request of `token` declaring `caps`: its answer. */
async function modern(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
  caps: Record<string, unknown> = WITH_TASKS,
): Promise<Answer> {
  const [answer] = await rpcAnswers(await post(url, token, method, params, { caps }));
  return answer as Answer;
}

/** Whether a process whose command line holds `marker` runs now. */
async function running(marker: string): Promise<boolean> {
  const out = await new Deno.Command("pgrep", { args: ["-f", marker], stdout: "null" }).output();
  return out.code === 0;
}

async function until(what: () => Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await what()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** corral with alice (and bob) and the task tool, allowed to run bash. */
async function tasksCorral(ids: Record<string, Record<string, unknown>>) {
  const dir = await Deno.makeTempDir({ prefix: "corral_tasks_" });
  const permissions = join(dir, "permissions.json");
  await Deno.writeTextFile(
    permissions,
    JSON.stringify({ plugins: { task_tools: { run: ["bash"] } } }),
  );
  const t = await teamCorral(ids, ["-x", "--permissions", permissions], {
    env: { CORRAL_TOOL_DIRS: join(ROOT, "tests", "fixtures", "tasks") },
  });
  const stop = t[Symbol.asyncDispose].bind(t);
  return Object.assign(t, {
    async [Symbol.asyncDispose]() {
      await stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  });
}

Deno.test("tasks: a task is its caller's alone (another identity can neither get, update nor cancel it); tasks/cancel kills its process", async () => {
  await using t = await tasksCorral({ alice: {}, bob: {} });
  const marker = `corral-task-${crypto.randomUUID().slice(0, 8)}`;
  const call = { name: "BashTask", arguments: { code: `sleep 60; echo ${marker}` } };
  const made = await modern(t.url, t.tokens.alice, "tools/call", call);
  const taskId = made.result?.taskId as string;
  assert.equal(made.result?.resultType, "task", JSON.stringify(made));
  assert.ok(typeof taskId === "string" && taskId.length >= 32, JSON.stringify(made));
  assert.ok(
    await until(() => running(marker)),
    `alice's task started its bash: ${
      JSON.stringify(await modern(t.url, t.tokens.alice, "tasks/get", { taskId }))
    }`,
  );

  // bob may call BashTask, but alice's task is not his: each method answers as for no task.
  for (
    const [method, params] of [
      ["tasks/get", { taskId }],
      ["tasks/update", { taskId, inputResponses: { confirm: { action: "accept" } } }],
      ["tasks/cancel", { taskId }],
    ] as const
  ) {
    const stolen = await modern(t.url, t.tokens.bob, method, params);
    assert.equal(stolen.error?.code, -32602, `${method}: ${JSON.stringify(stolen)}`);
    assert.match(String(stolen.error?.message), /not found/);
  }
  // Without the extension declared, the task methods are refused (-32021), alice's own too.
  const undeclared = await modern(t.url, t.tokens.alice, "tasks/get", { taskId }, {});
  assert.equal(undeclared.error?.code, -32021, JSON.stringify(undeclared));
  const still = await modern(t.url, t.tokens.alice, "tasks/get", { taskId });
  assert.equal(still.result?.status, "working", JSON.stringify(still));
  assert.ok(await running(marker), "bob's cancel touched nothing");

  // alice cancels: the ack is empty, the task is cancelled, and its bash is killed.
  const ack = await modern(t.url, t.tokens.alice, "tasks/cancel", { taskId });
  assert.deepEqual(Object.keys(ack.result ?? {}).filter((k) => k !== "_meta"), ["resultType"]);
  const after = await modern(t.url, t.tokens.alice, "tasks/get", { taskId });
  assert.equal(after.result?.status, "cancelled", JSON.stringify(after));
  assert.ok(await until(async () => !(await running(marker))), "the task's process was killed");
});

Deno.test("tasks: a task outlives its request, not its caller's credential: revoked, its process is killed", async () => {
  await using t = await tasksCorral({ alice: {} });
  const marker = `corral-task-${crypto.randomUUID().slice(0, 8)}`;
  const call = { name: "BashTask", arguments: { code: `sleep 60; echo ${marker}` } };
  const made = await modern(t.url, t.tokens.alice, "tools/call", call);
  assert.equal(made.result?.resultType, "task", JSON.stringify(made));
  assert.ok(await until(() => running(marker)), "alice's task started its bash");
  assert.equal(await revokeToken("alice", join(t.ws.cache, "config", "tokens.json")), true);
  assert.ok(await until(async () => !(await running(marker)), 10_000), "killed once revoked");
});

/** Open `subscriptions/listen` for `filter` as `token`; the notifications it sends until it ends. */
async function listen(
  url: string,
  token: string,
  filter: Record<string, unknown>,
): Promise<Array<Record<string, unknown>>> {
  const res = await post(url, token, "subscriptions/listen", { notifications: filter }, {
    id: "sub-1",
  });
  assert.equal(res.headers.get("content-type"), "text/event-stream");
  const text = await res.text(); // ends when every task named ended
  return text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
}

Deno.test("tasks: subscriptions/listen with taskIds streams notifications/tasks for the caller's own tasks only, then ends", async () => {
  await using t = await tasksCorral({ alice: {}, bob: {} });
  const call = { name: "BashTask", arguments: { code: "sleep 1; echo done-here" } };
  const made = await modern(t.url, t.tokens.alice, "tools/call", call);
  const taskId = made.result?.taskId as string;
  assert.equal(made.result?.resultType, "task", JSON.stringify(made));
  // bob names alice's task: not his, so nothing is listened for and the stream ends at once.
  const stolen = await listen(t.url, t.tokens.bob, { taskIds: [taskId] });
  assert.equal(stolen[0].method, "notifications/subscriptions/acknowledged");
  assert.deepEqual((stolen[0].params as { notifications: unknown }).notifications, {});
  assert.ok(!stolen.some((m) => m.method === "notifications/tasks"), JSON.stringify(stolen));
  // alice: acknowledged with her task, its status now, then completed with its result.
  const seen = await listen(t.url, t.tokens.alice, { taskIds: [taskId, "no-such-task"] });
  const ack = seen[0].params as Record<string, Record<string, unknown>>;
  assert.deepEqual(ack.notifications, { taskIds: [taskId] });
  assert.equal(ack._meta["io.modelcontextprotocol/subscriptionId"], "sub-1");
  const notes = seen.filter((m) => m.method === "notifications/tasks")
    .map((m) => m.params as Record<string, unknown>);
  assert.ok(notes.every((n) => n.taskId === taskId), JSON.stringify(notes));
  assert.equal(notes[0].status, "working", JSON.stringify(notes));
  const last = notes.at(-1)!;
  assert.equal(last.status, "completed", JSON.stringify(notes));
  assert.match(JSON.stringify(last.result), /done-here/);
  // The stream ended gracefully: the listen request's own empty result closes it.
  const end = seen.at(-1)!;
  assert.equal(end.id, "sub-1");
  assert.equal((end.result as { resultType?: string }).resultType, "complete");
  // A listen whose headers disagree with its body is refused, as any 2026-07-28 request is.
  const forged = await post(
    t.url,
    t.tokens.alice,
    "subscriptions/listen",
    { notifications: { taskIds: [taskId] } },
    { id: "sub-2", version: "2025-11-25" },
  );
  assert.equal(forged.status, 400);
  assert.equal((await forged.json()).error?.code, -32020);
  // What tasks/get shows now is what the last notification carried.
  const got = await modern(t.url, t.tokens.alice, "tasks/get", { taskId });
  assert.equal(got.result?.status, "completed");
  assert.equal(got.result?.lastUpdatedAt, last.lastUpdatedAt);
});
