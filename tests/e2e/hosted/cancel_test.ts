// Cancelling a hosted server's call (tests/fixtures/hosted/hostile_server.ts,
// a real process in corral's namespace): the cancelled call alone fails, as
// corral's own tools report it, and the server keeps running with its other
// calls; a timeout still kills and restarts it, and so does a server that
// ignores the cancellation (stuck, or working on past the call's timeout). Each test runs on
// corral's own call lane (core/hosted/call_lane.ts) and on the plain SDK client
// (core/hosted/_client_calls.ts, CORRAL_BENCH_HOSTED_LANE=sdk).
import assert from "node:assert/strict";
import { join } from "node:path";
import { readAudit } from "../../../core/audit/mod.ts";
import type { Registry } from "../../../core/registry/registry.ts";
import { CANCEL_GRACE_MS } from "../../../core/hosted/call_lane.ts";
import { fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import {
  approve,
  type HostedLayout,
  hostedLayout,
  hostedRegistry,
  serverEvents,
} from "../../_hosted_helpers.ts";

const FIXTURE = join(HOSTED_FIXTURES, "hostile_server.ts");
const SERVERS = {
  hostile: { command: fixtureServer(FIXTURE) },
};

async function _approved(l: HostedLayout): Promise<{ registry: Registry; lines: string[] }> {
  const first = await hostedRegistry(l, SERVERS, { hostile: { read: ["."] } });
  await approve(first.registry, "hostile");
  await first.registry.close();
  return await hostedRegistry(l, SERVERS, { hostile: { read: ["."] } });
}

async function _whoami(registry: Registry): Promise<string> {
  const r = await registry.call("whoami", {});
  assert.equal(r.success, true, JSON.stringify(r));
  return String(r.result);
}

/** Call `tool` and cancel it (its signal aborted) after `ms`. */
function _cancelled(
  registry: Registry,
  tool: string,
  args: unknown,
  ms: number,
  timeoutMs = 60_000,
) {
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error("the client cancelled")), ms);
  return registry.call(tool, args, { signal: ac.signal, timeoutMs });
}

/** Run `fn` with hosted calls on `lane` (read as each server starts). */
async function _onLane(lane: "lane" | "sdk", fn: () => Promise<void>): Promise<void> {
  const before = Deno.env.get("CORRAL_BENCH_HOSTED_LANE");
  if (lane === "sdk") Deno.env.set("CORRAL_BENCH_HOSTED_LANE", "sdk");
  else Deno.env.delete("CORRAL_BENCH_HOSTED_LANE");
  try {
    await fn();
  } finally {
    if (before === undefined) Deno.env.delete("CORRAL_BENCH_HOSTED_LANE");
    else Deno.env.set("CORRAL_BENCH_HOSTED_LANE", before);
  }
}

async function _until(what: string, ok: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400 && !(await ok()); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(await ok(), `never: ${what}`);
}

for (const lane of ["lane", "sdk"] as const) {
  Deno.test(`hosted cancel (${lane}): the cancelled call alone fails; the other call completes on the same server process`, () =>
    _onLane(lane, async () => {
      await using l = await hostedLayout();
      const { registry, lines } = await _approved(l);
      try {
        const before = await _whoami(registry);
        for (let i = 0; i < 3; i++) {
          const other = registry.call("slow", { ms: 1500 }, { timeoutMs: 60_000 });
          const cancelled = await _cancelled(registry, "hang", {}, 300);
          assert.equal(cancelled.success, false);
          assert.match(String(cancelled.error), /^Cannot run tool "hang": cancelled$/);
          const r = await other;
          assert.equal(r.success, true, JSON.stringify(r));
          assert.equal(r.result, "slow done");
        }
        // The server heard each cancellation (it logs them on stderr) and was never restarted.
        await _until(
          "three cancellations heard",
          () => lines.filter((t) => /\[hostile\] cancelled (corral:)?\d+/.test(t)).length === 3,
        );
        assert.equal(await _whoami(registry), before);
        assert.equal(registry.hosted.states()[0].starts, 1);
        assert.equal(registry.hosted.states()[0].state, "running");
        // Past the grace (its ping answered), it is still the same process.
        await new Promise((r) => setTimeout(r, CANCEL_GRACE_MS + 300));
        assert.equal(await _whoami(registry), before);
        const events = (await serverEvents(l)).map((e) => e.event);
        assert.ok(!events.includes("timeout") && !events.includes("cancel_ignored"), events.join());
        // Audited as corral's own tools' cancellations are: error, reason cancelled.
        const { records } = await readAudit(l.audit);
        const hangs = records.filter((r) => r.tool === "hang");
        assert.equal(hangs.length, 3);
        for (const h of hangs) {
          assert.equal(h.outcome, "error");
          assert.equal(h.reason, "cancelled");
        }
        // A real timeout still kills the call and the server; the other call dies with it.
        const other = registry.call("slow", { ms: 3000 }, { timeoutMs: 60_000 });
        const timedOut = await registry.call("hang", {}, { timeoutMs: 500 });
        assert.equal(timedOut.success, false);
        assert.match(String(timedOut.error), /timed out after 500 ms/);
        assert.equal((await other).success, false);
        assert.notEqual(await _whoami(registry), before);
        assert.equal(registry.hosted.states()[0].starts, 2);
        assert.ok((await serverEvents(l)).some((e) => e.event === "timeout"));
      } finally {
        await registry.close();
      }
    }));

  Deno.test(`hosted cancel (${lane}): a server stuck after a cancellation (no answer to a ping within the grace) is killed and restarts`, () =>
    _onLane(lane, async () => {
      await using l = await hostedLayout();
      const { registry } = await _approved(l);
      try {
        const before = await _whoami(registry);
        // Busy for longer than the grace: it reads nothing, so neither the cancel nor the ping.
        const spun = await _cancelled(registry, "spin", { ms: CANCEL_GRACE_MS * 3 }, 300);
        assert.match(String(spun.error), /cancelled$/);
        await _until(
          "cancel_ignored audited",
          async () =>
            (await serverEvents(l)).some((e) =>
              e.event === "cancel_ignored" && /did not answer a ping/.test(e.detail)
            ),
        );
        assert.notEqual(await _whoami(registry), before);
        assert.equal(registry.hosted.states()[0].starts, 2);
      } finally {
        await registry.close();
      }
    }));

  Deno.test(`hosted cancel (${lane}): a server that works on a cancelled call past its timeout is killed then`, () =>
    _onLane(lane, async () => {
      await using l = await hostedLayout();
      const { registry } = await _approved(l);
      try {
        const before = await _whoami(registry);
        // It ignores the cancel and reports progress on for 20 s; the call's timeout was 3 s.
        const timeoutMs = CANCEL_GRACE_MS + 1000;
        const nag = await _cancelled(registry, "nag", { ms: 20_000 }, 200, timeoutMs);
        assert.match(String(nag.error), /cancelled$/);
        // Within the call's timeout it runs on: its ping was answered, no kill yet.
        assert.equal(await _whoami(registry), before);
        await _until(
          "cancel_ignored audited",
          async () =>
            (await serverEvents(l)).some((e) =>
              e.event === "cancel_ignored" &&
              /still worked on a cancelled call to nag/.test(e.detail)
            ),
        );
        assert.notEqual(await _whoami(registry), before);
        assert.equal(registry.hosted.states()[0].starts, 2);
      } finally {
        await registry.close();
      }
    }));
}
