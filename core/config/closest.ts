/**
 * "Did you mean": the names closest to a misspelt one (edit distance, with
 * a bonus when one contains the other).
 *
 * @module
 */

/**
 * The `count` names of `names` closest to `name` (case-insensitive).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { closestNames } from "./closest.ts";
 * assert.equal(closestNames("count_todo", ["greeting", "count_todos", "dice"], 1)[0], "count_todos");
 * ```
 */
export function closestNames(
  name: string,
  names: string[],
  count = 3,
  maxDistance = Infinity,
): string[] {
  return [...new Set(names)]
    // The lengths alone bound the distance from below: a huge name costs nothing to refuse.
    .filter((n) => Math.abs(n.length - name.length) - 1 <= maxDistance)
    .map((n) => [n, _distance(n.toLowerCase(), name.toLowerCase())] as const)
    .filter(([, d]) => d <= maxDistance)
    .sort((a, b) => a[1] - b[1])
    .slice(0, count)
    .map(([n]) => n);
}

function _distance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0];
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j];
      dp[j] = Math.min(dp[j] + 1, dp[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length] - (a.includes(b) || b.includes(a) ? 1 : 0);
}
