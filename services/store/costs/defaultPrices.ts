import { readFileSync } from "node:fs";
import { z } from "zod";
import { DEFAULT_PRICE_PROJECT, type PriceRow } from "./priceRows.js";
import { isoToMicros } from "../../times.js";

/**
 * The shipped default prices (defaultPrices.json beside this file): list prices per token
 * in USD, with the source and the date they were read. They are stored as price rows of
 * the project `''` (DEFAULT_PRICE_PROJECT), so that SQL (cost filters and sorts, usage
 * statistics) and the enrichment read one table; project prices override them.
 */

const PriceEntry = z.strictObject({
  llm_id: z.string().min(1),
  provider_id: z.string().min(1),
  effective_date: z.string().refine((s) => isoToMicros(s) !== null, "must be an ISO 8601 timestamp"),
  prompt_token_cost: z.number().min(0),
  completion_token_cost: z.number().min(0),
});

const PriceFile = z.strictObject({
  source: z.string().min(1),
  as_of: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  unit: z.literal("USD per token"),
  prices: z.array(PriceEntry).min(1),
});
export type DefaultPriceFile = z.infer<typeof PriceFile>;

export function loadDefaultPriceFile(url: URL = new URL("./defaultPrices.json", import.meta.url)): DefaultPriceFile {
  const parsed = PriceFile.safeParse(JSON.parse(readFileSync(url, "utf8")));
  if (!parsed.success) throw new Error(`invalid default price file ${url.pathname}: ${parsed.error.message}`);
  const seen = new Set<string>();
  for (const p of parsed.data.prices) {
    const key = `${p.llm_id}@${p.effective_date}`;
    if (seen.has(key)) throw new Error(`default price file lists ${key} twice`);
    seen.add(key);
  }
  return parsed.data;
}

/**
 * The file as price rows. Ids are derived from (llm_id, effective_date), so loading the
 * same file twice gives the same rows; created_at is the file's as_of date.
 */
export function defaultPriceRows(file: DefaultPriceFile = loadDefaultPriceFile()): PriceRow[] {
  const createdAt = isoToMicros(`${file.as_of}T00:00:00Z`)!;
  return file.prices.map((p) => {
    const effective = isoToMicros(p.effective_date)!;
    return {
      project_id: DEFAULT_PRICE_PROJECT,
      id: `default:${p.llm_id}@${effective}`,
      llm_id: p.llm_id,
      provider_id: p.provider_id,
      prompt_token_cost: p.prompt_token_cost,
      completion_token_cost: p.completion_token_cost,
      prompt_token_cost_unit: "USD",
      completion_token_cost_unit: "USD",
      cache_read_input_token_cost: 0,
      cache_creation_input_token_cost: 0,
      effective_date: effective,
      created_at: createdAt,
      created_by: "default",
    };
  });
}
