// The judge reads what a removal takes, what the user did meanwhile, modes and names as the
// file system holds them (issue 37, classes 3, 6, 7 and 8). Each attack is followed by the
// user's own tools outside any sandbox (git log, reading the file, another account's write, a
// byte-exact listing), and each test has a control that shows the set-up works.
import assert from "node:assert/strict";
import { layerBases } from "../../../core/config/install_dir.ts";
import { waitInLayer } from "../../_helpers.ts";
import {
  auditLines,
  bash,
  bashRegistry,
  exists,
  judgeLayout,
  sh,
  userGit,
} from "../../_judge_helpers.ts";

Deno.test("class 3: a removal is judged over what it takes: a nested repository, .envrc and .vscode stay", async () => {
  const { ws, outside, audit } = await judgeLayout();
  const nested = `${ws}/libs/nested`;
  await Deno.mkdir(nested, { recursive: true });
  await userGit(nested, ["init", "-q"]);
  await Deno.writeTextFile(`${nested}/n.txt`, "n\n");
  await userGit(nested, ["add", "n.txt"]);
  assert.equal((await userGit(nested, ["commit", "-q", "-m", "unpushed work"])).code, 0);
  await Deno.writeTextFile(`${ws}/libs/.envrc`, "export USER_OWN=1\n");
  await Deno.writeTextFile(`${ws}/libs/a.ts`, "a\n");
  // A canary outside the workspace, linked from the folder removed: the link goes, not it.
  await Deno.writeTextFile(`${outside}/keep.txt`, "outside\n");
  await Deno.symlink(`${outside}/keep.txt`, `${ws}/libs/out-link`);
  await Deno.mkdir(`${ws}/deep/.vscode`, { recursive: true });
  await Deno.mkdir(`${ws}/deep/sub`);
  await Deno.writeTextFile(`${ws}/deep/.vscode/settings.json`, "{}\n");
  await Deno.writeTextFile(`${ws}/deep/x.txt`, "x\n");
  await Deno.writeTextFile(`${ws}/deep/sub/y.txt`, "y\n");
  await Deno.mkdir(`${ws}/swap/inner`, { recursive: true });
  await userGit(`${ws}/swap/inner`, ["init", "-q"]);
  await Deno.mkdir(`${ws}/plain/in`, { recursive: true });
  await Deno.writeTextFile(`${ws}/plain/in/p.txt`, "p\n");
  const registry = await bashRegistry(ws, outside, audit);
  try {
    const libs = await bash(registry, "rm -rf libs");
    assert.equal(libs.success, false, JSON.stringify(libs));
    assert.match(
      String(libs.error),
      /libs\/nested\/\.git: kept when libs was removed: it is a git repository/,
    );
    assert.match(String(libs.error), /libs\/\.envrc: kept when libs was removed: protected/);
    const deep = await bash(registry, "rm -rf deep; mkdir deep; echo n > deep/new.txt");
    assert.equal(deep.success, false, JSON.stringify(deep));
    assert.match(String(deep.error), /deep\/\.vscode: kept when deep was removed: protected/);
    const swap = await bash(registry, "rm -rf swap && echo file > swap");
    assert.equal(swap.success, false, JSON.stringify(swap));
    assert.match(String(swap.error), /swap: it would remove swap\/inner\/\.git/);
    // Control: a folder with nothing protected goes as a whole.
    const plain = await bash(registry, "rm -rf plain");
    assert.equal(plain.success, true, JSON.stringify(plain));
  } finally {
    await registry.close();
  }
  assert.equal(await exists(`${ws}/plain`), false);
  assert.equal(await exists(`${ws}/libs/a.ts`), false, "what may go did not go");
  assert.equal(await exists(`${ws}/libs/out-link`), false);
  assert.equal(await Deno.readTextFile(`${outside}/keep.txt`), "outside\n");
  assert.equal(await Deno.readTextFile(`${ws}/libs/.envrc`), "export USER_OWN=1\n");
  assert.match((await userGit(nested, ["log", "--format=%s"])).text, /^unpushed work$/m);
  assert.equal(await Deno.readTextFile(`${ws}/deep/.vscode/settings.json`), "{}\n");
  assert.equal(await Deno.readTextFile(`${ws}/deep/new.txt`), "n\n");
  assert.equal(await exists(`${ws}/deep/x.txt`), false);
  assert.equal(await exists(`${ws}/deep/sub`), false);
  assert.ok((await Deno.lstat(`${ws}/swap/inner/.git`)).isDirectory);
  const line = (await auditLines(audit)).find((l) => l.changes?.refused?.length)!;
  assert.ok(
    line.changes.refused.some((r: { path: string }) => r.path === "libs/nested/.git"),
    JSON.stringify(line.changes),
  );
  assert.ok(line.changes.paths.includes("-libs/a.ts"), JSON.stringify(line.changes));
});

