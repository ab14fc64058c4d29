/**
 * The audit log: one JSON line per call and refusal (what a line says:
 * ./audit_record.ts), each bounded (./audit_line.ts), written with rotation
 * and refusals counted (./audit.ts), and read back for `corral audit`
 * (./audit_query.ts).
 *
 * @module
 */
export { AuditLog, type AuditLogOptions, RefusalTally, rotatedPaths } from "./audit.ts";
export { argShape, boundedJson, canonicalJson, digestArgs } from "./audit_line.ts";
export {
  type AuditFilter,
  escapeField,
  formatAuditSummary,
  parseTime,
  readAudit,
  safeJsonLine,
  summarizeAudit,
} from "./audit_query.ts";
export {
  AUDIT_OUTCOMES,
  type AuditHeldRecord,
  type AuditOutcome,
  type AuditRecord,
  type AuditWho,
  classifyResult,
  outcomeOf,
} from "./audit_record.ts";
