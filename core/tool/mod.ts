/**
 * The tool contract: `@tool`/`BaseTool` and module tools, permission letters,
 * results, validation, schemas, running one definition, progress reports and the
 * per-tool harness. The sandbox realm loads it; it imports nothing of corral's.
 *
 * @module
 */
export { argLimitRefusal, measureArgs } from "./arg_limits.ts";
export {
  apiContent,
  type ContentBlock,
  contentProblems,
  mcpContent,
  summarizeContent,
} from "./content.ts";
export {
  ConfigError,
  CredentialRevokedError,
  PermissionDeniedError,
  ToolTimeoutError,
} from "./errors.ts";
export { type HarnessOptions, runHarness } from "./harness.ts";
export { HARNESS_ENV, type HarnessSetup } from "./harness_setup.ts";
export { invokeTool, testContext } from "./invoke.ts";
export {
  type Letter,
  LETTER_FLAGS,
  LETTER_NAMES,
  LETTERS,
  parsePermissions,
} from "./permissions.ts";
export { colour, lettersColour, Reporter, terminalSafe, wantsColour } from "./reporter.ts";
export {
  type CallFault,
  capResult,
  failure,
  faultOf,
  parseFault,
  type ToolResult,
  withFault,
} from "./result.ts";
export { formatSchemas, type SchemaFormat } from "./schema.ts";
export {
  BaseTool,
  collectTools,
  type Grant,
  type LoadDecision,
  type ReportKind,
  type ReportOptions,
  tool,
  TOOL_NAME_PATTERN,
  type ToolCallContext,
  type ToolConfig,
  type ToolDefinition,
  type ToolOptions,
  VALID_EXPORT_EXAMPLE,
} from "./tool.ts";
