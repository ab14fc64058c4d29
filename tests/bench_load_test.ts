// The bench's honesty (issue 41, bench/load_watch.ts): the verdict on a section's load and the line
// the report prints for it. The bench's doc examples are not in the test task's folders, so here.
import assert from "node:assert/strict";
import {
  describeLoad,
  LOADAVG_LIMIT_PER_CORE,
  OTHERS_LIMIT,
  underLoad,
} from "../bench/load_watch.ts";

Deno.test("a section is under load when others took over a quarter of the CPUs, whatever the bench's own load", () => {
  // Others' share decides where measured: the bench's own load average does not count against it.
  assert.equal(underLoad(OTHERS_LIMIT / 2, 20, 2), false);
  assert.equal(underLoad(OTHERS_LIMIT + 0.01, 0, 2), true);
  // Without the cgroup, the load average before the section, per core.
  assert.equal(underLoad(NaN, 2 * LOADAVG_LIMIT_PER_CORE - 0.01, 2), false);
  assert.equal(underLoad(NaN, 2 * LOADAVG_LIMIT_PER_CORE + 0.01, 2), true);
});

Deno.test("the report's load line says UNRELIABLE for a loaded section, and trusts a quiet one", () => {
  const busy = {
    before: [2, 2, 2],
    after: [3, 2, 2],
    others: 0.6,
    own: 0.3,
    by: "cgroup" as const,
    loaded: true,
  };
  assert.match(
    describeLoad(busy, true),
    /other processes used 60 %.*again after one repeat.*UNRELIABLE/,
  );
  const quiet = describeLoad({ ...busy, others: 0.1, loaded: false }, false);
  assert.match(quiet, /quiet enough to trust/);
  assert.doesNotMatch(quiet, /UNRELIABLE/);
  const fallback = describeLoad({ ...busy, others: NaN, own: NaN, by: "loadavg" }, false);
  assert.match(fallback, /1-minute load over 0.5 per core/);
});
