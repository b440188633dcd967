import type { ModelUsage, PriceBook } from "../costs/pricing.js";

/**
 * Usage of calls including all their descendants (`/calls/usage`, `/trace/usage`), over
 * the calls of whole traces read from storage. Pure: the repository reads, this adds up.
 *
 * - The usage of a call = the sum, per model, of the own usages (ownUsage.ts: what each
 *   call spent itself, whichever client wrote it) of the call and all its descendants:
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
  readonly ended_at: number | null;
}

/** One model's own usage of one call (a row of ownUsageSql). */
export interface OwnUsage extends ModelUsage {
  readonly id: string;
  readonly model: string;
  readonly started_at: number;
}

export interface AggregatedUsage extends ModelUsage {
  prompt_tokens_total_cost?: number;
  completion_tokens_total_cost?: number;
}

export type CallUsage = Record<string, AggregatedUsage>;

export interface UsageRollup {
  readonly call_usage: Record<string, CallUsage>;
  readonly unfinished_call_ids: string[];
  /** `/calls/usage` with skip_large_traces: the requested calls of traces larger than its limit. */
  readonly skipped_call_ids?: string[];
}

function priced(own: OwnUsage, book: PriceBook | null): AggregatedUsage {
  const { requests, prompt_tokens, completion_tokens, total_tokens } = own;
  const entry: AggregatedUsage = { requests, prompt_tokens, completion_tokens, total_tokens };
  if (book) {
    const price = book.priceAt(own.model, own.started_at);
    entry.prompt_tokens_total_cost = price ? prompt_tokens * price.prompt_token_cost : 0;
    entry.completion_tokens_total_cost = price ? completion_tokens * price.completion_token_cost : 0;
  }
  return entry;
}

/** Each call's own usage per model, priced when there is a book. */
function ownByCall(own: readonly OwnUsage[], book: PriceBook | null): Map<string, Map<string, AggregatedUsage>> {
  const out = new Map<string, Map<string, AggregatedUsage>>();
  for (const row of own) {
    const models = out.get(row.id) ?? new Map<string, AggregatedUsage>();
    addInto(models, new Map([[row.model, priced(row, book)]]), book !== null);
    out.set(row.id, models);
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

/**
 * The calls `roots` reach, each after its parent when that is among them: a pre-order from
 * the topmost of them, so that a root listed before one of its ancestors is still added in.
 */
function topDownOrder(calls: readonly UsageCall[], roots: readonly string[]): UsageCall[] {
  const reached = subtreeOrder(calls, roots);
  const ids = new Set(reached.map((c) => c.id));
  const tops = reached.filter((c) => c.parent_id === null || !ids.has(c.parent_id)).map((c) => c.id);
  // Then every reached call, for calls on a parent cycle (none of them is a top).
  return subtreeOrder(calls, [...tops, ...ids]);
}

/**
 * Rolls the own usages up to each of `roots` that is among `calls`; a root not among them is
 * left out. `own` holds the own usage rows of `calls` (rows of other calls are ignored).
 */
export function rollUpUsage(calls: readonly UsageCall[], own: readonly OwnUsage[], roots: readonly string[], book: PriceBook | null): UsageRollup {
  const order = topDownOrder(calls, roots);
  const owned = ownByCall(own, book);
  const inAnswer = new Set(order.map((c) => c.id));
  const totals = new Map<string, Map<string, AggregatedUsage>>();
  // Children come after their parent in pre-order: walking backwards, every child is done
  // before its parent adds it.
  for (let i = order.length - 1; i >= 0; i--) {
    const call = order[i]!;
    const total = totals.get(call.id) ?? new Map<string, AggregatedUsage>();
    addInto(total, owned.get(call.id) ?? new Map(), book !== null);
    totals.set(call.id, total);
    if (call.parent_id !== null && inAnswer.has(call.parent_id)) {
      const parent = totals.get(call.parent_id) ?? new Map<string, AggregatedUsage>();
      addInto(parent, total, book !== null);
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
