/**
 * Who calls over HTTP and what each caller gets: tokens, JWTs, per-identity
 * tools, workspace and limits, and the state replicas share.
 *
 * @module
 */
export { AskBudget } from "./ask_budget.ts";
export { Authenticator, type AuthResult } from "./authenticator.ts";
export {
  IdentityPolicy,
  IdentityRefusedError,
  operatorNotes,
  type ResolvedIdentity,
} from "./identity_policy.ts";
export { JwtVerifier } from "./jwt_verifier.ts";
export {
  isProtectedResourcePath,
  metadataUrl,
  protectedResourceMetadata,
  resourceUrl,
  wwwAuthenticate,
} from "./protected_resource.ts";
export { RedisState } from "./redis_state.ts";
export { LocalState, type SharedState } from "./shared_state.ts";
export { addToken, readTokens, revokeToken, TokenStore } from "./token_store.ts";
export { unknownAccessNames } from "./tool_access.ts";
