import { columnFields, composeFields, exactLeafEquals, namedFields, type Field } from "../query/fields.js";
import type { ParamBuilder } from "../sql.js";
import { CALL_COMPUTED_FIELDS } from "./computedFields.js";
import { JSON_PARTS } from "./flatten.js";
import { CALL_JSON_LEAVES, LEAF_CUT } from "./jsonLeaves.js";

/**
 * The fields of a call row (the FINAL row of `calls`) that filters and sorts may name; the
 * calls query adds the fields of other resources (queryFields.ts).
 */

export const CALL_COLUMNS = columnFields("call columns", {
  id: { kind: "string", nullable: false },
  project_id: { kind: "string", nullable: false },
  trace_id: { kind: "string", nullable: false },
  parent_id: { kind: "string", nullable: true },
  thread_id: { kind: "string", nullable: true },
  turn_id: { kind: "string", nullable: true },
  op_name: { kind: "string", nullable: false },
  display_name: { kind: "string", nullable: true },
  exception: { kind: "string", nullable: true },
  wb_user_id: { kind: "string", nullable: true },
  wb_run_id: { kind: "string", nullable: true },
  wb_run_step: { kind: "number", nullable: true },
  wb_run_step_end: { kind: "number", nullable: true },
  started_at: { kind: "datetime", nullable: false },
  ended_at: { kind: "datetime", nullable: true },
});

/**
 * A bare part name (`output`, `inputs`, ...): its leaf when the part is a scalar or empty,
 * else the part's stored JSON text (NULL when the call has none, e.g. no output yet). So
 * `output` is NULL only for a call without output, and `$contains` on it searches the text.
 */
function wholePart(part: string, pb: ParamBuilder): Field {
  const p = pb.str(part);
  const leaf = `json_values[indexOf(json_paths, ${p})]`;
  // `part` is one of JSON_PARTS, which are column names.
  const sql = `if(indexOf(json_paths, ${p}) = 0, ${part}, ${leaf})`;
  const exactEquals = (text: string, b: ParamBuilder): string | undefined => {
    const onLeaf = exactLeafEquals(LEAF_CUT, leaf, p, text, b);
    return onLeaf && `if(indexOf(json_paths, ${p}) = 0, ifNull(${part} = ${b.str(text)}, 0), ${onLeaf})`;
  };
  return { sql, kind: "json_leaf", nullable: true, exactEquals };
}

export const CALL_JSON_PARTS = namedFields(
  "call JSON parts",
  Object.fromEntries(JSON_PARTS.map((part) => [part, (pb: ParamBuilder) => wholePart(part, pb)])),
);

/** `summary.weave.*`: computed at read time, never stored (computedFields.ts; the costs are costs/costFields.ts). */
export const CALL_COMPUTED = namedFields(
  "computed call fields",
  Object.fromEntries(
    Object.entries(CALL_COMPUTED_FIELDS).map(([key, { sql, kind, nullable }]) => [`summary.weave.${key}`, (pb: ParamBuilder): Field => ({ sql: sql(pb), kind, nullable })]),
  ),
);

/** Everything a call row holds itself. */
export const CALL_FIELDS = composeFields(CALL_COLUMNS, CALL_COMPUTED, CALL_JSON_PARTS, CALL_JSON_LEAVES);
