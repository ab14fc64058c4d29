import assert from "node:assert/strict";
import { PLANTED_DEFAULT_ENTRIES } from "../guard/planted.ts";
import { treeRepos } from "./_git_dirs.ts";
import { hooksFacts } from "./hooks_folders.ts";
import type { LayerOp } from "./_layer_diff.ts";
import { LayerJudge, type ViewBase } from "./_layer_judge.ts";
import { listRaw } from "./_raw_list.ts";
import { walkUpper } from "./_upper_walk.ts";

async function _git(cwd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("git", { args, cwd, stdout: "null", stderr: "null" }).output();
  assert.ok(out.success, `git ${args.join(" ")}`);
}

async function _sh(cwd: string, script: string): Promise<void> {
  const out = await new Deno.Command("sh", { args: ["-c", script], cwd }).output();
  assert.ok(out.success, script);
}

/** A root, its upper layer, and a judge over them. */
async function _layer(view: ViewBase = { base: () => undefined, epoch: 0 }) {
  const root = await Deno.realPath(await Deno.makeTempDir());
  const upper = await Deno.realPath(await Deno.makeTempDir());
  const judge = () =>
    LayerJudge.start(root, upper, {
      rules: {
        workspace: root,
        entries: PLANTED_DEFAULT_ENTRIES,
        trust: [],
        pathDirs: [],
        grantPaths: [root],
      },
      view,
      env: { home: `${root}/.nohome`, system: `${root}/.nosystem` },
      shown: (abs) => abs.slice(root.length + 1),
    });
  const op = (rel: string, kind: LayerOp["kind"], mode = 0o644): LayerOp => ({
    rel,
    abs: `${root}/${rel}`,
    upper: `${upper}/${rel}`,
    kind,
    entry: { rel, kind: "file", ino: 1, size: 0, mtimeMs: 0, birthMs: 0, mode },
  });
  const verdicts = async (ops: LayerOp[]) => {
    const j = await judge();
    await j.prepare(ops);
    return await Promise.all(ops.map((o) => j.judge(o)));
  };
  return { root, upper, op, verdicts };
}

Deno.test("the user's config: XDG, GIT_CONFIG_GLOBAL and includes of any condition are read by git", async () => {
  const d = await Deno.realPath(await Deno.makeTempDir());
  await Deno.mkdir(`${d}/xdg/git`, { recursive: true });
  await Deno.writeTextFile(
    `${d}/xdg/git/config`,
    '[includeIf "gitdir:/nowhere/"]\n\tpath = x.inc\n',
  );
  await Deno.writeTextFile(`${d}/xdg/git/x.inc`, "[core]\n\thooksPath = .xdghooks\n");
  await Deno.writeTextFile(`${d}/global`, "[include]\n\tpath = ~/g.inc\n");
  await Deno.writeTextFile(`${d}/g.inc`, "[core]\n\thooksPath = /abs/hooks\n");
  await Deno.mkdir(`${d}/repo`);
  await _git(`${d}/repo`, "init", "-q");
  const env = { home: d, xdgConfigHome: `${d}/xdg`, global: `${d}/global`, system: `${d}/none` };
  const f = await hooksFacts(await treeRepos(`${d}/repo`), env);
  assert.ok(f.folders.includes(`${d}/repo/.xdghooks`), JSON.stringify(f.folders));
  assert.ok(f.folders.includes("/abs/hooks"));
  assert.ok(f.configFiles.includes(`${d}/xdg/git/x.inc`));
  assert.deepEqual(f.userValues.map((v) => v.value).sort(), [".xdghooks", "/abs/hooks"]);
});

