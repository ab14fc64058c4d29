import assert from "node:assert/strict";
import { join } from "node:path";
import {
  collectTools,
  invokeTool,
  testContext,
  type ToolDefinition,
  type ToolResult,
} from "../../core/tool/mod.ts";
import * as createFile from "./create_file.ts";
import * as deleteFile from "./delete_file.ts";
import * as listFiles from "./list_files.ts";
import * as moveFile from "./move_file.ts";
import * as readFile from "./read_file.ts";
import * as replaceText from "./replace_text_in_file.ts";
import * as searchText from "./search_text.ts";
import * as wordCount from "./word_count.ts";

async function _tool(ns: Record<string, unknown>): Promise<ToolDefinition> {
  const { tools, problems } = await collectTools(ns);
  assert.deepEqual(problems, []);
  assert.equal(tools.length, 1);
  return tools[0];
}

const ReadFile = await _tool(readFile);
const CreateFile = await _tool(createFile);
const ListFiles = await _tool(listFiles);
const DeleteFile = await _tool(deleteFile);
const MoveFile = await _tool(moveFile);
const WordCount = await _tool(wordCount);
const SearchText = await _tool(searchText);
const ReplaceTextInFile = await _tool(replaceText);

interface _Env {
  ws: string;
  outside: string;
  call(def: ToolDefinition, args: Record<string, unknown>): Promise<ToolResult>;
}

/** A temp workspace and a temp folder outside it with secret.txt. */
async function _withWorkspace(fn: (env: _Env) => Promise<void>): Promise<void> {
  const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-ws-" }));
  const outside = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-out-" }));
  await Deno.writeTextFile(join(outside, "secret.txt"), "top secret\n");
  try {
    await fn({
      ws,
      outside,
      call: (def, args) => invokeTool(def, args, testContext({ workspace: ws })),
    });
  } finally {
    await Deno.remove(ws, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
}

function _denied(res: ToolResult, tool: string, outside: string): void {
  assert.equal(res.success, false);
  assert.match(res.error!, new RegExp(`^Cannot run tool "${tool}": permission denied: `));
  assert.ok(!res.error!.includes(`${outside}/`), `error leaks the host path: ${res.error}`);
  assert.ok(!JSON.stringify(res).includes("top secret"), "the outside file was read");
}

Deno.test("file tools declare the least permission letters", () => {
  assert.equal(ReadFile.permissions, "r");
  assert.equal(ListFiles.permissions, "r");
  assert.equal(WordCount.permissions, "r");
  assert.equal(SearchText.permissions, "r");
  assert.equal(CreateFile.permissions, "rw");
  assert.equal(DeleteFile.permissions, "rw");
  assert.equal(MoveFile.permissions, "rw");
  assert.equal(ReplaceTextInFile.permissions, "rw");
  assert.equal(DeleteFile.confirm, true);
});

Deno.test("every file tool parameter has a description", async () => {
  const { inputJsonSchema } = await import("../../core/tool/input_schema.ts");
  for (
    const def of [
      ReadFile,
      CreateFile,
      ListFiles,
      DeleteFile,
      MoveFile,
      WordCount,
      SearchText,
      ReplaceTextInFile,
    ]
  ) {
    const props = inputJsonSchema(def.input).properties as Record<string, { description?: string }>;
    for (const [key, prop] of Object.entries(props)) {
      assert.ok(
        prop.description && prop.description.length > 5,
        `${def.name}.${key} lacks a description`,
      );
    }
  }
});

// ReadFile

Deno.test("ReadFile returns a range of lines, the total count and echoes the path", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "one\ntwo\nthree\nfour\n");
    const all = await call(ReadFile, { filepath: "a.txt" });
    assert.equal(all.success, true);
    assert.equal(all.content, "one\ntwo\nthree\nfour");
    assert.equal(all.total_lines, 4);
    assert.equal(all.filepath, "a.txt");
    const part = await call(ReadFile, { filepath: "a.txt", start_line: 2, max_lines: 2 });
    assert.equal(part.content, "two\nthree");
    assert.equal(part.start_line, 2);
    assert.equal(part.end_line, 3);
    assert.equal(part.more, true);
  }));

Deno.test("ReadFile says a missing file is not found", () =>
  _withWorkspace(async ({ call }) => {
    const res = await call(ReadFile, { filepath: "x.txt" });
    assert.equal(res.success, false);
    assert.equal(res.error, 'Cannot run tool "ReadFile": file "x.txt" not found');
  }));

Deno.test("ReadFile refuses a start_line beyond the end of the file", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "one\ntwo\n");
    const res = await call(ReadFile, { filepath: "a.txt", start_line: 5 });
    assert.equal(res.success, false);
    assert.match(res.error!, /start_line 5 is beyond the end of "a.txt" \(2 lines\)/);
  }));