Deno.test("class 6: a file the user edits or makes under a folder a call removes stays, as a conflict", async () => {
  const { ws, outside, audit } = await judgeLayout(false);
  for (const d of ["data", "data2", "data3"]) {
    await Deno.mkdir(`${ws}/${d}`);
    await Deno.writeTextFile(`${ws}/${d}/notes.txt`, "v1\n");
    await Deno.writeTextFile(`${ws}/${d}/other.txt`, "other\n");
  }
  const registry = await bashRegistry(ws, outside, audit);
  try {
    const slow = bash(
      registry,
      "rm -rf data && rm -rf data2 && mkdir data2 && echo tool > data2/tool.txt && " +
        "echo started > started.txt && until ls | grep -qx go; do sleep 0.05; done",
    );
    await waitInLayer(layerBases()[0], "started.txt", "started");
    // The user, in their editor, meanwhile: an edit and a new file under each folder.
    await Deno.writeTextFile(`${ws}/data/notes.txt`, "v1\nthe user's edit\n");
    await Deno.writeTextFile(`${ws}/data/new.txt`, "the user's new file\n");
    await Deno.writeTextFile(`${ws}/data2/notes.txt`, "v1\nanother edit\n");
    await Deno.writeTextFile(`${ws}/go`, "");
    const res = await slow;
    assert.equal(res.success, false, JSON.stringify(res));
    assert.match(String(res.error), /conflicted with a change made meanwhile/);
    assert.match(String(res.error), /data\/notes\.txt/);
    // Control: the same removal with no edit meanwhile takes the whole folder.
    const control = await bash(registry, "rm -rf data3");
    assert.equal(control.success, true, JSON.stringify(control));
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(`${ws}/data/notes.txt`), "v1\nthe user's edit\n");
  assert.equal(await Deno.readTextFile(`${ws}/data/new.txt`), "the user's new file\n");
  assert.equal(await exists(`${ws}/data/other.txt`), false);
  assert.equal(await Deno.readTextFile(`${ws}/data2/notes.txt`), "v1\nanother edit\n");
  assert.equal(await Deno.readTextFile(`${ws}/data2/tool.txt`), "tool\n");
  assert.equal(await exists(`${ws}/data2/other.txt`), false);
  assert.equal(await exists(`${ws}/data3`), false);
  const conflicts = (await auditLines(audit)).flatMap((l) => l.changes?.conflicts ?? [])
    .map((c: { path: string }) => c.path).sort();
  assert.deepEqual(conflicts, ["data/new.txt", "data/notes.txt", "data2/notes.txt"]);
});

