import type { Migration } from "../migrations.js";
import { ParamBuilder, renderSql } from "../sql.js";
import { defaultPriceRows } from "./defaultPrices.js";
import { PRICE_COLUMNS, type PriceRow } from "./priceRows.js";

export const PRICES_TABLE = "llm_token_prices";

/** The version of the default price rows written by the migration; later syncs write newer ones. */
export const MIGRATION_PRICE_VERSION = 1;

/** `INSERT ... VALUES` for price rows, every value rendered through the ParamBuilder. */
export function insertPricesSql(rows: readonly PriceRow[], version: number, deleted: 0 | 1): string {
  const pb = new ParamBuilder();
  const tuples = rows.map((r) => {
    const values = [
      pb.str(r.project_id), pb.str(r.id), pb.str(r.llm_id), pb.str(r.provider_id),
      pb.float(r.prompt_token_cost), pb.float(r.completion_token_cost),
      pb.str(r.prompt_token_cost_unit), pb.str(r.completion_token_cost_unit),
      pb.float(r.cache_read_input_token_cost), pb.float(r.cache_creation_input_token_cost),
      pb.int(r.effective_date), pb.int(r.created_at), pb.str(r.created_by),
      pb.int(deleted), pb.count(version),
    ];
    return `(${values.join(", ")})`;
  });
  return renderSql(`INSERT INTO ${PRICES_TABLE} (${PRICE_COLUMNS.join(", ")}, deleted, version) VALUES ${tuples.join(", ")}`, pb.params);
}

/**
 * Tables of the costs module.
 *
 * `llm_token_prices`: one row per version of a price. A price never changes its sort key
 * (project, model, effective date, id); a purge writes the same row again with `deleted = 1`
 * and a higher version, and a default price changed in the file is written again with a
 * higher version. Reads take, per id, the values of the highest version (argMax), and drop
 * ids whose latest version is deleted: correct before and after merges, and never relying
 * on FINAL with a filter on a non-key column. Project `''` holds the shipped defaults.
 * Times are µs since the epoch, like `calls`.
 */
export const COSTS_MIGRATION: Migration = {
  version: 3,
  name: "costs",
  statements: [
    `CREATE TABLE IF NOT EXISTS ${PRICES_TABLE} (
      project_id String,
      id String,
      llm_id String,
      provider_id String,
      prompt_token_cost Float64,
      completion_token_cost Float64,
      prompt_token_cost_unit String,
      completion_token_cost_unit String,
      cache_read_input_token_cost Float64,
      cache_creation_input_token_cost Float64,
      effective_date Int64,
      created_at Int64,
      created_by String,
      deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, llm_id, effective_date, id)`,
    // The defaults as shipped when the database was created; syncDefaultPrices brings
    // later edits of the file in at start.
    insertPricesSql(defaultPriceRows(), MIGRATION_PRICE_VERSION, 0),
  ],
};
