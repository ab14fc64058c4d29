import assert from "node:assert/strict";
import { z } from "zod";
import { inputJsonSchema } from "./input_schema.ts";
import {
  formatSchemas,
  type JsonSchema,
  mcpAnnotations,
  type SchemaFormat,
  type SchemaTool,
} from "./schema.ts";

// Three tools: scalar parameters, no parameters, an array and a nested object.
const readFileInput = z.object({
  filepath: z.string().describe("Path of the file, relative to the workspace"),
  max_lines: z.number().int().describe("Stop after this many lines").optional(),
  offset: z.number().describe("Line to start at").default(0),
  encoding: z.enum(["utf-8", "latin1"]).default("utf-8").describe("Text encoding"),
  follow: z.boolean().describe("Follow symlinks"),
});
const listToolsInput = z.object({});
const copyFilesInput = z.object({
  paths: z.array(z.string().describe("One path")).min(1).describe("Paths to copy"),
  options: z.object({
    overwrite: z.boolean().default(false).describe("Replace existing files"),
    depth: z.number().describe("How deep to go"),
  }).describe("Copy options"),
});

const READ_FILE_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    filepath: { type: "string", description: "Path of the file, relative to the workspace" },
    max_lines: { type: "integer", description: "Stop after this many lines" },
    offset: { type: "number", description: "Line to start at", default: 0 },
    encoding: {
      type: "string",
      enum: ["utf-8", "latin1"],
      default: "utf-8",
      description: "Text encoding",
    },
    follow: { type: "boolean", description: "Follow symlinks" },
  },
  required: ["filepath", "follow"],
  additionalProperties: false,
};

const LIST_TOOLS_SCHEMA: JsonSchema = {
  type: "object",
  properties: {},
  additionalProperties: false,
};

const COPY_FILES_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    paths: {
      type: "array",
      items: { type: "string", description: "One path" },
      minItems: 1,
      description: "Paths to copy",
    },
    options: {
      type: "object",
      properties: {
        overwrite: { type: "boolean", default: false, description: "Replace existing files" },
        depth: { type: "number", description: "How deep to go" },
      },
      required: ["depth"],
      additionalProperties: false,
      description: "Copy options",
    },
  },
  required: ["paths", "options"],
  additionalProperties: false,
};

function _tools(): SchemaTool[] {
  return [
    {
      name: "ReadFile",
      description: "Read a text file",
      permissions: "r",
      inputSchema: inputJsonSchema(readFileInput),
      toolset: "files",
      source: "toolsets/files/read_file.ts",
      isolation: "worker",
    },
    {
      name: "ListTools",
      description: "List the tools",
      permissions: "",
      inputSchema: inputJsonSchema(listToolsInput),
      toolset: "system",
      source: "toolsets/system/list_tools.ts",
      isolation: "worker",
    },
    {
      name: "copy_files",
      description: "Copy files",
      permissions: "rw",
      inputSchema: inputJsonSchema(copyFilesInput),
      toolset: "plugin:demo/copy",
      source: "plugins/demo/copy.ts",
      isolation: "process",
    },
  ];
}

Deno.test("inputJsonSchema pins the exact schema of string, number, boolean, enum, optional and default parameters", () => {
  assert.deepEqual(inputJsonSchema(readFileInput), READ_FILE_SCHEMA);
});

Deno.test("inputJsonSchema pins the exact schema of a tool without parameters", () => {
  assert.deepEqual(inputJsonSchema(listToolsInput), LIST_TOOLS_SCHEMA);
  assert.deepEqual(inputJsonSchema(z.object({}).strict()), LIST_TOOLS_SCHEMA);
});

Deno.test("inputJsonSchema pins the exact schema of an array and a nested object", () => {
  assert.deepEqual(inputJsonSchema(copyFilesInput), COPY_FILES_SCHEMA);
});

Deno.test("inputJsonSchema leaves defaulted and optional parameters out of required", () => {
  const s = inputJsonSchema(readFileInput);
  const required = s.required as string[];
  for (const name of ["max_lines", "offset", "encoding"]) {
    assert.ok(!required.includes(name), `${name} is required`);
  }
  assert.deepEqual(required, ["filepath", "follow"]);
});

Deno.test("inputJsonSchema keeps a description for every parameter, enums and defaults", () => {
  const props = inputJsonSchema(readFileInput).properties as Record<string, JsonSchema>;
  for (const [name, prop] of Object.entries(props)) {
    assert.equal(typeof prop.description, "string", `${name} lost its description`);
  }
  assert.deepEqual(props.encoding.enum, ["utf-8", "latin1"]);
  assert.equal(props.encoding.default, "utf-8");
  assert.equal(props.offset.default, 0);
});

Deno.test("inputJsonSchema has no $schema or $ref, so it can be embedded in any format", () => {
  const shared = z.object({ x: z.string() });
  const s = inputJsonSchema(z.object({ a: shared, b: shared }));
  const text = JSON.stringify(s);
  assert.ok(!text.includes("$schema"), text);
  assert.ok(!text.includes("$ref"), text);
});

Deno.test("inputJsonSchema refuses a schema that is not an object", () => {
  assert.throws(
    () => inputJsonSchema(z.string()),
    (err: Error) => err instanceof TypeError && err.message.includes('got "string"'),
  );
});

