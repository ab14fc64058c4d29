/**
 * A registry as one identity sees it over HTTP: only the tools it may use
 * are listed or callable, only the hosted servers it may reach serve it
 * their resources, resource templates and prompts, each call's questions
 * are capped, and every call is traced and counted under its name. How
 * many of its calls run or wait at once is the call gate's business
 * (./_call_gate.ts, with the caps of ./_identity_caps.ts).
 *
 * @module
 */
import { closestNames } from "../config/mod.ts";
import { outcomeOf } from "../audit/mod.ts";
import { AskBudget, type ResolvedIdentity } from "../identity/mod.ts";
import { type CorralMetrics, telemetry, traceCall } from "../telemetry/mod.ts";
import type { HostedResources } from "./hosted_resources.ts";
import type { McpRegistry } from "./_mcp_registry.ts";

/** The principal of an identity's sessions when they share sandboxes (and of its stateless calls). */
export function sharedPrincipal(identity: string): string {
  return `identity:${identity}`;
}

/**
 * `registry` as `identity` sees it: only the tools it may use are listed
 * or callable (another is an unknown tool, with "did you mean" among its
 * own); only the hosted servers it may reach list their resources and
 * prompts; each call's questions are capped; every call is traced and
 * counted under its name.
 */
export function identityRegistry(
  registry: McpRegistry,
  identity: ResolvedIdentity,
  metrics: CorralMetrics = telemetry,
): McpRegistry {
  const { access, limits, name: who } = identity;
  const own = (): string[] => access.filter(registry.list()).map((t) => t.name);
  // identities.<name>.share_sandboxes: every session of it is one principal, whose
  // sandboxes close when the last session that used them ends (or when idle).
  const shared = identity.shareSandboxes ? sharedPrincipal(who) : undefined;
  const calling = new Set<string>();
  const principalOf = (principal: string | undefined): string | undefined => {
    if (shared === undefined) return principal;
    if (principal !== undefined && principal !== shared) calling.add(principal);
    return shared;
  };
  return {
    loaded: () => access.filter(registry.loaded()),
    list: () => access.filter(registry.list()),
    hosted: registry.hosted && _hostedView(registry, identity, (p) => principalOf(p)!),
    // A session that ends closes its sandboxes through the view too.
    endPrincipal: (principal) => {
      if (shared === undefined) return registry.endPrincipal?.(principal) ?? Promise.resolve();
      calling.delete(principal);
      if (calling.size > 0) return Promise.resolve();
      return registry.endPrincipal?.(shared) ?? Promise.resolve();
    },
    // A refusal names who was refused, whatever the session said.
    auditRefusal: (name, args, options, reason, message) =>
      registry.auditRefusal?.(name, args, { ...options, identity: who }, reason, message) ??
        Promise.resolve(),
    unknownToolMessage: (name) => {
      const near = closestNames(name, own(), 3, Math.max(2, Math.floor(name.length / 3)));
      return `Unknown tool "${name}"` + (near.length ? ` (did you mean: ${near.join(", ")}?)` : "");
    },
    call: async (name, args, options = {}) => {
      const tool = registry.list().find((t) => t.name === name);
      if (!tool || !access.allows(tool)) {
        throw new TypeError(`Unknown tool "${name}"`);
      }
      const session = options.session ?? options.principal;
      if (shared !== undefined) options = { ...options, principal: principalOf(options.principal) };
      const info = {
        tool: name,
        toolset: tool.toolset,
        identity: who,
        session,
        traceparent: options.traceparent,
      };
      const budget = new AskBudget(limits);
      const onAsk = options.onAsk &&
        ((
          kind: Parameters<NonNullable<typeof options.onAsk>>[0],
          params: unknown,
          signal?: AbortSignal,
        ) => {
          // Roots are no question to a person or an LLM: only the call's own caps bound them.
          const why = kind === "roots"
            ? null
            : budget.take(kind === "sample" ? "sampling" : "elicitation");
          return why ? Promise.reject(new Error(why)) : options.onAsk!(kind, params, signal);
        });
      return await traceCall(
        info,
        // The audit line names who called (core/registry/call_audit.ts).
        () => registry.call(name, args, { ...options, session, identity: who, onAsk }),
        // The audit's outcome: failure (the tool's answer), error or denied (core/audit/audit_record.ts).
        outcomeOf,
        metrics,
      );
    },
  };
}

/**
 * The hosted servers' resources and prompts as `identity` may see them:
 * only the servers it reaches (core/identity/tool_access.ts `reaches`),
 * started for its principal.
 */
function _hostedView(
  registry: McpRegistry,
  identity: ResolvedIdentity,
  principalOf: (principal: string) => string,
): HostedResources {
  const hosted = registry.hosted!;
  const caller = {
    identity: identity.name,
    only: (server: string) =>
      identity.access.reaches(
        server,
        registry.list().filter((t) => t.toolset === server).map((t) => t.name),
      ),
  };
  return {
    entries: hosted.entries.filter((e) => caller.only(e.name)),
    listResources: (templates, principal, c) =>
      hosted.listResources(templates, principalOf(principal), {
        ...caller,
        onLeftOut: c?.onLeftOut,
      }),
    readResource: (uri, principal) => hosted.readResource(uri, principalOf(principal), caller),
    listPrompts: (principal, c) =>
      hosted.listPrompts(principalOf(principal), { ...caller, onLeftOut: c?.onLeftOut }),
    getPrompt: (name, args, principal, c) =>
      hosted.getPrompt(name, args, principalOf(principal), { ...caller, onAsk: c?.onAsk }),
    complete: (params, principal) => hosted.complete(params, principalOf(principal), caller),
    subscribe: (uri, on, principal) => hosted.subscribe(uri, on, principalOf(principal), caller),
  };
}