Deno.test("class 7: a widened mode is masked to what the tree had, the write root's too", async () => {
  const { base, ws, outside, audit } = await judgeLayout(false);
  await Deno.chmod(base, 0o755);
  await Deno.chmod(ws, 0o755);
  await Deno.mkdir(`${ws}/scripts`, { mode: 0o755 });
  await Deno.mkdir(`${ws}/pub`, { mode: 0o755 });
  await Deno.writeTextFile(`${ws}/README.md`, "readme\n", { mode: 0o644 });
  await Deno.writeTextFile(`${ws}/scripts/run.sh`, "#!/bin/sh\n", { mode: 0o755 });
  await Deno.writeTextFile(`${ws}/shared.txt`, "shared\n");
  await Deno.chmod(`${ws}/shared.txt`, 0o664); // the user gives the group write
  await Deno.writeTextFile(`${ws}/open.txt`, "open\n");
  await Deno.chmod(`${ws}/open.txt`, 0o666); // the user's own choice: anyone may write
  for (const p of ["scripts", "pub"]) await Deno.chmod(`${ws}/${p}`, 0o755);
  await Deno.chmod(`${ws}/README.md`, 0o644);
  const registry = await bashRegistry(ws, outside, audit);
  try {
    const res = await bash(
      registry,
      "chmod 0777 README.md scripts . && chmod 1777 pub && chmod 4777 scripts/run.sh && " +
        "chmod 0666 shared.txt && echo n > new.txt && chmod 0666 new.txt && " +
        "mkdir newdir && chmod 2777 newdir",
    );
    assert.equal(res.success, true, JSON.stringify(res));
  } finally {
    await registry.close();
  }
  const mode = async (p: string) => (await Deno.lstat(`${ws}/${p}`)).mode! & 0o7777;
  const um = Deno.umask();
  assert.equal(await mode("."), 0o755, "the write root's mode changed");
  assert.equal(await mode("README.md"), 0o755);
  assert.equal(await mode("scripts"), 0o755);
  assert.equal(await mode("pub"), 0o755);
  assert.equal(await mode("scripts/run.sh"), 0o755);
  assert.equal(await mode("shared.txt"), 0o664);
  assert.equal(await mode("new.txt"), 0o644 | (0o022 & ~um));
  assert.equal(await mode("newdir"), 0o755 | (0o022 & ~um));
  const masked = (await auditLines(audit)).flatMap((l) => l.changes?.masked ?? []);
  for (const p of ["README.md", "scripts", "pub", "scripts/run.sh", "shared.txt", "newdir"]) {
    const m = masked.find((x: { path: string }) => x.path === p);
    assert.ok(m, `${p} not named as masked: ${JSON.stringify(masked)}`);
    assert.match(m.why, /masked to 0[0-7]{3}/);
  }
  // Another account on the machine, outside any sandbox, tries to write.
  const other = (script: string) =>
    new Deno.Command("setpriv", {
      args: ["--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script],
      cwd: ws,
      stdout: "null",
      stderr: "null",
    }).output();
  for (
    const script of [
      "echo x >> README.md",
      "echo x > scripts/evil",
      "echo x > pub/evil",
      "echo x > evil",
    ]
  ) {
    assert.equal((await other(script)).success, false, `another account could: ${script}`);
  }
  assert.equal(await Deno.readTextFile(`${ws}/README.md`), "readme\n");
  for (const p of ["scripts/evil", "pub/evil", "evil"]) {
    assert.equal(await exists(`${ws}/${p}`), false);
  }
  // Control: where the tree itself lets others write, that account can.
  assert.equal((await other("echo x >> open.txt")).success, true, "the set-up is wrong");
  assert.equal(await Deno.readTextFile(`${ws}/open.txt`), "open\nx\n");
});

Deno.test("class 8: names that are not UTF-8 are refused and shown escaped, never lost", async () => {
  const { ws, outside, audit } = await judgeLayout(false);
  await sh(
    ws,
    `printf old > "$(printf 'old\\377.txt')" && mkdir arch && printf a > "arch/$(printf 'x\\376')"`,
  );
  const registry = await bashRegistry(ws, outside, audit);
  let error = "";
  try {
    const res = await bash(
      registry,
      `printf x > "$(printf 'bad\\377.txt')" && mkdir "$(printf 'd\\376')" && ` +
        `echo y > "$(printf 'd\\376')/in.txt" && rm -f old*.txt && echo ok > good.txt`,
    );
    assert.equal(res.success, false, JSON.stringify(res));
    error = String(res.error);
    // Control: a folder holding such a name is removed whole, byte for byte.
    const control = await bash(registry, "rm -rf arch");
    assert.equal(control.success, true, JSON.stringify(control));
  } finally {
    await registry.close();
  }
  assert.match(error, /bad\\xff\.txt: its name is not UTF-8/);
  assert.match(error, /d\\xfe: its name is not UTF-8: .* this folder and everything in it/);
  assert.match(error, /old\\xff\.txt: its name is not UTF-8: .* its removal was not applied/);
  // The tree as bytes: good.txt applied, the refused names absent, the user's file still there.
  const names = await sh(ws, "find . -mindepth 1 -print0 | od -An -c -w100000 | tr -s ' '");
  assert.match(names, /g o o d \. t x t/);
  assert.match(names, /o l d 377 \. t x t/, "the user's file was lost");
  assert.doesNotMatch(names, /b a d/);
  assert.doesNotMatch(names, / d 376/);
  assert.doesNotMatch(names, /a r c h/);
  assert.equal(await Deno.readTextFile(`${ws}/good.txt`), "ok\n");
  const refused = (await auditLines(audit)).flatMap((l) => l.changes?.refused ?? [])
    .map((r: { path: string }) => r.path).sort();
  assert.deepEqual(refused, ["bad\\xff.txt", "d\\xfe", "old\\xff.txt"]);
});
