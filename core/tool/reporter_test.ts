import assert from "node:assert/strict";
import { colour, lettersColour, Reporter } from "./reporter.ts";

const GREEN = "\x1b[32m";
const YELLOW = "\x1b[33m";
const BLUE = "\x1b[34m";
const RED = "\x1b[31m";
const RESET = "\x1b[0m";

function _capture(options: { color?: boolean; quiet?: boolean } = {}) {
  const chunks: string[] = [];
  const reporter = new Reporter({ sink: (t) => chunks.push(t), ...options });
  return { reporter, chunks, text: () => chunks.join("") };
}

Deno.test("Reporter ends a report with a newline by default", () => {
  const { reporter, text } = _capture({ color: false });
  reporter.report("ReadFile", "r", { kind: "progress", message: "step 1" });
  reporter.report("ReadFile", "r", { kind: "progress", message: "step 2" });
  assert.equal(text(), "step 1\nstep 2\n");
});

Deno.test("Reporter with end:'' keeps the line open and the next report continues it", () => {
  const { reporter, text } = _capture({ color: false });
  reporter.report("ReadFile", "r", {
    kind: "start",
    message: "Reading a.txt...",
    options: { end: "" },
  });
  reporter.report("ReadFile", "r", { kind: "result", message: " 12 lines" });
  assert.equal(text(), "Reading a.txt... 12 lines\n");
});

Deno.test("Reporter continues an open line with an error without the 'Error:' prefix", () => {
  const { reporter, text } = _capture({ color: false });
  reporter.report("ReadFile", "r", { kind: "start", message: "Reading...", options: { end: "" } });
  reporter.report("ReadFile", "r", { kind: "error", message: " failed" });
  reporter.report("ReadFile", "r", { kind: "error", message: "on its own line" });
  assert.equal(text(), "Reading... failed\nError: on its own line\n");
});

Deno.test("Reporter prefixes warnings on their own line with 'Warning:'", () => {
  const { reporter, text } = _capture({ color: false });
  reporter.report("T", "", { kind: "warning", message: "slow disk" });
  assert.equal(text(), "Warning: slow disk\n");
});

Deno.test("Reporter colours the start of an 'r' tool green", () => {
  const { reporter, text } = _capture({ color: true });
  reporter.report("ReadFile", "r", { kind: "start", message: "Reading" });
  assert.equal(text(), `${GREEN}Reading${RESET}\n`);
});

Deno.test("Reporter colours the start of an 'rw' or 'x' tool yellow", () => {
  for (const letters of ["rw", "x", "w", "rwxn"]) {
    const { reporter, text } = _capture({ color: true });
    reporter.report("T", letters, { kind: "start", message: "Working" });
    assert.equal(text(), `${YELLOW}Working${RESET}\n`, letters);
  }
});

Deno.test("Reporter colours the start of a tool without letters blue", () => {
  const { reporter, text } = _capture({ color: true });
  reporter.report("Echo", "", { kind: "start", message: "Echoing" });
  assert.equal(text(), `${BLUE}Echoing${RESET}\n`);
});

Deno.test("Reporter colours errors red and leaves progress plain", () => {
  const { reporter, text } = _capture({ color: true });
  reporter.report("T", "r", { kind: "error", message: "bad" });
  reporter.report("T", "r", { kind: "progress", message: "50%" });
  assert.equal(text(), `${RED}Error: bad${RESET}\n50%\n`);
});

Deno.test("Reporter with color:false writes no escape codes for any kind", () => {
  const { reporter, text } = _capture({ color: false });
  for (const kind of ["start", "progress", "result", "error", "warning", "info"] as const) {
    reporter.report("T", "rw", { kind, message: kind });
  }
  reporter.line("host line", "red");
  assert.ok(!text().includes("\x1b["), JSON.stringify(text()));
  assert.equal(
    text(),
    "start\nprogress\nresult\nError: error\nWarning: warning\ninfo\nhost line\n",
  );
});

Deno.test("Reporter.finish() closes an open line, once", () => {
  const { reporter, text } = _capture({ color: false });
  reporter.report("T", "r", { kind: "start", message: "Working", options: { end: "" } });
  reporter.finish();
  reporter.finish();
  assert.equal(text(), "Working\n");
});