Deno.test("repositories: a submodule's gitfile, a bare one, and one above the root are found", async () => {
  const d = await Deno.realPath(await Deno.makeTempDir());
  await _git(d, "init", "-q", "top");
  await _git(d, "init", "-q", "--bare", "top/store.git");
  await Deno.mkdir(`${d}/top/.git/modules/lib`, { recursive: true });
  await _git(`${d}/top/.git/modules/lib`, "init", "-q", "--bare");
  await Deno.mkdir(`${d}/top/libs/lib`, { recursive: true });
  await Deno.writeTextFile(`${d}/top/libs/lib/.git`, "gitdir: ../../.git/modules/lib\n");
  await Deno.writeTextFile(
    `${d}/top/.git/modules/lib/config`,
    "[core]\n\tbare = false\n\thooksPath = .husky\n",
  );
  const repos = await treeRepos(`${d}/top/libs`);
  assert.deepEqual(repos.map((r) => r.top).sort(), [`${d}/top`, `${d}/top/libs/lib`]);
  const f = await hooksFacts(repos, { system: `${d}/none` });
  assert.ok(f.folders.includes(`${d}/top/libs/lib/.husky`), JSON.stringify(f.folders));
  const all = await treeRepos(`${d}/top`);
  assert.ok(all.some((r) => r.gitDir === `${d}/top/store.git` && r.top === r.gitDir));
});

Deno.test("a link inside a git folder, or leading into one, is refused; an ordinary one is not", async () => {
  const { root, upper, op, verdicts } = await _layer();
  await _git(root, "init", "-q");
  await Deno.mkdir(`${upper}/.git`);
  await Deno.symlink("../evil", `${upper}/.git/config`);
  await Deno.symlink(".git", `${upper}/g`);
  await Deno.symlink("g/hooks/pre-commit", `${upper}/pc`);
  await Deno.symlink("README", `${upper}/ok`);
  const [cfg, g, pc, ok] = await verdicts([
    op(".git/config", "symlink"),
    op("g", "symlink"),
    op("pc", "symlink"),
    op("ok", "symlink"),
  ]);
  assert.match(cfg.refuse!, /a link inside a git folder/);
  assert.match(g.refuse!, /leads to \.git/);
  assert.match(pc.refuse!, /leads to \.git\/hooks\/pre-commit/);
  assert.equal(ok.refuse, undefined);
});

Deno.test("a folder made a git directory is judged with the config the tree holds; git init is not", async () => {
  const { root, upper, op, verdicts } = await _layer();
  await Deno.mkdir(`${root}/lib`);
  await Deno.writeTextFile(`${root}/lib/config`, "[core]\n\tfsmonitor = touch x\n");
  for (const dir of ["lib", "fresh"]) {
    await Deno.mkdir(`${upper}/${dir}/objects`, { recursive: true });
    await Deno.mkdir(`${upper}/${dir}/refs`);
    await Deno.writeTextFile(`${upper}/${dir}/HEAD`, "ref: refs/heads/main\n");
  }
  await Deno.writeTextFile(`${upper}/fresh/config`, "[core]\n\tbare = true\n");
  const [head, refs, freshHead, freshConfig] = await verdicts([
    op("lib/HEAD", "write"),
    op("lib/refs", "dir"),
    op("fresh/HEAD", "write"),
    op("fresh/config", "write"),
  ]);
  assert.match(head.refuse!, /it would make lib a git repository .*core\.fsmonitor/);
  assert.match(refs.refuse!, /part of making lib a git repository/);
  assert.equal(freshHead.refuse, undefined);
  assert.equal(freshHead.ref, true, "HEAD of a repository is judged as a ref");
  assert.equal(freshConfig.refuse, undefined);
});

Deno.test("a folder made again hides what the tree held below it, at every depth; the user's changes stay", async () => {
  const view = { base: () => undefined, epoch: 0 };
  const { root, upper, op, verdicts } = await _layer(view);
  await Deno.mkdir(`${root}/deep/sub`, { recursive: true });
  await Deno.mkdir(`${root}/deep/.claude`);
  for (const f of ["deep/old.txt", "deep/sub/old.txt", "deep/.claude/settings.json"]) {
    await Deno.writeTextFile(`${root}/${f}`, "x");
  }
  // The sandbox's view begins after those, before the user's edit.
  view.epoch = Date.now() + 200;
  while (Date.now() <= view.epoch + 50) await new Promise((r) => setTimeout(r, 20));
  await Deno.writeTextFile(`${root}/deep/sub/edited.txt`, "the user's"); // changed since the view
  await Deno.mkdir(`${upper}/deep/sub`, { recursive: true });
  await Deno.writeTextFile(`${upper}/deep/sub/new.txt`, "n");
  const [prune] = await verdicts([op("deep", "prune")]);
  assert.deepEqual(prune.apply.map((o) => `${o.kind}:${o.rel}`).sort(), [
    "remove:deep/old.txt",
    "remove:deep/sub/old.txt",
  ]);
  assert.ok(prune.apply.every((o) => o.judged));
  assert.deepEqual(prune.kept.map((k) => k.abs), [`${root}/deep/.claude`]);
  assert.deepEqual(prune.conflicts, [`${root}/deep/sub/edited.txt`]);
});

