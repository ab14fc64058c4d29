// A session that ends while its hosted server is still starting (a call cancelled during
// the start, then the session closed: the soak's own path, bench/soak.ts) takes the server
// with it: the start sees it was stopped, kills what it launched, and the session's end
// resolves only once that process is gone. Before, the start finished after the stop and
// kept a server (and its sandbox, cgroup and layers) that no session owned any more.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Registry } from "../../../core/registry/registry.ts";
import { fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import { approve, type HostedLayout, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";

const FIXTURE = join(HOSTED_FIXTURES, "hostile_server.ts");
const SERVERS = {
  hostile: { command: fixtureServer(FIXTURE) },
};

async function _approved(l: HostedLayout): Promise<Registry> {
  const first = await hostedRegistry(l, SERVERS, { hostile: { read: ["."] } });
  await approve(first.registry, "hostile");
  await first.registry.close();
  return (await hostedRegistry(l, SERVERS, { hostile: { read: ["."] } })).registry;
}

/**
 * The processes of this layout's servers, among this process's descendants: those that
 * run in its workspace (the server, its namespace's bwrap), and the bwrap above them.
 * Test files running in parallel share this process: another file's are not counted.
 */
function _servers(l: HostedLayout): number[] {
  const kids = new Map<number, number[]>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const st = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
      kids.set(ppid, [...(kids.get(ppid) ?? []), Number(e.name)]);
    } catch { /* gone */ }
  }
  const read = (f: () => string) => {
    try {
      return f();
    } catch {
      return ""; // gone, or a zombie
    }
  };
  const out: number[] = [];
  const walk = (p: number): boolean => {
    let any = false;
    for (const k of kids.get(p) ?? []) {
      const below = walk(k);
      const here = read(() => Deno.readLinkSync(`/proc/${k}/cwd`)).startsWith(l.base);
      const server = read(() => Deno.readTextFileSync(`/proc/${k}/cmdline`))
        .includes("hostile_server.ts");
      if (here || (below && server)) out.push(k);
      any ||= here || below;
    }
    return any;
  };
  walk(Deno.pid);
  return out;
}

Deno.test("hosted stop: a session that ends while its server starts leaves no server running", async () => {
  await using l = await hostedLayout();
  const registry = await _approved(l);
  try {
    // The control: a started server is seen, and ending its session removes it.
    const ok = await registry.call("whoami", {}, { principal: "s1" });
    assert.equal(ok.success, true, JSON.stringify(ok));
    assert.ok(_servers(l).length > 0, "the control saw no server process");
    await registry.endPrincipal("s1");
    assert.deepEqual(_servers(l), [], "ending a session left its started server");

    // The attack: the session ends once the server's process exists, before it answered.
    const call = registry.call("whoami", {}, { principal: "s2" });
    for (let i = 0; i < 2000 && _servers(l).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 2));
    }
    assert.ok(_servers(l).length > 0, "the server never started");
    await registry.endPrincipal("s2");
    assert.deepEqual(_servers(l), [], "a server stopped while starting still runs");
    const r = await call;
    // The window was hit: the call failed because its server was stopped while starting.
    assert.equal(r.success, false, JSON.stringify(r));
    assert.match(String(r.error), /stopped while starting/, JSON.stringify(r));
    // Nothing started late either.
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(_servers(l), []);
  } finally {
    await registry.close();
  }
});
