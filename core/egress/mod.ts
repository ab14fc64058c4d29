/**
 * The only way out of a namespace: the egress proxy that decides each request by
 * the grant's hosts (./egress.ts, ./_egress_decision.ts), forwards or bridges it,
 * injects the operator's secrets where the policy says, and the certificates a
 * sandbox trusts.
 *
 * @module
 */
export {
  EGRESS_LISTEN,
  EGRESS_SOCKET_IN_NAMESPACE,
  EGRESS_URL,
  type EgressRecord,
  pinnedResolver,
  proxyVars,
  type StartedEgress,
  startEgress,
} from "./egress.ts";
export {
  DIRECT_FORWARDS_VAR,
  type DirectForwards,
  extraAddresses,
  type Forward,
  forwardNames,
  forwardsOf,
  hostPort,
  placeForwards,
} from "./egress_forward.ts";
export { type InjectedSecret, placeholderFor, SecretInjector } from "./egress_inject.ts";
export { bridgeForwards, serveNames } from "./forward_bridge.ts";
export {
  hostTrustFile,
  operatorCerts,
  TRUST_IN_NAMESPACE,
  trustVars,
  useCaFiles,
  writeTrust,
} from "./trust_store.ts";