Deno.test("ReadFile refuses ../ and absolute paths outside the workspace", () =>
  _withWorkspace(async ({ outside, call }) => {
    const rel = join("..", outside.split("/").at(-1)!, "secret.txt");
    _denied(await call(ReadFile, { filepath: rel }), "ReadFile", outside);
    const abs = await call(ReadFile, { filepath: join(outside, "secret.txt") });
    assert.equal(abs.success, false);
    assert.match(abs.error!, /permission denied/);
    assert.ok(!JSON.stringify(abs).includes("top secret"));
  }));

Deno.test("ReadFile rejects a symlink that points outside the workspace", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    await Deno.symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    _denied(await call(ReadFile, { filepath: "link.txt" }), "ReadFile", outside);
  }));

Deno.test("ReadFile refuses unknown parameters and a non-integer start_line", () =>
  _withWorkspace(async ({ call }) => {
    const res = await call(ReadFile, { filepath: "a.txt", start_line: 1.5, bogus: 1 });
    assert.equal(res.success, false);
    assert.match(res.error!, /invalid arguments/);
  }));

// CreateFile

Deno.test("CreateFile writes a new file and its parent folders", () =>
  _withWorkspace(async ({ ws, call }) => {
    const res = await call(CreateFile, { filepath: "sub/dir/new.txt", content: "héllo" });
    assert.equal(res.success, true);
    assert.equal(res.filepath, "sub/dir/new.txt");
    assert.equal(res.bytes_written, 6);
    assert.equal(await Deno.readTextFile(join(ws, "sub/dir/new.txt")), "héllo");
  }));

Deno.test("CreateFile refuses to replace an existing file unless overwrite is true", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "old");
    const refused = await call(CreateFile, { filepath: "a.txt", content: "new" });
    assert.equal(refused.success, false);
    assert.match(refused.error!, /file "a.txt" already exists/);
    assert.equal(await Deno.readTextFile(join(ws, "a.txt")), "old");
    const replaced = await call(CreateFile, { filepath: "a.txt", content: "new", overwrite: true });
    assert.equal(replaced.success, true);
    assert.equal(replaced.overwritten, true);
    assert.equal(await Deno.readTextFile(join(ws, "a.txt")), "new");
  }));

Deno.test("CreateFile does not write outside the workspace through ../ or a symlinked folder", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    const rel = join("..", outside.split("/").at(-1)!, "planted.txt");
    _denied(await call(CreateFile, { filepath: rel, content: "x" }), "CreateFile", outside);
    await Deno.symlink(outside, join(ws, "out"));
    _denied(
      await call(CreateFile, { filepath: "out/planted.txt", content: "x" }),
      "CreateFile",
      outside,
    );
    await Deno.symlink(join(outside, "planted.txt"), join(ws, "dangling.txt"));
    _denied(
      await call(CreateFile, { filepath: "dangling.txt", content: "x" }),
      "CreateFile",
      outside,
    );
    await assert.rejects(Deno.stat(join(outside, "planted.txt")), Deno.errors.NotFound);
  }));

Deno.test("CreateFile does not overwrite an outside file through a symlink", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    await Deno.symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    const res = await call(CreateFile, { filepath: "link.txt", content: "pwned", overwrite: true });
    _denied(res, "CreateFile", outside);
    assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret\n");
  }));

// ListFiles

Deno.test("ListFiles lists entries with their type, recursively on request", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.mkdir(join(ws, "d/e"), { recursive: true });
    await Deno.writeTextFile(join(ws, "a.txt"), "");
    await Deno.writeTextFile(join(ws, "d/e/b.txt"), "");
    const flat = await call(ListFiles, {});
    assert.equal(flat.success, true);
    assert.deepEqual(flat.entries, [{ path: "a.txt", type: "file" }, {
      path: "d",
      type: "directory",
    }]);
    const deep = await call(ListFiles, { path: "d", recursive: true });
    assert.deepEqual(deep.entries, [
      { path: "d/e", type: "directory" },
      { path: "d/e/b.txt", type: "file" },
    ]);
    assert.equal(deep.path, "d");
  }));

Deno.test("ListFiles stops at max_results and says it truncated", () =>
  _withWorkspace(async ({ ws, call }) => {
    for (const n of ["a", "b", "c"]) await Deno.writeTextFile(join(ws, n), "");
    const res = await call(ListFiles, { max_results: 2 });
    assert.equal(res.count, 2);
    assert.equal(res.truncated, true);
  }));

