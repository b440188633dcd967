import type { z } from "zod";
import { COST_RECORD_FIELDS, type CostQueryOutput, type CostRecordField } from "../../contract/costs.js";
import { microsToIso } from "../../times.js";

/** Where a price comes from: the project's own prices, or the shipped defaults. */
export type PricingLevel = "project" | "default";

/** One price, as the domain uses it (times in µs since the epoch). */
export interface PriceRow {
  project_id: string;
  id: string;
  llm_id: string;
  provider_id: string;
  prompt_token_cost: number;
  completion_token_cost: number;
  prompt_token_cost_unit: string;
  completion_token_cost_unit: string;
  cache_read_input_token_cost: number;
  cache_creation_input_token_cost: number;
  effective_date: number;
  created_at: number;
  created_by: string;
}

/** The `llm_token_prices` row as stored: a price plus its tombstone flag and version. */
export interface StoredPriceRow extends PriceRow {
  deleted: 0 | 1;
  version: number;
}

/** A price row as ClickHouse returns it in JSONEachRow (Int64 and UInt64 come as strings). */
export type PriceRowJson = Omit<PriceRow, "effective_date" | "created_at"> & {
  effective_date: string | number;
  created_at: string | number;
};

export function priceRowFromJson(row: PriceRowJson): PriceRow {
  return {
    project_id: row.project_id,
    id: row.id,
    llm_id: row.llm_id,
    provider_id: row.provider_id,
    prompt_token_cost: Number(row.prompt_token_cost),
    completion_token_cost: Number(row.completion_token_cost),
    prompt_token_cost_unit: row.prompt_token_cost_unit,
    completion_token_cost_unit: row.completion_token_cost_unit,
    cache_read_input_token_cost: Number(row.cache_read_input_token_cost),
    cache_creation_input_token_cost: Number(row.cache_creation_input_token_cost),
    effective_date: Number(row.effective_date),
    created_at: Number(row.created_at),
    created_by: row.created_by,
  };
}

/** The columns of a price row, in table order (the version and tombstone come after). */
export const PRICE_COLUMNS = [
  "project_id", "id", "llm_id", "provider_id", "prompt_token_cost", "completion_token_cost",
  "prompt_token_cost_unit", "completion_token_cost_unit", "cache_read_input_token_cost",
  "cache_creation_input_token_cost", "effective_date", "created_at", "created_by",
] as const satisfies readonly (keyof PriceRow)[];

/** The API's cost record, as the contract defines it (every field optional: `fields` picks). */
export type CostRecord = z.output<typeof CostQueryOutput>;
type FullCostRecord = Required<CostRecord>;

/** A price row → the API's cost record, keeping only `fields` (all when empty). */
export function toCostRecord(row: PriceRow, fields: readonly CostRecordField[]): CostRecord {
  const full: FullCostRecord = {
    id: row.id,
    llm_id: row.llm_id,
    prompt_token_cost: row.prompt_token_cost,
    completion_token_cost: row.completion_token_cost,
    prompt_token_cost_unit: row.prompt_token_cost_unit,
    completion_token_cost_unit: row.completion_token_cost_unit,
    effective_date: microsToIso(row.effective_date),
    provider_id: row.provider_id,
  };
  const wanted = fields.length > 0 ? fields : COST_RECORD_FIELDS;
  const out: Record<string, string | number> = {};
  for (const f of wanted) out[f] = full[f];
  return out as CostRecord;
}

/** The project of the shipped default prices (defaultPrices.ts): no real project id is empty. */
export const DEFAULT_PRICE_PROJECT = "";

export const pricingLevel = (row: Pick<PriceRow, "project_id">): PricingLevel => (row.project_id === DEFAULT_PRICE_PROJECT ? "default" : "project");
