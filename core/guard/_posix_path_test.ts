// The sandbox's own POSIX path names give node:path's results: every path of
// up to 6 characters over "/", ".", "a" and "b" (and pairs of shorter ones),
// through each function the guards use.
import assert from "node:assert/strict";
import * as node from "node:path";
import * as own from "./_posix_path.ts";

function* _paths(max: number): Generator<string> {
  const alphabet = ["/", ".", "a", "b"];
  const grow = function* (prefix: string): Generator<string> {
    yield prefix;
    if (prefix.length >= max) return;
    for (const c of alphabet) yield* grow(prefix + c);
  };
  yield* grow("");
}

Deno.test("posix_path matches node:path on every short path", () => {
  const cwd = Deno.cwd();
  for (const p of _paths(6)) {
    for (const f of ["normalize", "dirname", "basename", "isAbsolute"] as const) {
      assert.equal(own[f](p), node[f](p), `${f}(${JSON.stringify(p)})`);
    }
    assert.equal(own.resolve(p), node.resolve(p), `resolve(${JSON.stringify(p)})`);
    assert.equal(own.resolve("/ws/x", p), node.resolve("/ws/x", p), `resolve(/ws/x, ${p})`);
    assert.equal(own.join("/ws", p), node.join("/ws", p), `join(/ws, ${p})`);
    assert.equal(own.join(p, "c"), node.join(p, "c"), `join(${p}, c)`);
  }
  for (const a of _paths(4)) {
    for (const b of _paths(4)) {
      assert.equal(own.relative(a, b), node.relative(a, b), `relative(${a}, ${b})`);
      assert.equal(own.join(a, b), node.join(a, b), `join(${a}, ${b})`);
      assert.equal(own.resolve(a, b), node.resolve(a, b), `resolve(${a}, ${b})`);
    }
  }
  assert.equal(own.resolve(), node.resolve());
  assert.equal(own.join(), node.join());
  assert.equal(own.sep, node.sep);
  assert.equal(Deno.cwd(), cwd);
});
