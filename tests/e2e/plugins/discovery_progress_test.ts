// A discovery that takes more than a second shows a progress line on stderr when stderr is a
// terminal (core/registry/_discovery_progress.ts), and nothing when it is a pipe. Nothing is timed
// here: the plugin sleeps 1.5 s at import, so its discovery cannot take less than a second.
// `script` (util-linux, in every Debian) gives the command its pseudo-terminal.
import assert from "node:assert/strict";
import { HOST_PERMISSION_FLAGS } from "../../../core/sandbox/host_flags.ts";
import { ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const SLOW = `await new Promise((r) => setTimeout(r, 1500));\n` +
  `export const TOOL_CONFIGS = [{ name: "SlowStart", description: "slow", function: () => "x" }];\n`;

const _quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

Deno.test("a discovery longer than a second shows a progress line on a terminal, none on a pipe", async () => {
  const { base, ws } = await tempLayout();
  await Deno.mkdir(`${base}/tools`);
  await Deno.writeTextFile(`${base}/tools/slow.ts`, SLOW);
  const env = (cache: string) => ({
    NO_COLOR: "1",
    CORRAL_TOOL_DIRS: `${base}/tools`,
    CORRAL_CONFIG_DIR: `${base}/config`,
    CORRAL_CACHE_DIR: `${base}/${cache}`,
  });

  // On a terminal: stderr is the pseudo-terminal (recorded in `typescript`), stdout a file.
  const json = `${base}/list.json`, typescript = `${base}/typescript`;
  const command = [Deno.execPath(), "run", ...HOST_PERMISSION_FLAGS, `${ROOT}main.ts`, "list"]
    .map(_quote).join(" ") + ` --json > ${_quote(json)}`;
  const tty = await new Deno.Command("script", {
    args: ["-qec", command, typescript],
    cwd: ws,
    env: env("cache_tty"),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(tty.code, 0, new TextDecoder().decode(tty.stderr));
  const listed = JSON.parse(await Deno.readTextFile(json)) as Array<
    { name: string; status: string }
  >;
  assert.equal(listed.find((t) => t.name === "SlowStart")?.status, "loaded");
  const screen = await Deno.readTextFile(typescript);
  // Built-ins and the plugin: 11 modules to import with an empty cache; the line is cleared at the end.
  // deno-lint-ignore no-control-regex
  assert.match(screen, /\r\x1b\[2Kdiscovering tools: \d+ of 11 modules/);
  assert.ok(screen.lastIndexOf("\r\x1b[2K") > screen.lastIndexOf("discovering tools"));

  // On a pipe: the same discovery, no line.
  const piped = await runCli(["list", "--json"], { cwd: ws, env: env("cache_pipe") });
  assert.equal(piped.code, 0, piped.stderr);
  assert.ok(JSON.parse(piped.stdout).some((t: { name: string }) => t.name === "SlowStart"));
  assert.doesNotMatch(piped.stderr, /discovering tools/);
});
