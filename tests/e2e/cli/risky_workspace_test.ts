// A workspace that puts the user's machine in a tool's reach (issue 27): HOME,
// `/`, a folder above HOME, a folder on PATH, a folder holding corral's
// installed command, config or cache. Refused with the one flag that accepts
// it; accepted, the installed command and what PATH runs stay out of reach.
import assert from "node:assert/strict";
import { denoDir } from "../../../core/base/mod.ts";
import { runCli } from "../../_helpers.ts";

/** A home folder with an installed corral (shim and config), `~/.local/bin` on PATH. */
async function _home() {
  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_home_" }));
  await Deno.mkdir(`${home}/.deno/bin/.corral`, { recursive: true });
  await Deno.mkdir(`${home}/.local/bin`, { recursive: true });
  await Deno.writeTextFile(`${home}/.deno/bin/corral`, "#!/bin/sh\necho the real corral\n", {
    mode: 0o755,
  });
  await Deno.writeTextFile(`${home}/.deno/bin/.corral/deno.json`, '{"imports":{}}\n');
  await Deno.writeTextFile(`${home}/.bashrc`, "# mine\n");
  await Deno.writeTextFile(`${home}/notes.txt`, "hello\n");
  const env = {
    HOME: home,
    PATH: `${home}/.local/bin:${home}/.deno/bin:/usr/local/bin:/usr/bin:/bin`,
    DENO_DIR: denoDir(),
    CORRAL_CONFIG_DIR: `${home}/.config/corral`,
    CORRAL_CACHE_DIR: `${home}/.cache/corral`,
  };
  return { home, env };
}

Deno.test("HOME, / and a folder on PATH are refused as workspaces, naming --unsafe-workspace", async () => {
  const { home, env } = await _home();
  for (const ws of [home, "/", `${home}/.local/bin`, `${home}/.deno`]) {
    const res = await runCli(["list", "--workspace", ws], { env });
    assert.equal(res.code, 2, `${ws}: ${res.stderr}`);
    assert.match(res.stderr, /--unsafe-workspace/, ws);
    assert.match(
      res.stderr,
      /home folder|root folder|on your PATH|corral's installed command/,
      `${ws}: ${res.stderr}`,
    );
  }
  // From HOME itself, without --workspace.
  const here = await runCli(["list"], { env, cwd: home });
  assert.equal(here.code, 2, here.stderr);
  assert.match(here.stderr, /your home folder .*--unsafe-workspace/s);
  // A project folder inside HOME is fine.
  await Deno.mkdir(`${home}/project`);
  const ok = await runCli(["list", "--workspace", `${home}/project`, "-r"], { env });
  assert.equal(ok.code, 0, ok.stderr);
});

Deno.test("--unsafe-workspace accepts HOME, and the installed command, rc files and PATH stay out of reach", async () => {
  const { home, env } = await _home();
  const shim = await Deno.readTextFile(`${home}/.deno/bin/corral`);
  const code = [
    "echo 'echo pwned' > .deno/bin/corral",
    'echo \'{"imports":{"zod":"https://evil"}}\' > .deno/bin/.corral/deno.json',
    "printf '#!/bin/sh\\necho pwned\\n' > .local/bin/git && chmod +x .local/bin/git",
    "echo 'echo pwned' >> .bashrc",
    "echo fine > notes2.txt",
  ].join("; ");
  const res = await runCli([
    "call",
    "--unsafe-workspace",
    "--workspace",
    home,
    "-r",
    "-w",
    "-x",
    "RunBashCode",
    "--args",
    JSON.stringify({ code }),
  ], { env });
  assert.equal(res.code, 1, res.stdout + res.stderr);
  assert.match(res.stderr, /Warning: the workspace .* is your home folder/);
  const out = JSON.parse(res.stdout);
  const error = out.error as string;
  // The installed command is bound read-only in the sandbox (it is in the trust base).
  assert.match(out.stderr, /\.deno\/bin\/corral: Read-only file system/);
  assert.match(error, /a folder on the user's PATH/);
  assert.match(error, /\.bashrc: protected/);
  assert.equal(await Deno.readTextFile(`${home}/.deno/bin/corral`), shim);
  assert.equal(await Deno.readTextFile(`${home}/.deno/bin/.corral/deno.json`), '{"imports":{}}\n');
  assert.equal(await Deno.readTextFile(`${home}/.bashrc`), "# mine\n");
  assert.deepEqual([...Deno.readDirSync(`${home}/.local/bin`)], []);
  assert.equal(await Deno.readTextFile(`${home}/notes2.txt`), "fine\n");
  // The layers of that sandbox were never in HOME (a folder of corral's elsewhere took them).
  assert.equal(
    await Deno.stat(`${home}/.cache/corral/layers/sandboxes`).then(() => true, () => false),
    false,
  );
});