Deno.test("ListFiles reports a symlink to an outside folder without following it", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    await Deno.symlink(outside, join(ws, "out"));
    const res = await call(ListFiles, { recursive: true });
    assert.deepEqual(res.entries, [{ path: "out", type: "symlink" }]);
    _denied(await call(ListFiles, { path: "out" }), "ListFiles", outside);
    _denied(await call(ListFiles, { path: ".." }), "ListFiles", outside);
  }));

Deno.test("ListFiles says a missing folder is not found", () =>
  _withWorkspace(async ({ call }) => {
    const res = await call(ListFiles, { path: "nope" });
    assert.equal(res.error, 'Cannot run tool "ListFiles": folder "nope" not found');
  }));

// DeleteFile

Deno.test("DeleteFile removes a file and refuses folders and missing files", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "x");
    await Deno.mkdir(join(ws, "d"));
    const res = await call(DeleteFile, { filepath: "a.txt" });
    assert.equal(res.success, true);
    assert.equal(res.filepath, "a.txt");
    await assert.rejects(Deno.stat(join(ws, "a.txt")), Deno.errors.NotFound);
    assert.match((await call(DeleteFile, { filepath: "d" })).error!, /is a folder/);
    assert.match((await call(DeleteFile, { filepath: "a.txt" })).error!, /file "a.txt" not found/);
  }));

Deno.test("DeleteFile removes a symlink itself and leaves its outside target alone", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    await Deno.symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    const res = await call(DeleteFile, { filepath: "link.txt" });
    assert.equal(res.success, true);
    await assert.rejects(Deno.lstat(join(ws, "link.txt")), Deno.errors.NotFound);
    assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret\n");
  }));

Deno.test("DeleteFile refuses a file outside the workspace", () =>
  _withWorkspace(async ({ outside, call }) => {
    _denied(await call(DeleteFile, { filepath: join(outside, "secret.txt") }), "DeleteFile", "~~");
    assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret\n");
  }));

// MoveFile

Deno.test("MoveFile renames a file into a new folder and refuses to overwrite", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "A");
    await Deno.writeTextFile(join(ws, "b.txt"), "B");
    const moved = await call(MoveFile, { source: "a.txt", destination: "d/a2.txt" });
    assert.equal(moved.success, true);
    assert.equal(moved.destination, "d/a2.txt");
    assert.equal(await Deno.readTextFile(join(ws, "d/a2.txt")), "A");
    const refused = await call(MoveFile, { source: "d/a2.txt", destination: "b.txt" });
    assert.match(refused.error!, /already exists/);
    assert.equal(await Deno.readTextFile(join(ws, "b.txt")), "B");
    const forced = await call(MoveFile, {
      source: "d/a2.txt",
      destination: "b.txt",
      overwrite: true,
    });
    assert.equal(forced.success, true);
    assert.equal(await Deno.readTextFile(join(ws, "b.txt")), "A");
  }));

Deno.test("MoveFile does not move a file out of the workspace or pull one in", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "A");
    _denied(
      await call(MoveFile, { source: "a.txt", destination: join(outside, "a.txt") }),
      "MoveFile",
      "~~",
    );
    await Deno.symlink(outside, join(ws, "out"));
    _denied(
      await call(MoveFile, { source: "a.txt", destination: "out/a.txt" }),
      "MoveFile",
      outside,
    );
    _denied(
      await call(MoveFile, { source: "out/secret.txt", destination: "s.txt" }),
      "MoveFile",
      outside,
    );
    await assert.rejects(Deno.stat(join(outside, "a.txt")), Deno.errors.NotFound);
    assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret\n");
  }));

// WordCount

Deno.test("WordCount counts lines, words, characters and bytes", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "héllo world\nsecond line");
    const res = await call(WordCount, { filepath: "a.txt" });
    assert.deepEqual(res, {
      success: true,
      filepath: "a.txt",
      lines: 2,
      words: 4,
      chars: 23,
      bytes: 24,
    });
  }));

Deno.test("WordCount fails clearly on a missing file and on a symlink escape", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    assert.equal(
      (await call(WordCount, { filepath: "x.txt" })).error,
      'Cannot run tool "WordCount": file "x.txt" not found',
    );
    await Deno.symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    _denied(await call(WordCount, { filepath: "link.txt" }), "WordCount", outside);
  }));

// SearchText

