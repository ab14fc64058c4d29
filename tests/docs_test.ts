/**
 * The docs say only what corral does: every `corral` command and flag that
 * README.md and docs/ name (in code, fenced or inline) is one `corral help`
 * lists, and every link between them resolves, to a file and, where it
 * names one, to a heading of it.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runCli } from "./_helpers.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The Markdown files a newcomer reads: the README and docs/. */
async function docFiles(): Promise<string[]> {
  const out = [join(ROOT, "README.md")];
  for await (const e of Deno.readDir(join(ROOT, "docs"))) {
    if (e.isFile && e.name.endsWith(".md")) out.push(join(ROOT, "docs", e.name));
  }
  return out.sort();
}

/** The code a Markdown text holds: each line of a fenced block, each inline span. */
function codeOf(text: string): Array<{ code: string; line: number }> {
  const out: Array<{ code: string; line: number }> = [];
  let fenced = false;
  text.split("\n").forEach((l, i) => {
    if (/^\s*(```|~~~)/.test(l)) return void (fenced = !fenced);
    if (fenced) return void out.push({ code: l.replace(/(^|\s)#.*$/, ""), line: i + 1 });
    for (const m of l.matchAll(/(`+)([^`].*?)\1/g)) out.push({ code: m[2], line: i + 1 });
  });
  return out;
}

/**
 * Each `corral …` run in `code`: its words up to a shell separator, and
 * whether `code` is a command line (it begins with corral, or with the
 * deno task that runs it), so that its first word is the command.
 */
function corralRuns(code: string): Array<{ words: string[]; line: boolean }> {
  const out: Array<{ words: string[]; line: boolean }> = [];
  const line = /^\s*(\$\s+)?((npx -y deno@\S+|deno) task (--quiet )?)?corral\s/.test(code);
  for (const m of code.matchAll(/(?:^|[\s"'(=])corral((?:[ \t]+[^\s|;&<>#)`]+)*)/g)) {
    out.push({ words: m[1].trim().split(/\s+/).filter(Boolean), line });
  }
  return out;
}

interface _Help {
  commands: Set<string>;
  text: string;
}

async function help(): Promise<_Help> {
  const r = await runCli(["help"]);
  assert.equal(r.code, 0, r.stderr);
  const commands = new Set<string>();
  for (const m of r.stdout.matchAll(/^ {2}corral ([a-z][\w-]*)/gm)) commands.add(m[1]);
  return { commands, text: r.stdout };
}

/** The flags that take a value (the word after them is no command). */
const _VALUED = /^--(toolset|permissions|config|workspace|timeout|audit|ca-file|http|token|args)$/;

/** What is wrong with one `corral` run the docs show, if anything. */
function checkRun(run: { words: string[]; line: boolean }, h: _Help): string[] {
  const wrong: string[] = [];
  const words = run.words;
  let i = 0;
  while (i < words.length && words[i].startsWith("-")) i += _VALUED.test(words[i]) ? 2 : 1;
  const command = words[i];
  // A command: a lower-case word (placeholders such as NAME or FILE are upper case).
  if (run.line && command && /^[a-z][\w-]*$/.test(command) && !h.commands.has(command)) {
    wrong.push(`command "${command}"`);
  }
  for (let j = 0; j < words.length; j++) {
    const flag = words[j].match(/^(--?[A-Za-z][\w-]*)/)?.[1];
    // corral harness FILE ARGS: what follows the tool's file is the tool's own flags.
    if (command === "harness" && j > i && !flag && !/^--/.test(words[j - 1] ?? "")) break;
    if (!flag) continue;
    const listed = new RegExp(`(^|[\\s,\\[|(])${flag.replace(/-/g, "\\-")}(?![\\w-])`, "m");
    if (!listed.test(h.text)) wrong.push(`flag "${flag}"`);
  }
  return wrong;
}

Deno.test("every corral command and flag the docs name is one corral help lists", async () => {
  const h = await help();
  assert.ok(h.commands.has("call") && h.commands.has("mcp"), [...h.commands].join(" "));
  const wrong: string[] = [];
  let runs = 0;
  for (const file of await docFiles()) {
    for (const { code, line } of codeOf(await Deno.readTextFile(file))) {
      for (const run of corralRuns(code)) {
        runs++;
        for (const w of checkRun(run, h)) {
          wrong.push(`${relative(ROOT, file)}:${line}: ${w} (in "corral ${run.words.join(" ")}")`);
        }
      }
    }
  }
  assert.ok(runs > 20, `only ${runs} corral command lines found in the docs`);
  assert.deepEqual(wrong, []);
});

Deno.test("the docs check catches a command and a flag corral does not have", async () => {
  const h = await help();
  const run = (code: string) => corralRuns(code)[0];
  assert.deepEqual(checkRun(run("corral mcp --http 8080"), h), []);
  assert.deepEqual(checkRun(run("corral lsit --jsno"), h), ['command "lsit"', 'flag "--jsno"']);
  assert.deepEqual(checkRun(run("corral --toolset net lsit"), h), ['command "lsit"']);
  // In a message, the word after corral is prose; its flags are still corral's.
  assert.deepEqual(checkRun(run("start corral with -w --nope"), h), ['flag "--nope"']);
  assert.deepEqual(checkRun(run("corral harness t.ts --config c.json x --markers A"), h), []);
  assert.deepEqual(run("deno task corral call X --args '{}' | jq ."), {
    words: ["call", "X", "--args", "'{}'"],
    line: true,
  });
});

/** The anchors a Markdown file's headings make (GitHub's way). */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const l of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(l)) fenced = !fenced;
    const m = !fenced && l.match(/^#{1,6}\s+(.*?)\s*#*$/);
    if (!m) continue;
    const slug = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

Deno.test("every link of the docs resolves, to a file and to its heading", async () => {
  const broken: string[] = [];
  let links = 0;
  for (const file of [...(await docFiles()), join(ROOT, "ARCHITECTURE.md")]) {
    const text = await Deno.readTextFile(file);
    const body = text.replace(/^\s*```[\s\S]*?^\s*```/gm, "");
    for (const m of body.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      links++;
      const [path, anchor] = target.split("#");
      const abs = path ? resolve(dirname(file), path) : file;
      const there = await Deno.stat(abs).then(() => true, () => false);
      if (!there) {
        broken.push(`${relative(ROOT, file)}: ${target} (no such file)`);
        continue;
      }
      if (anchor && abs.endsWith(".md") && !anchors(await Deno.readTextFile(abs)).has(anchor)) {
        broken.push(`${relative(ROOT, file)}: ${target} (no such heading)`);
      }
    }
  }
  assert.ok(links > 0, "no links found");
  assert.deepEqual(broken, []);
});
