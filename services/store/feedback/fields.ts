import { MAX_JSON_DEPTH } from "../calls/flatten.js";
import { columnFields, composeFields, jsonLeafFields, keyPathSegments } from "../expr/fields.js";
import type { ParamBuilder } from "../sql.js";

/**
 * The fields of a feedback row (the FINAL row of `feedback`) that `/feedback/query` and
 * `/feedback/purge` may name in `query` and `sort_by`, compiled like every field
 * (store/expr/compile.ts):
 * - the columns: id, project_id, weave_ref, feedback_type, wb_user_id (strings), creator,
 *   annotation_ref, runnable_ref, call_ref, trigger_ref, queue_id (nullable strings),
 *   created_at (datetime, µs), and `payload`: the whole payload's JSON text;
 * - `payload.<key>.<key>...`: a payload leaf (flattened like call JSON: strings raw,
 *   numbers as JavaScript writes them, booleans `true`/`false`), NULL when absent.
 */

const FEEDBACK_COLUMNS = columnFields("feedback columns", {
  id: { kind: "string", nullable: false },
  project_id: { kind: "string", nullable: false },
  weave_ref: { kind: "string", nullable: false },
  feedback_type: { kind: "string", nullable: false },
  wb_user_id: { kind: "string", nullable: false },
  creator: { kind: "string", nullable: true },
  annotation_ref: { kind: "string", nullable: true },
  runnable_ref: { kind: "string", nullable: true },
  call_ref: { kind: "string", nullable: true },
  trigger_ref: { kind: "string", nullable: true },
  queue_id: { kind: "string", nullable: true },
  created_at: { kind: "datetime", nullable: false },
  payload: { kind: "json_leaf", nullable: false },
});

/** The payload is flattened as one call part (payload.ts), so its paths have the call paths' depth. */
const PAYLOAD_LEAVES = jsonLeafFields("payload leaves", {
  roots: ["payload"],
  paths: "payload_paths",
  values: "payload_values",
  maxDepth: MAX_JSON_DEPTH,
});

export const FEEDBACK_QUERY_FIELDS = composeFields(FEEDBACK_COLUMNS, PAYLOAD_LEAVES);

/** Checks a dotted path below the payload (`output.score`); returns its keys. */
export function payloadPathSegments(path: string): string[] {
  return keyPathSegments(path, MAX_JSON_DEPTH);
}

/** The payload leaf at `payload.<path>` of the current feedback row; NULL when absent. */
export function payloadLeafSql(path: string, pb: ParamBuilder): string {
  payloadPathSegments(path);
  return PAYLOAD_LEAVES.leafSql(`payload.${path}`, pb);
}
