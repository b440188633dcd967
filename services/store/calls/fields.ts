import { columnFields, composeFields, exactLeafEquals, jsonLeafFields, namedFields, type Field, type LeafCut } from "../query/fields.js";
import type { ParamBuilder } from "../sql.js";
import { cutLeaf, JSON_PARTS, leafHash, MAX_JSON_DEPTH, MAX_LEAF_CHARS } from "./flatten.js";

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

/** Leaves longer than MAX_LEAF_CHARS are cut; their paths and hashes are listed (flatten.ts). */
const LEAF_CUT: LeafCut = { maxChars: MAX_LEAF_CHARS, paths: "json_long_paths", hashes: "json_long_hashes", cut: cutLeaf, hash: leafHash };

/** `<part>.<key>...`: the flattened leaves of the JSON parts (flatten.ts); `summary.weave` is computed. */
export const CALL_JSON_LEAVES = jsonLeafFields("call JSON leaves", {
  roots: JSON_PARTS,
  paths: "json_paths",
  values: "json_values",
  maxDepth: MAX_JSON_DEPTH,
  reserved: ["summary.weave"],
  cut: LEAF_CUT,
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

const STATUS_ERROR_COUNT_PATH = "summary.status_counts.error";

/** `summary.weave.*`: computed at read time, never stored (the costs are costs/costFields.ts). */
export const CALL_COMPUTED = namedFields("computed call fields", {
  // running while no end; error when the call raised; descendant_error when the summary
  // counts errors below it; success otherwise.
  "summary.weave.status": (pb) => ({
    sql:
      "multiIf(ended_at IS NULL, 'running', exception IS NOT NULL, 'error', " +
      `ifNull(toFloat64OrNull(${CALL_JSON_LEAVES.leafSql(STATUS_ERROR_COUNT_PATH, pb)}), 0) > 0, 'descendant_error', 'success')`,
    kind: "string",
    nullable: false,
  }),
  // NULL while running (ended_at is NULL).
  "summary.weave.latency_ms": () => ({ sql: "((ended_at - started_at) / 1000)", kind: "number", nullable: true }),
  "summary.weave.trace_name": () => ({ sql: "ifNull(nullIf(display_name, ''), op_name)", kind: "string", nullable: false }),
  // The `total_tokens` of every model in summary.usage; where none is given, prompt/input plus
  // completion/output tokens. NULL without usage.
  "summary.weave.total_tokens": (pb) => {
    const totals = pb.str("^summary\\.usage\\..+\\.total_tokens$");
    const parts = pb.str("^summary\\.usage\\..+\\.(prompt_tokens|input_tokens|completion_tokens|output_tokens)$");
    const sumOf = (re: string) => `arraySum(arrayMap((p, v) -> if(match(p, ${re}), toFloat64OrZero(v), 0), json_paths, json_values))`;
    const has = (re: string) => `arrayExists(p -> match(p, ${re}), json_paths)`;
    return { sql: `multiIf(${has(totals)}, ${sumOf(totals)}, ${has(parts)}, ${sumOf(parts)}, NULL)`, kind: "number", nullable: true };
  },
});

/** Everything a call row holds itself. */
export const CALL_FIELDS = composeFields(CALL_COLUMNS, CALL_COMPUTED, CALL_JSON_PARTS, CALL_JSON_LEAVES);