Deno.test("Reporter.finish() writes nothing when no line is open", () => {
  const { reporter, text } = _capture({ color: false });
  reporter.report("T", "r", { kind: "start", message: "Done" });
  reporter.finish();
  assert.equal(text(), "Done\n");
});

Deno.test("Reporter.line() closes an open line before writing", () => {
  const { reporter, text } = _capture({ color: false });
  reporter.report("T", "r", { kind: "start", message: "Working", options: { end: "" } });
  reporter.line("host says hi");
  reporter.report("T", "r", { kind: "error", message: "after" });
  assert.equal(text(), "Working\nhost says hi\nError: after\n");
});

Deno.test("Reporter with quiet:true writes nothing at all", () => {
  const { reporter, chunks } = _capture({ quiet: true, color: true });
  reporter.report("T", "r", { kind: "start", message: "Working", options: { end: "" } });
  reporter.report("T", "r", { kind: "error", message: "bad" });
  reporter.line("host line");
  reporter.finish();
  assert.deepEqual(chunks, []);
});

Deno.test("lettersColour maps letters to green, yellow, magenta and blue", () => {
  assert.equal(lettersColour(""), "blue");
  assert.equal(lettersColour("r"), "green");
  assert.equal(lettersColour("rw"), "yellow");
  assert.equal(lettersColour("x"), "yellow");
  assert.equal(lettersColour("n"), "magenta");
  assert.equal(lettersColour("rn"), "magenta");
});

Deno.test("colour wraps text in an ANSI code only when enabled", () => {
  assert.equal(colour("hi", "green", true), `${GREEN}hi${RESET}`);
  assert.equal(colour("hi", "green", false), "hi");
});

const _REPORTER_URL = new URL("./reporter.ts", import.meta.url).href;
const _CHILD = `
import { Reporter } from ${JSON.stringify(_REPORTER_URL)};
const r = new Reporter();
r.report("ReadFile", "r", { kind: "start", message: "Reading", options: { end: "" } });
r.report("ReadFile", "r", { kind: "result", message: " done" });
r.report("WriteFile", "rw", { kind: "error", message: "disk full" });
r.line("host line", "cyan");
r.finish();
`;

/** Run the child script with `noColor` as NO_COLOR (unset when undefined). */
async function _runChild(noColor: string | undefined, force = true) {
  const env = Deno.env.toObject();
  delete env.NO_COLOR;
  delete env.FORCE_COLOR;
  if (noColor !== undefined) env.NO_COLOR = noColor;
  // The child's stderr is a pipe: colour only when forced.
  if (force) env.FORCE_COLOR = "1";
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", _CHILD],
    cwd: new URL("../..", import.meta.url).pathname,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

Deno.test("Reporter honours NO_COLOR and writes to stderr only, never stdout", async () => {
  const { code, stdout, stderr } = await _runChild("1", false);
  assert.equal(code, 0, stderr);
  assert.equal(stdout, "");
  assert.equal(stderr, "Reading done\nError: disk full\nhost line\n");
  assert.ok(!stderr.includes("\x1b["), JSON.stringify(stderr));
});

Deno.test("Reporter colours by default when NO_COLOR is unset, still only on stderr", async () => {
  const { code, stdout, stderr } = await _runChild(undefined);
  assert.equal(code, 0, stderr);
  assert.equal(stdout, "");
  assert.ok(stderr.includes(`${GREEN}Reading${RESET}`), JSON.stringify(stderr));
  assert.ok(stderr.includes(`${RED}Error: disk full${RESET}`), JSON.stringify(stderr));
});

Deno.test("Reporter writes no colour to a stderr that is not a terminal unless FORCE_COLOR says so", async () => {
  const { code, stderr } = await _runChild(undefined, false);
  assert.equal(code, 0, stderr);
  assert.ok(!stderr.includes("\x1b["), JSON.stringify(stderr));
});

Deno.test("Reporter treats an empty NO_COLOR as unset (colour stays on)", async () => {
  const { code, stdout, stderr } = await _runChild("");
  assert.equal(code, 0, stderr);
  assert.equal(stdout, "");
  assert.ok(stderr.includes(`${GREEN}Reading${RESET}`), JSON.stringify(stderr));
});
