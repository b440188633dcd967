import { usageOfSummary, type ModelUsage, type PriceBook } from "../costs/pricing.js";

/**
 * Usage of calls including all their descendants (`/calls/usage`, `/trace/usage`), over
 * the calls of whole traces read from storage. Pure: the repository reads, this adds up.
 *
 * - A call's own usage is its `summary.usage`, normalised as pricing.ts says.
 * - The usage of a call = its own + the usage of each child (recursively), per model:
 *   requests, prompt_tokens, completion_tokens and total_tokens are summed.
 * - With a price book (include_costs), each call's own usage is priced at its started_at
 *   and prompt_tokens_total_cost / completion_tokens_total_cost are summed the same way;
 *   a model without a price adds 0.
 * - A model appears for a call when some count (or, with costs, some cost) is non-zero.
 * - Unfinished: the calls of the answer (the roots and their descendants) without an end.
 */

export interface UsageCall {
  readonly id: string;
  readonly parent_id: string | null;
  readonly started_at: number;
  readonly ended_at: number | null;
  readonly summary: unknown;
}

export interface AggregatedUsage extends ModelUsage {
  prompt_tokens_total_cost?: number;
  completion_tokens_total_cost?: number;
}

export type CallUsage = Record<string, AggregatedUsage>;

export interface UsageRollup {
  readonly call_usage: Record<string, CallUsage>;
  readonly unfinished_call_ids: string[];
}

function ownUsage(call: UsageCall, book: PriceBook | null): Map<string, AggregatedUsage> {
  const usage = usageOfSummary(call.summary);
  const out = new Map<string, AggregatedUsage>();
  for (const [model, u] of usage) {
    const entry: AggregatedUsage = { ...u };
    if (book) {
      const price = book.priceAt(model, call.started_at);
      entry.prompt_tokens_total_cost = price ? u.prompt_tokens * price.prompt_token_cost : 0;
      entry.completion_tokens_total_cost = price ? u.completion_tokens * price.completion_token_cost : 0;
    }
    out.set(model, entry);
  }
  return out;
}

function addInto(target: Map<string, AggregatedUsage>, source: ReadonlyMap<string, AggregatedUsage>, withCosts: boolean): void {
  for (const [model, u] of source) {
    const t = target.get(model);
    if (!t) {
      target.set(model, { ...u });
      continue;
    }
    t.requests += u.requests;
    t.prompt_tokens += u.prompt_tokens;
    t.completion_tokens += u.completion_tokens;
    t.total_tokens += u.total_tokens;
    if (withCosts) {
      t.prompt_tokens_total_cost = (t.prompt_tokens_total_cost ?? 0) + (u.prompt_tokens_total_cost ?? 0);
      t.completion_tokens_total_cost = (t.completion_tokens_total_cost ?? 0) + (u.completion_tokens_total_cost ?? 0);
    }
  }
}

const hasUsage = (u: AggregatedUsage): boolean =>
  u.requests !== 0 || u.prompt_tokens !== 0 || u.completion_tokens !== 0 || u.total_tokens !== 0 ||
  (u.prompt_tokens_total_cost ?? 0) !== 0 || (u.completion_tokens_total_cost ?? 0) !== 0;

/** The calls `roots` reach through parent links (each root included), in pre-order. */
export function subtreeOrder(calls: readonly UsageCall[], roots: readonly string[]): UsageCall[] {
  const byId = new Map(calls.map((c) => [c.id, c]));
  const children = new Map<string, UsageCall[]>();
  for (const c of calls) {
    if (c.parent_id === null || !byId.has(c.parent_id)) continue;
    const list = children.get(c.parent_id) ?? [];
    list.push(c);
    children.set(c.parent_id, list);
  }
  const seen = new Set<string>();
  const order: UsageCall[] = [];
  for (const root of roots) {
    const stack = byId.has(root) ? [byId.get(root)!] : [];
    while (stack.length > 0) {
      const call = stack.pop()!;
      if (seen.has(call.id)) continue;
      seen.add(call.id);
      order.push(call);
      for (const child of children.get(call.id) ?? []) if (!seen.has(child.id)) stack.push(child);
    }
  }
  return order;
}

/** Rolls usage up to each of `roots` that is among `calls`; a root not among them is left out. */
export function rollUpUsage(calls: readonly UsageCall[], roots: readonly string[], book: PriceBook | null): UsageRollup {
  const order = subtreeOrder(calls, roots);
  const inAnswer = new Set(order.map((c) => c.id));
  const totals = new Map<string, Map<string, AggregatedUsage>>();
  // Children come after their parent in pre-order: walking backwards, every child is done
  // before its parent adds it.
  for (let i = order.length - 1; i >= 0; i--) {
    const call = order[i]!;
    const own = totals.get(call.id) ?? new Map<string, AggregatedUsage>();
    addInto(own, ownUsage(call, book), book !== null);
    totals.set(call.id, own);
    if (call.parent_id !== null && inAnswer.has(call.parent_id)) {
      const parent = totals.get(call.parent_id) ?? new Map<string, AggregatedUsage>();
      addInto(parent, own, book !== null);
      totals.set(call.parent_id, parent);
    }
  }
  const call_usage: Record<string, CallUsage> = {};
  for (const root of roots) {
    const total = totals.get(root);
    if (!total) continue;
    const usage: CallUsage = {};
    for (const [model, u] of total) if (hasUsage(u)) usage[model] = u;
    call_usage[root] = usage;
  }
  const unfinished_call_ids = order.filter((c) => c.ended_at === null).map((c) => c.id).sort();
  return { call_usage, unfinished_call_ids };
}