Deno.test("formatSchemas openai pins {type:'function', function:{name, description, parameters}}", () => {
  assert.deepEqual(formatSchemas(_tools(), "openai"), [
    {
      type: "function",
      function: { name: "ReadFile", description: "Read a text file", parameters: READ_FILE_SCHEMA },
    },
    {
      type: "function",
      function: { name: "ListTools", description: "List the tools", parameters: LIST_TOOLS_SCHEMA },
    },
    {
      type: "function",
      function: { name: "copy_files", description: "Copy files", parameters: COPY_FILES_SCHEMA },
    },
  ]);
});

Deno.test("formatSchemas anthropic pins {name, description, input_schema}", () => {
  assert.deepEqual(formatSchemas(_tools(), "anthropic"), [
    { name: "ReadFile", description: "Read a text file", input_schema: READ_FILE_SCHEMA },
    { name: "ListTools", description: "List the tools", input_schema: LIST_TOOLS_SCHEMA },
    { name: "copy_files", description: "Copy files", input_schema: COPY_FILES_SCHEMA },
  ]);
});

Deno.test("formatSchemas mcp pins {name, description, inputSchema, annotations, _meta}", () => {
  assert.deepEqual(formatSchemas(_tools(), "mcp"), [
    {
      name: "ReadFile",
      description: "Read a text file",
      inputSchema: READ_FILE_SCHEMA,
      annotations: {
        title: "Read File",
        readOnlyHint: true,
        destructiveHint: false,
        openWorldHint: false,
      },
      _meta: {
        "corral/permissions": "r",
        "corral/toolset": "files",
        "corral/source": "toolsets/files/read_file.ts",
        "corral/isolation": "worker",
      },
    },
    {
      name: "ListTools",
      description: "List the tools",
      inputSchema: LIST_TOOLS_SCHEMA,
      annotations: {
        title: "List Tools",
        readOnlyHint: true,
        destructiveHint: false,
        openWorldHint: false,
      },
      _meta: {
        "corral/permissions": "",
        "corral/toolset": "system",
        "corral/source": "toolsets/system/list_tools.ts",
        "corral/isolation": "worker",
      },
    },
    {
      name: "copy_files",
      description: "Copy files",
      inputSchema: COPY_FILES_SCHEMA,
      annotations: {
        title: "copy files",
        readOnlyHint: false,
        destructiveHint: true,
        openWorldHint: false,
      },
      _meta: {
        "corral/permissions": "rw",
        "corral/toolset": "plugin:demo/copy",
        "corral/source": "plugins/demo/copy.ts",
        "corral/isolation": "process",
      },
    },
  ]);
});

Deno.test("formatSchemas of no tools is an empty list in every format", () => {
  for (const f of ["openai", "anthropic", "mcp"] as const) {
    assert.deepEqual(formatSchemas([], f), []);
  }
});

Deno.test("formatSchemas mcp leaves out metadata a tool does not have once serialised", () => {
  const [t] = formatSchemas(
    [{ name: "Echo", description: "Echo", permissions: "", inputSchema: LIST_TOOLS_SCHEMA }],
    "mcp",
  );
  assert.deepEqual(JSON.parse(JSON.stringify(t))._meta, { "corral/permissions": "" });
});

function _hints(permissions: string, name = "T") {
  return mcpAnnotations({ name, description: "d", permissions, inputSchema: {} });
}

Deno.test("mcp readOnlyHint is true for no letters and for 'r', false once anything else is asked", () => {
  assert.equal(_hints("").readOnlyHint, true);
  assert.equal(_hints("r").readOnlyHint, true);
  for (const p of ["rw", "w", "x", "n", "rn", "rwxn"]) {
    assert.equal(_hints(p).readOnlyHint, false, p);
  }
});

Deno.test("mcp destructiveHint is true exactly when the tool writes", () => {
  for (const p of ["w", "rw", "rwxn"]) assert.equal(_hints(p).destructiveHint, true, p);
  for (const p of ["", "r", "x", "n", "rxn"]) assert.equal(_hints(p).destructiveHint, false, p);
});

Deno.test("mcp openWorldHint is true exactly when the tool uses the network", () => {
  for (const p of ["n", "rn", "rwxn"]) assert.equal(_hints(p).openWorldHint, true, p);
  for (const p of ["", "r", "rw", "rwx"]) assert.equal(_hints(p).openWorldHint, false, p);
});

Deno.test("mcp title splits the tool name into words", () => {
  assert.equal(_hints("", "ReadFile").title, "Read File");
  assert.equal(_hints("", "GetUrl2Text").title, "Get Url2 Text");
  assert.equal(_hints("", "list_files").title, "list files");
  assert.equal(_hints("", "net.get-url").title, "net get url");
  assert.equal(_hints("", "Echo").title, "Echo");
});

Deno.test("formatSchemas throws a TypeError naming an unknown format", () => {
  assert.throws(
    () => formatSchemas(_tools(), "gemini" as SchemaFormat),
    (err: Error) =>
      err instanceof TypeError && err.message.includes('"gemini"') &&
      err.message.includes("openai, anthropic or mcp"),
  );
});