Deno.test("SearchText finds matching lines with file and line number, skipping binary files", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.mkdir(join(ws, "src"));
    await Deno.writeTextFile(join(ws, "src/a.ts"), "const x = 1;\n// TODO fix\nconst y = 2;\n");
    await Deno.writeTextFile(join(ws, "b.md"), "todo: later\n");
    await Deno.writeFile(join(ws, "bin.dat"), new Uint8Array([0, 84, 79, 68, 79]));
    const res = await call(SearchText, { pattern: "todo", ignore_case: true });
    assert.equal(res.success, true);
    assert.deepEqual(res.matches, [
      { file: "b.md", line: 1, text: "todo: later" },
      { file: "src/a.ts", line: 2, text: "// TODO fix" },
    ]);
    assert.deepEqual(res.skipped, { binary: 1, large: 0, unreadable: 0 });
    const one = await call(SearchText, { pattern: "const", path: "src/a.ts", max_results: 1 });
    assert.equal(one.count, 1);
    assert.equal(one.truncated, true);
  }));

Deno.test("SearchText refuses an invalid pattern and a path outside the workspace", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    assert.match((await call(SearchText, { pattern: "(" })).error!, /invalid pattern "\("/);
    _denied(await call(SearchText, { pattern: "secret", path: outside }), "SearchText", "~~");
    await Deno.symlink(outside, join(ws, "out"));
    const res = await call(SearchText, { pattern: "secret" });
    assert.equal(res.count, 0, "the walk followed a symlink out of the workspace");
  }));

// ReplaceTextInFile

Deno.test("ReplaceTextInFile replaces the first occurrence or all of them", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "foo $& foo foo");
    const first = await call(ReplaceTextInFile, {
      filepath: "a.txt",
      search: "foo",
      replace: "$1",
    });
    assert.equal(first.success, true);
    assert.equal(first.replacements, 1);
    assert.equal(await Deno.readTextFile(join(ws, "a.txt")), "$1 $& foo foo");
    const all = await call(ReplaceTextInFile, {
      filepath: "a.txt",
      search: "foo",
      replace: "bar",
      all: true,
    });
    assert.equal(all.replacements, 2);
    assert.equal(await Deno.readTextFile(join(ws, "a.txt")), "$1 $& bar bar");
  }));

Deno.test("ReplaceTextInFile fails when the text is not found and leaves the file alone", () =>
  _withWorkspace(async ({ ws, call }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "abc");
    const res = await call(ReplaceTextInFile, { filepath: "a.txt", search: "zzz", replace: "y" });
    assert.equal(res.error, 'Cannot run tool "ReplaceTextInFile": text "zzz" not found in "a.txt"');
    assert.equal(await Deno.readTextFile(join(ws, "a.txt")), "abc");
  }));

Deno.test("ReplaceTextInFile does not edit an outside file through a symlink", () =>
  _withWorkspace(async ({ ws, outside, call }) => {
    await Deno.symlink(join(outside, "secret.txt"), join(ws, "link.txt"));
    const res = await call(ReplaceTextInFile, {
      filepath: "link.txt",
      search: "top",
      replace: "no",
    });
    _denied(res, "ReplaceTextInFile", outside);
    assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret\n");
  }));

Deno.test("the files tools refuse a FIFO (without blocking) and files over max_read_bytes", async () => {
  await _withWorkspace(async ({ ws, call }) => {
    const mk = await new Deno.Command("mkfifo", { args: [join(ws, "pipe")] }).output();
    assert.equal(mk.code, 0);
    const started = performance.now();
    for (
      const [def, args] of [
        [ReadFile, { filepath: "pipe" }],
        [WordCount, { filepath: "pipe" }],
        [ReplaceTextInFile, { filepath: "pipe", search: "a", replace: "b" }],
        [CreateFile, { filepath: "pipe", content: "x", overwrite: true }],
      ] as const
    ) {
      const res = await call(def, args);
      assert.equal(res.success, false, def.name);
      assert.match(res.error!, /not a regular file/, def.name);
    }
    const search = await call(SearchText, { pattern: "x", path: "." });
    assert.equal(search.success, true, search.error);
    assert.ok(performance.now() - started < 5000, "nothing blocked on the FIFO");

    await Deno.writeTextFile(join(ws, "big.txt"), "word ".repeat(1000));
    const capped = (def: ToolDefinition, args: Record<string, unknown>) =>
      invokeTool(def, args, testContext({ workspace: ws, maxReadBytes: 2048 }));
    for (
      const [def, args] of [
        [ReadFile, { filepath: "big.txt" }],
        [WordCount, { filepath: "big.txt" }],
        [ReplaceTextInFile, { filepath: "big.txt", search: "word", replace: "w" }],
      ] as const
    ) {
      const res = await capped(def, args);
      assert.equal(res.success, false, def.name);
      assert.match(res.error!, /too large \(5000 bytes, limit 2048\)/, def.name);
    }
    const small = await capped(WordCount, { filepath: "pipe" });
    assert.match(small.error!, /not a regular file/);
  });
});
