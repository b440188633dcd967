import { CALL_COST_FIELDS } from "../costs/costFields.js";
import { CALL_FEEDBACK_FIELDS } from "../feedback/callFields.js";
import { composeFields, type Fields, type FieldSet } from "../expr/fields.js";
import { CALL_TABLE_FIELDS } from "./fields.js";

/**
 * What a calls query (`query`, `sort_by`) may name: the call's own fields, its costs and the
 * feedback on it.
 */
export const CALLS_QUERY_FIELDS = composeFields(CALL_TABLE_FIELDS, CALL_COST_FIELDS, CALL_FEEDBACK_FIELDS);

/**
 * The fields of a query with `expand_columns`: the fields of the objects the expanded refs
 * name (expandedFields.ts) come first, so a path below an expand column reads the resolved
 * value rather than the call's own (absent) leaf.
 */
export function callsQueryFields(expanded?: FieldSet | null): Fields {
  return expanded ? composeFields(expanded, CALLS_QUERY_FIELDS) : CALLS_QUERY_FIELDS;
}
