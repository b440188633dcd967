import { DEFAULT_PRICE_PROJECT } from "./priceRows.js";
import { pricingLevel, type PriceRow, type PricingLevel } from "./priceRows.js";
import { microsToIso } from "../../times.js";
import { isJsonObject } from "../../json.js";
import { countOf } from "./counts.js";

/**
 * Usage and cost arithmetic of one call's summary as the client sent it (`include_costs`)
 * and the prices of `/calls/usage` and `/trace/usage`. The SQL forms of the same rules are
 * in costFields.ts (cost filters and sorts) and ../usage/ownUsage.ts (a call's own usage,
 * which every total over several calls adds); each rule is written once here in words:
 *
 * - usage of a model = `summary.usage[<model>]`, when that is a non-empty object;
 * - a count is a JSON number, or a string holding one (counts.ts); anything else counts as absent;
 * - prompt_tokens = `prompt_tokens`, else `input_tokens`, else 0;
 *   completion_tokens = `completion_tokens`, else `output_tokens`, else 0;
 *   requests = `requests`, else 0; total_tokens = `total_tokens`, else prompt + completion;
 * - the price of a model for a call: the project's price with the latest effective_date
 *   not after the call's started_at; when the project has none, the default price chosen
 *   the same way; ties on effective_date go to the latest created_at, then the greatest id;
 * - prompt_tokens_total_cost = prompt_tokens × prompt_token_cost, likewise completion.
 */

export interface ModelUsage {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One `summary.usage` entry, normalised. */
export function normaliseUsage(entry: Record<string, unknown>): ModelUsage {
  const prompt = countOf(entry.prompt_tokens) ?? countOf(entry.input_tokens) ?? 0;
  const completion = countOf(entry.completion_tokens) ?? countOf(entry.output_tokens) ?? 0;
  return {
    requests: countOf(entry.requests) ?? 0,
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: countOf(entry.total_tokens) ?? prompt + completion,
  };
}

/** The usage per model of a call's summary (its own, as stored). */
export function usageOfSummary(summary: unknown): Map<string, ModelUsage> {
  const out = new Map<string, ModelUsage>();
  if (!isJsonObject(summary) || !isJsonObject(summary.usage)) return out;
  for (const [model, entry] of Object.entries(summary.usage)) {
    if (isJsonObject(entry) && Object.keys(entry).length > 0) out.set(model, normaliseUsage(entry));
  }
  return out;
}

/** Later first: effective_date, then created_at, then id. */
function laterFirst(a: PriceRow, b: PriceRow): number {
  if (a.effective_date !== b.effective_date) return b.effective_date - a.effective_date;
  if (a.created_at !== b.created_at) return b.created_at - a.created_at;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The prices one project can use, indexed for `priceAt`. */
export class PriceBook {
  private readonly byModel = new Map<string, { project: PriceRow[]; fallback: PriceRow[] }>();

  constructor(readonly projectId: string, rows: readonly PriceRow[]) {
    for (const row of rows) {
      const isDefault = row.project_id === DEFAULT_PRICE_PROJECT;
      if (!isDefault && row.project_id !== projectId) continue;
      const entry = this.byModel.get(row.llm_id) ?? { project: [], fallback: [] };
      (isDefault ? entry.fallback : entry.project).push(row);
      this.byModel.set(row.llm_id, entry);
    }
    for (const entry of this.byModel.values()) {
      entry.project.sort(laterFirst);
      entry.fallback.sort(laterFirst);
    }
  }

  /** The price in force for `llmId` at `atMicros`, or null when there is none. */
  priceAt(llmId: string, atMicros: number): PriceRow | null {
    const entry = this.byModel.get(llmId);
    if (!entry) return null;
    return entry.project.find((r) => r.effective_date <= atMicros) ?? entry.fallback.find((r) => r.effective_date <= atMicros) ?? null;
  }
}

/** One model's entry of `summary.weave.costs`. */
export interface ModelCost extends ModelUsage {
  prompt_tokens_total_cost: number;
  completion_tokens_total_cost: number;
  prompt_token_cost: number;
  completion_token_cost: number;
  prompt_token_cost_unit: string;
  completion_token_cost_unit: string;
  effective_date: string;
  provider_id: string;
  pricing_level: PricingLevel;
  pricing_level_id: string;
  created_at: string;
  created_by: string;
}

export function modelCost(usage: ModelUsage, price: PriceRow): ModelCost {
  return {
    ...usage,
    prompt_tokens_total_cost: usage.prompt_tokens * price.prompt_token_cost,
    completion_tokens_total_cost: usage.completion_tokens * price.completion_token_cost,
    prompt_token_cost: price.prompt_token_cost,
    completion_token_cost: price.completion_token_cost,
    prompt_token_cost_unit: price.prompt_token_cost_unit,
    completion_token_cost_unit: price.completion_token_cost_unit,
    effective_date: microsToIso(price.effective_date),
    provider_id: price.provider_id,
    pricing_level: pricingLevel(price),
    pricing_level_id: price.project_id === DEFAULT_PRICE_PROJECT ? "default" : price.project_id,
    created_at: microsToIso(price.created_at),
    created_by: price.created_by,
  };
}

/** `summary.weave.costs` of a call: every model of its usage that has a price. */
export function costsOfUsage(usage: ReadonlyMap<string, ModelUsage>, startedAtMicros: number, book: PriceBook): Record<string, ModelCost> {
  const out: Record<string, ModelCost> = {};
  for (const [model, u] of usage) {
    const price = book.priceAt(model, startedAtMicros);
    if (price) out[model] = modelCost(u, price);
  }
  return out;
}
