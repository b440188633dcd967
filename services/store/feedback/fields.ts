import { type CallField, type CallFieldKind, type SortDirection } from "../calls/fields.js";
import { MAX_JSON_DEPTH } from "../calls/flatten.js";
import type { ParamBuilder } from "../sql.js";
import { InvalidFieldError } from "../../errors.js";

/**
 * The whitelist of feedback fields that `/feedback/query` and `/feedback/purge` may name in
 * `query` and `sort_by`. Each renders SQL over the FINAL row of `feedback`, with the same
 * kinds (and so the same `$expr` semantics, see calls/expr.ts) as call fields:
 * - the columns: id, project_id, weave_ref, feedback_type, wb_user_id (strings), creator,
 *   annotation_ref, runnable_ref, call_ref, trigger_ref, queue_id (nullable strings),
 *   created_at (datetime, µs);
 * - `payload`: the whole payload's JSON text;
 * - `payload.<key>.<key>...`: a payload leaf (flattened like call JSON: strings raw,
 *   numbers as JavaScript writes them, booleans `true`/`false`), NULL when absent.
 */

const COLUMNS: Readonly<Record<string, { kind: CallFieldKind; nullable: boolean }>> = {
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
};

/** Keys a payload path may name: the call paths' rule (calls/fields.ts). */
const SEGMENT = /^[\p{L}\p{N}_\-$@:+/# ]+$/u;
const MAX_PATH_CHARS = 1024;

/** Checks a dotted path below the payload (`output.score`); returns its segments. */
export function payloadPathSegments(path: string): string[] {
  if (path.length > MAX_PATH_CHARS) throw new InvalidFieldError(`payload path longer than ${MAX_PATH_CHARS} characters`);
  const segments = path.split(".");
  if (segments.length > MAX_JSON_DEPTH) throw new InvalidFieldError(`payload path deeper than ${MAX_JSON_DEPTH} keys: ${path}`);
  for (const segment of segments) {
    if (!SEGMENT.test(segment)) throw new InvalidFieldError(`invalid key ${JSON.stringify(segment)} in payload path ${path}`);
  }
  return segments;
}

/** The payload leaf at `payload.<path>` of the current feedback row; NULL when absent. */
export function payloadLeafSql(path: string, pb: ParamBuilder): string {
  payloadPathSegments(path);
  const p = pb.str(`payload.${path}`);
  return `if(indexOf(payload_paths, ${p}) = 0, NULL, payload_values[indexOf(payload_paths, ${p})])`;
}

/** Resolves a feedback field path to its definition, or throws InvalidFieldError. */
export function resolveFeedbackField(path: string, pb: ParamBuilder): CallField {
  const column = Object.hasOwn(COLUMNS, path) ? COLUMNS[path] : undefined;
  if (column) return { sql: path, kind: column.kind, nullable: column.nullable };
  if (path === "payload") return { sql: "payload", kind: "json_leaf", nullable: false };
  if (path.startsWith("payload.")) return { sql: payloadLeafSql(path.slice("payload.".length), pb), kind: "json_leaf", nullable: true };
  throw new InvalidFieldError(`unknown feedback field: ${path} (known: ${[...Object.keys(COLUMNS), "payload", "payload.<path>"].join(", ")})`);
}

/** ORDER BY terms for one feedback sort field: NULLs last; JSON leaves numerically, then as text. */
export function feedbackSortExpressions(path: string, direction: SortDirection, pb: ParamBuilder): string[] {
  if (direction !== "asc" && direction !== "desc") {
    throw new InvalidFieldError(`sort direction must be "asc" or "desc", got ${JSON.stringify(direction)}`);
  }
  const field = resolveFeedbackField(path, pb);
  const dir = direction === "asc" ? "ASC" : "DESC";
  if (field.kind === "json_leaf") return [`toFloat64OrNull(${field.sql}) ${dir} NULLS LAST`, `${field.sql} ${dir} NULLS LAST`];
  return [`${field.sql} ${dir} NULLS LAST`];
}
