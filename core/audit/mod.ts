/**
 * The audit log: one JSON line per call and refusal, written with caps and
 * rotation, and read back for `corral audit`.
 *
 * @module
 */
export {
  argShape,
  AUDIT_OUTCOMES,
  type AuditFilter,
  type AuditHeldRecord,
  AuditLog,
  type AuditLogOptions,
  type AuditOutcome,
  type AuditRecord,
  type AuditWho,
  boundedJson,
  canonicalJson,
  classifyResult,
  escapeField,
  formatAuditSummary,
  outcomeOf,
  parseTime,
  readAudit,
  safeJsonLine,
  summarizeAudit,
} from "./audit.ts";
export { RefusalTally } from "./audit_refusals.ts";
export { rotatedPaths } from "./audit_rotation.ts";
