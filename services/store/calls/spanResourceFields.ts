import { exactLeafEquals, keyPathSegments, type FieldScope, type FieldSet } from "../expr/fields.js";
import { tupleElementSql, type ParamBuilder } from "../sql.js";
import { MAX_JSON_DEPTH } from "./flatten.js";
import { CALL_JSON_LEAVES, LEAF_CUT } from "./jsonLeaves.js";
import { isSharedLeafPath, SHARED_LEAF_ROOTS } from "./spanResources.js";
import { withIoCopiesSql } from "./ioCopies.js";

/**
 * What a call's row lacks of its span's resource and scope (spanResources.ts), in SQL. A call
 * with a `resource_hash` takes them from `span_resources`: each field looks its value up by
 * the hash in arrays that one scalar subquery makes inside ClickHouse (hash → value), over the
 * resources of the queried project; a call without one (its attributes stored whole) reads
 * its own row as before.
 */

/** `span_resources` of the queried project (of every project when none is named: a hash names one text in all). */
function resourcesOf(pb: ParamBuilder, scope: FieldScope, condition: string): string {
  const project = scope.projectId === undefined ? "" : `project_id = ${pb.str(scope.projectId)} AND `;
  return `span_resources WHERE ${project}${condition}`;
}

/**
 * The value `value` (SQL over a `span_resources` row) of the call's resource, NULL when its
 * resource has no such value (`has`: which rows have one). A sentinel pair at index 1
 * ('' → NULL) keeps the arrays typed when no resource has it; no hash is ''.
 */
function resourceValue(value: string, has: string, pb: ParamBuilder, scope: FieldScope): string {
  const lookup = `(SELECT tuple(arrayPushFront(groupArray(hash), ''), arrayPushFront(groupArray(toNullable(value)), NULL)) FROM (
      SELECT hash, any(${value}) AS value FROM ${resourcesOf(pb, scope, has)} GROUP BY hash))`;
  const hashes = tupleElementSql(lookup, 1);
  return `${tupleElementSql(lookup, 2)}[transform(resource_hash, ${hashes}, arrayEnumerate(${hashes}), toUInt32(1))]`;
}

/**
 * The whole text of the call's attributes: its row's `attributes` and, for a span, the inputs
 * and output they repeat put back (ioCopies.ts; only a span's row holds marks, none in its last
 * two braces) and its resource's text spliced in.
 */
export function attributesTextSql(pb: ParamBuilder, scope: FieldScope): string {
  const own = withIoCopiesSql("substring(attributes, 1, length(attributes) - 2)", pb);
  const text = resourceValue("text", "1", pb, scope);
  return `if(resource_hash = '', attributes, concat(${own}, ifNull(${text}, ''), '}}'))`;
}

/** The leaves `attributes.otel.resource.…` and `attributes.otel.scope.…`, before the call's own leaves (fields.ts). */
export const SPAN_RESOURCE_LEAVES: FieldSet = {
  name: "span resource leaves",
  known: SHARED_LEAF_ROOTS.map((root) => `${root}[.<path>]`),
  resolve(path, pb, scope) {
    if (!isSharedLeafPath(path)) return undefined;
    keyPathSegments(path.slice("attributes.".length), MAX_JSON_DEPTH, path);
    // `span_resources` names its leaf columns as `calls` does: one SQL reads the leaf in either row.
    const leaf = CALL_JSON_LEAVES.leafSql(path, pb);
    const p = pb.str(path);
    const has = `has(json_paths, ${p})`;
    const sql = `if(resource_hash = '', ${leaf}, ${resourceValue(leaf, has, pb, scope)})`;
    const exactEquals = (text: string, b: ParamBuilder): string | undefined => {
      const equals = exactLeafEquals(LEAF_CUT, leaf, p, text, b);
      if (equals === undefined) return undefined;
      const equal = `(SELECT groupArray(hash) FROM (SELECT DISTINCT hash FROM ${resourcesOf(b, scope, `${has} AND ${equals}`)}))`;
      return `if(resource_hash = '', ${equals}, has(${equal}, resource_hash))`;
    };
    return { sql, kind: "json_leaf", nullable: true, exactEquals };
  },
};
