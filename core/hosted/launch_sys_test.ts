import assert from "node:assert/strict";
import { parsePolicy } from "../config/policy.ts";
import { serverEntries } from "../config/server_config.ts";
import { launchServer } from "./launch.ts";

Deno.test("sys is refused for a server that is not run by Deno, naming the entry", async () => {
  const ws = await Deno.makeTempDir();
  try {
    const policy = parsePolicy(
      JSON.stringify({ servers: { cmd: { jail: "off", sys: ["hostname"] } } }),
      "/cfg/permissions.json",
      ws,
    ).server("cmd");
    const [entry] = serverEntries({ cmd: { command: ["/bin/true"] } }, "/cfg/corral.json");
    const grant = { read: [], write: [], run: [], net: [] };
    await assert.rejects(
      launchServer({ entry, grant, policy, workspace: ws }),
      /"sys" in servers\.cmd of \S*permissions\.json applies only to npm servers/,
    );
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});
