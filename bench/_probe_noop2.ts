import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { parsePolicy } from "../core/config/policy.ts";
const n = Number(Deno.args[0] ?? 3000);
const policy = parsePolicy(
  JSON.stringify({ toolsets: { noop: { isolation: "process", jail: "off" } } }),
  "p.json",
  "/tmp/p/mws",
);
const registry = await Registry.create({
  workspace: "/tmp/p/mws",
  policy,
  noBuiltins: true,
  cacheDir: null,
  bwrap: null,
  reporter: new Reporter({ sink: () => {}, color: false }),
  sources: [{
    id: "noop",
    kind: "builtin",
    modules: [new URL("./noop_tools.ts", import.meta.url).pathname],
    policy: policy.toolset("noop"),
  }],
});
for (let i = 0; i < 300; i++) await registry.call("Noop", {});
const t: number[] = [];
for (let i = 0; i < n; i++) {
  const s = performance.now();
  await registry.call("Noop", {});
  t.push(performance.now() - s);
}
t.sort((a, b) => a - b);
console.log(
  "noop p50",
  (t[n >> 1] * 1000).toFixed(0),
  "us p99",
  (t[Math.floor(n * 0.99)] * 1000).toFixed(0),
);
await registry.close();
