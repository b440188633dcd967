import { CALL_FIELDS as CALL_FIELD_SPECS, nullableInRow, SHOWN_ORDER, type CallFieldSpec, type CallFieldType } from "../../contract/callFields.js";
import { columnFields, composeFields, exactLeafEquals, namedFields, type Field, type FieldKind, type FieldScope } from "../expr/fields.js";
import type { ParamBuilder } from "../sql.js";
import { CALL_COMPUTED_FIELDS } from "./computedFields.js";
import { JSON_PARTS } from "./flatten.js";
import { CALL_JSON_LEAVES, LEAF_CUT } from "./jsonLeaves.js";
import { attributesTextSql, SPAN_RESOURCE_LEAVES } from "./spanResourceFields.js";

/**
 * The fields of a call row (the FINAL row of `calls`) that filters and sorts may name; the
 * calls query adds the fields of other resources (queryFields.ts).
 */

/** The kind a filter compares a call column as, by the field's type; JSON fields are the part and leaf sets below. */
const KIND_OF_TYPE: Partial<Record<CallFieldType, FieldKind>> = { string: "string", int: "number", datetime: "datetime" };

/** The call's own columns (contract/callFields.ts), in the order clients read them. */
export const CALL_COLUMNS = columnFields(
  "call columns",
  Object.fromEntries(
    SHOWN_ORDER.flatMap((name) => {
      const spec: CallFieldSpec = CALL_FIELD_SPECS[name];
      const kind = KIND_OF_TYPE[spec.type];
      return kind ? [[name, { kind, nullable: nullableInRow(spec) }]] : [];
    }),
  ),
);

/**
 * A bare part name (`output`, `inputs`, ...): its leaf when the part is a scalar or empty,
 * else the part's stored JSON text (NULL when the call has none, e.g. no output yet); the
 * attributes' text with their span's resource (spanResourceFields.ts). So `output` is NULL
 * only for a call without output, and `$contains` on it searches the text.
 */
function wholePart(part: string, pb: ParamBuilder, scope: FieldScope): Field {
  const p = pb.str(part);
  const leaf = `json_values[indexOf(json_paths, ${p})]`;
  // `part` is one of JSON_PARTS, which are column names.
  const text = part === "attributes" ? attributesTextSql(pb, scope) : part;
  const sql = `if(indexOf(json_paths, ${p}) = 0, ${text}, ${leaf})`;
  const exactEquals = (exact: string, b: ParamBuilder): string | undefined => {
    const onLeaf = exactLeafEquals(LEAF_CUT, leaf, p, exact, b);
    return onLeaf && `if(indexOf(json_paths, ${p}) = 0, ifNull(${text} = ${b.str(exact)}, 0), ${onLeaf})`;
  };
  return { sql, kind: "json_leaf", nullable: true, exactEquals };
}

export const CALL_JSON_PARTS = namedFields(
  "call JSON parts",
  Object.fromEntries(JSON_PARTS.map((part) => [part, (pb: ParamBuilder, scope: FieldScope) => wholePart(part, pb, scope)])),
);

/** `summary.weave.*`: computed at read time, never stored (computedFields.ts; the costs are store/costs/costFields.ts). */
export const CALL_COMPUTED = namedFields(
  "computed call fields",
  Object.fromEntries(
    Object.entries(CALL_COMPUTED_FIELDS).map(([key, { sql, kind, nullable }]) => [`summary.weave.${key}`, (pb: ParamBuilder): Field => ({ sql: sql(pb), kind, nullable })]),
  ),
);

/** Everything a call row holds itself. */
export const CALL_TABLE_FIELDS = composeFields(CALL_COLUMNS, CALL_COMPUTED, CALL_JSON_PARTS, SPAN_RESOURCE_LEAVES, CALL_JSON_LEAVES);