Deno.test("a mode is masked to the tree's, and a new path's to the umask", async () => {
  const { root, upper, op, verdicts } = await _layer();
  await Deno.writeTextFile(`${root}/a.txt`, "a", { mode: 0o644 });
  await Deno.chmod(`${root}/a.txt`, 0o644);
  await Deno.writeTextFile(`${upper}/a.txt`, "a");
  const [a, dir] = await verdicts([op("a.txt", "write", 0o4777), op("d", "dir", 0o1777)]);
  assert.equal(a.apply[0].mode, 0o755);
  assert.match(a.masked!, /mode 04777 masked to 0755/);
  assert.equal(dir.apply[0].mode! & 0o7000, 0);
  assert.equal(dir.apply[0].mode! & 0o002, 0);
});

Deno.test("a file git includes as config is judged by content", async () => {
  const { root, upper, op, verdicts } = await _layer();
  await _git(root, "init", "-q");
  await _git(root, "config", "include.path", "../shared.gitconfig");
  await Deno.writeTextFile(`${upper}/shared.gitconfig`, "[core]\n\tfsmonitor = touch x\n");
  await Deno.writeTextFile(`${upper}/other.cfg`, "[core]\n\tfsmonitor = touch x\n");
  const [shared, other] = await verdicts([
    op("shared.gitconfig", "write"),
    op("other.cfg", "write"),
  ]);
  assert.match(shared.refuse!, /core\.fsmonitor/);
  assert.equal(other.refuse, undefined);
});

Deno.test("names that are not UTF-8 are listed by bytes and refused, shown escaped", async () => {
  const upper = await Deno.makeTempDir();
  await _sh(
    upper,
    `printf x > "$(printf 'bad\\377.txt')"; mkdir "$(printf 'd\\376')"; echo ok > good`,
  );
  const raw = await listRaw(upper);
  assert.deepEqual(raw.filter((e) => !e.utf8).map((e) => e.rel).sort(), ["bad\\xff.txt", "d\\xfe"]);
  const entries = await walkUpper(upper);
  const odd = entries.filter((e) => e.notUtf8).map((e) => `${e.notUtf8}:${e.rel}`).sort();
  assert.deepEqual(odd, ["entry:bad\\xff.txt", "folder:d\\xfe"]);
  assert.ok(entries.some((e) => e.rel === "good" && e.kind === "file"));
});

Deno.test("found by the property test: a git directory or a protected folder keeps its mode; another folder may narrow it", async () => {
  const { root, upper, op, verdicts } = await _layer();
  await _git(root, "init", "-q");
  await Deno.mkdir(`${root}/.vscode`);
  await Deno.mkdir(`${root}/src`);
  for (const d of [".git", ".config", "src"]) await Deno.mkdir(`${upper}/${d}`, { mode: 0o700 });
  await Deno.mkdir(`${root}/.config`);
  for (const d of [".git", ".config", "src"]) {
    await Deno.chmod(`${root}/${d}`, 0o755);
    await Deno.chmod(`${upper}/${d}`, 0o700);
  }
  const [git, config, src] = await verdicts([
    op(".git", "dir", 0o700),
    op(".config", "dir", 0o700),
    op("src", "dir", 0o700),
  ]);
  assert.equal(git.apply[0].mode, 0o755);
  assert.match(git.masked!, /keeps its mode/);
  assert.equal(config.apply[0].mode, 0o755, "a folder on the way to .config/git/");
  assert.equal(src.apply[0].mode, 0o700);
  assert.equal(src.apply[0].treeMode, 0o755, "its change of mode is counted");
});
