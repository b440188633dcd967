import type { CostRecordField } from "../../contract/costs.js";
import { columnFields, composeFields, type FieldKind } from "../expr/fields.js";

/**
 * What the `query` and `sort_by` of `/cost/query` (and the `query` of `/cost/purge`) may
 * name: the cost record's fields, columns of the current price rows (costsQuery.ts), each
 * typed and never NULL. They are strict (store/expr/compile.ts): a text field compares with
 * strings and text fields, a number field with numbers, effective_date (µs) with seconds
 * since the epoch or ISO 8601; a field is never read as another kind, so `llm_id > 3`,
 * `prompt_token_cost = "cheap"` or `$contains` on a price are refused (422), not false.
 */
const KINDS: Readonly<Record<CostRecordField, FieldKind>> = {
  id: "string",
  llm_id: "string",
  prompt_token_cost: "number",
  completion_token_cost: "number",
  prompt_token_cost_unit: "string",
  completion_token_cost_unit: "string",
  effective_date: "datetime",
  provider_id: "string",
};

export const COST_QUERY_FIELDS = composeFields(
  columnFields(
    "cost record",
    Object.fromEntries(Object.entries(KINDS).map(([name, kind]) => [name, { kind, nullable: false }])),
    { strict: true },
  ),
);
