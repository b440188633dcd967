import type { Query } from "../../contract/queryExpr.js";
import type { BuiltQuery } from "../sql.js";
import { ParamBuilder } from "../sql.js";
import { compileQuery } from "../expr/compile.js";
import { orderByTerms } from "../expr/sort.js";
import { DEFAULT_PRICE_PROJECT, PRICE_COLUMNS } from "./priceRows.js";
import type { CostRecordField } from "../../contract/costs.js";
import { COST_QUERY_FIELDS } from "./recordFields.js";
import { PRICES_TABLE } from "./schema.js";

/** Value columns: per id, the value of the latest version wins. */
const VALUE_COLUMNS = PRICE_COLUMNS.filter((c) => !["project_id", "id", "llm_id", "effective_date"].includes(c));

/**
 * The current price rows of the projects that `projectCondition` (SQL over the table's
 * key columns) selects: per id, the values of its latest version, ids whose latest version
 * is a tombstone left out. Columns: the price columns plus `version`.
 *
 * Plan: a GROUP BY over the primary key prefix (project, model, date, id) with argMax per
 * value column; the condition reads only the projects' granules. The aggregates get
 * suffixed aliases first, because an alias equal to a column name would be substituted
 * inside its own argMax.
 */
export function currentPricesSql(projectCondition: string): string {
  const latest = VALUE_COLUMNS.map((c) => `argMax(${c}, version) AS ${c}_`).join(", ");
  const renamed = VALUE_COLUMNS.map((c) => `${c}_ AS ${c}`).join(", ");
  return `SELECT project_id, id, llm_id, effective_date, ${renamed}, version_ AS version
    FROM (SELECT project_id, id, llm_id, effective_date, ${latest}, argMax(deleted, version) AS deleted_, max(version) AS version_
          FROM ${PRICES_TABLE} WHERE ${projectCondition}
          GROUP BY project_id, llm_id, effective_date, id)
    WHERE deleted_ = 0`;
}

export interface CostQuerySpec {
  readonly projectId: string;
  readonly query?: Query | null;
  readonly sortBy?: readonly { field: CostRecordField; direction: "asc" | "desc" }[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
}

/** Default order of `/cost/query`: by model, newest price first. */
export const DEFAULT_COST_SORT = [
  { field: "llm_id", direction: "asc" },
  { field: "effective_date", direction: "desc" },
] as const;

/** `/cost/query` (and the rows a purge tombstones): the project's own prices only, never the defaults. */
export function costQuery(spec: CostQuerySpec): BuiltQuery {
  const pb = new ParamBuilder();
  const source = currentPricesSql(`project_id = ${pb.str(spec.projectId)}`);
  const where = spec.query ? compileQuery(spec.query, COST_QUERY_FIELDS, pb) : "1";
  const sorts = spec.sortBy && spec.sortBy.length > 0 ? spec.sortBy : DEFAULT_COST_SORT;
  const order = orderByTerms(sorts, COST_QUERY_FIELDS, pb);
  if (!sorts.some((s) => s.field === "id")) order.push("id ASC");
  const limit = pb.limitOffset(spec.limit, spec.offset);
  return {
    sql: `SELECT ${PRICE_COLUMNS.join(", ")}, version FROM (${source})
WHERE ${where}
ORDER BY ${order.join(", ")}
${limit}`,
    params: pb.params,
  };
}

/** The prices a project can use for these models: its own and the defaults. */
export function pricesForModelsQuery(projectId: string, llmIds: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const source = currentPricesSql(`project_id IN ${pb.inStrings([projectId, DEFAULT_PRICE_PROJECT])} AND llm_id IN ${pb.inStrings(llmIds)}`);
  return { sql: `SELECT ${PRICE_COLUMNS.join(", ")}, version FROM (${source})`, params: pb.params };
}

/** The current default rows, for the sync with the shipped file. */
export function defaultPricesQuery(): BuiltQuery {
  const pb = new ParamBuilder();
  const source = currentPricesSql(`project_id = ${pb.str(DEFAULT_PRICE_PROJECT)}`);
  return { sql: `SELECT ${PRICE_COLUMNS.join(", ")}, version FROM (${source})`, params: pb.params };
}
