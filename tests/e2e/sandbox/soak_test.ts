// A day of serving grows nothing (issue 39): the suite's variant of section 12 of
// `deno task bench` (bench/soak.ts, 20,000 calls there). One `corral mcp --http` session
// driven with calls mixing a worker, a process and a hosted toolset, writes, refusals,
// cancellations and a server crash; the host's RSS grows at most 10% after the warm-up,
// its descriptors, child processes, cgroups, layer folders and temp files return to their
// baseline when the session ends (and the last three are gone when it exits), and the audit
// log stays within its rotation bound. The baseline is the idle server after two first
// sessions of every kind, not one: Deno keeps the event loop handle (an eventfd, an epoll
// descriptor) of the last Web Worker that ended until the next one starts, and in corral
// the first worker's did not stay, so after one session the baseline was one such pair
// short of what every later session ends with (bench/soak.ts says how that was measured).
// The pair is replaced, never added to: a session that leaks a worker still fails here.
// The server runs with V8's old space capped at 48 MiB (HEAP_MIB), so that its garbage is
// collected within these few calls: uncapped, V8 lets it pile up towards a limit that 300
// calls never reach, and the RSS grew 8–12% with no live object kept (measured: 600 calls,
// 200 of warm-up, 12.3% uncapped, 0.5% capped; with the host's shipped V8 flags, HOST_V8_FLAGS,
// 300 calls still grew 10.1–10.3% in two runs of five). A leak of live memory still grows, or
// ends the server, under the cap. Section 13 of the bench runs uncapped, with the shipped flags,
// 20,000 calls.
import assert from "node:assert/strict";
import { findBwrap } from "../../../core/jail/mod.ts";
import { type Held, runSoak } from "../../../bench/soak.ts";

if (await findBwrap() === undefined) throw new Error("soak_test: no working bwrap here");

const CALLS = 300;
const WARMUP = 60;
const AUDIT_BYTES = 64 * 1024;
const HEAP_MIB = 48;

Deno.test({
  name:
    "a session of mixed calls, refusals, cancellations and a crash grows nothing it does not give back",
  // The soak's server and its sandboxes end with it; nothing leaks into this test.
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const r = await runSoak(CALLS, WARMUP, AUDIT_BYTES, HEAP_MIB);
    const report = JSON.stringify(r);
    // The mix ran: every kind; refusals refused, cancellations cancelled, the crash restarted.
    for (const k of ["worker", "hosted", "process", "write", "refused", "cancelled", "crash"]) {
      assert.ok((r.kinds[k] ?? 0) > 0, `no ${k} call: ${report}`);
    }
    assert.ok((r.outcomes.cancelled ?? 0) > 0, report);
    assert.ok((r.outcomes.failed ?? 0) >= (r.kinds.refused ?? 0), report);
    assert.equal(r.serverIds, 2, `the crashed server was started again once: ${report}`);
    // The control: while the session ran, it held sandboxes, their groups and their layers.
    assert.ok(r.during.children > 0 && r.during.cgroups + r.during.layers > 0, report);
    assert.ok(r.rssGrowth <= 0.1, `RSS grew ${(r.rssGrowth * 100).toFixed(1)}%: ${report}`);
    for (const k of ["fds", "children", "cgroups", "layers", "temp"] as Array<keyof Held>) {
      assert.ok(r.afterSession[k] <= r.baseline[k], `${k} not given back: ${report}`);
    }
    for (const k of ["cgroups", "layers", "temp"] as Array<keyof Held>) {
      assert.ok(r.afterExit[k] <= r.start[k], `${k} left after the exit: ${report}`);
    }
    assert.ok(r.auditRotated, `the audit log never reached its bound: ${report}`);
    assert.ok(r.auditBytes <= r.auditBound + 5 * r.auditLongestLine, report);
  },
});
