import assert from "node:assert/strict";
import { InMemoryServerEventBus } from "@modelcontextprotocol/server";
import { MAX_LISTEN_TASKS, serveTaskListen, type TaskListenOptions } from "./_task_listen.ts";
import { TaskStore } from "./_task_store.ts";

function _options(ended: { n: number }): TaskListenOptions {
  return {
    store: new TaskStore(),
    principal: "p",
    capabilities: { tools: { listChanged: true } },
    bus: new InMemoryServerEventBus(),
    serverInfo: { name: "corral", version: "0" },
    onEnd: () => ended.n++,
  };
}

Deno.test("a malformed task listen is refused (-32602, naming the field) and ends at once", async () => {
  for (
    const taskIds of [
      "x",
      [1],
      Array.from({ length: MAX_LISTEN_TASKS + 1 }, (_, i) => `t${i}`),
    ]
  ) {
    const ended = { n: 0 };
    const res = serveTaskListen(
      { id: 1, method: "subscriptions/listen", params: { notifications: { taskIds } } },
      _options(ended),
    );
    const body = await res.json();
    assert.equal(body.error.code, -32602, JSON.stringify(body));
    assert.match(body.error.message, /taskIds/);
    assert.equal(ended.n, 1);
  }
});

Deno.test("a task listen that also asks for list changes stays open and delivers them, stamped", async () => {
  const ended = { n: 0 };
  const o = _options(ended);
  const abort = new AbortController();
  const res = serveTaskListen(
    {
      id: "s",
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true, promptsListChanged: true, taskIds: [] } },
    },
    { ...o, signal: abort.signal },
  );
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const until = async (what: RegExp) => {
    while (!what.test(text)) text += (await reader.read()).value ?? "";
  };
  await until(/acknowledged/);
  // Only what the server advertises is honoured: tools, not prompts.
  assert.match(text, /"notifications":\{"toolsListChanged":true\}/);
  o.bus.publish({ kind: "prompts_list_changed" });
  o.bus.publish({ kind: "tools_list_changed" });
  await until(/tools\/list_changed/);
  assert.doesNotMatch(text, /prompts\/list_changed/);
  assert.match(text, /"io.modelcontextprotocol\/subscriptionId":"s"/);
  abort.abort();
  await reader.cancel().catch(() => {});
  assert.equal(ended.n, 1);
});
