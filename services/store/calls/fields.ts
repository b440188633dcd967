import { InvalidFieldError } from "../../errors.js";
import type { ParamBuilder } from "../sql.js";
import { isCostsField, resolveCostsField } from "../costs/costFields.js";
import { JSON_PARTS, MAX_JSON_DEPTH } from "./flatten.js";
import { resolveCallFeedbackField } from "../feedback/callFields.js";

/**
 * The whitelist of call fields that filters and sorts may name. Each definition renders
 * its own SQL over the FINAL row of `calls`; nothing else reaches SQL as an identifier.
 *
 * Kinds:
 * - `string`: a String / Nullable(String) column or expression;
 * - `number`: a numeric column or expression (Int64 / Float64, maybe Nullable);
 * - `datetime`: Int64 microseconds since the epoch (started_at, ended_at);
 * - `json_leaf`: a flattened JSON leaf (see flatten.ts): Nullable(String), NULL when the
 *   path is absent, else the leaf's text (strings raw, numbers as JS writes them).
 */
export type CallFieldKind = "string" | "number" | "json_leaf" | "datetime";

export interface CallField {
  readonly sql: string;
  readonly kind: CallFieldKind;
  /** Whether the SQL can be NULL (compilers wrap comparisons on nullable fields). */
  readonly nullable: boolean;
}

export type SortDirection = "asc" | "desc";

interface ColumnDef {
  readonly kind: CallFieldKind;
  readonly nullable: boolean;
}

const COLUMNS: Readonly<Record<string, ColumnDef>> = {
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
};

const STATUS_ERROR_COUNT_PATH = "summary.status_counts.error";

/** `summary.weave.*`: computed at read time, never stored. */
const COMPUTED: Readonly<Record<string, (pb: ParamBuilder) => CallField>> = {
  // running while no end; error when the call raised; descendant_error when the summary
  // counts errors below it; success otherwise.
  "summary.weave.status": (pb) => ({
    sql:
      "multiIf(ended_at IS NULL, 'running', exception IS NOT NULL, 'error', " +
      `ifNull(toFloat64OrNull(${jsonLeafSql(STATUS_ERROR_COUNT_PATH, pb)}), 0) > 0, 'descendant_error', 'success')`,
    kind: "string",
    nullable: false,
  }),
  // NULL while running (ended_at is NULL).
  "summary.weave.latency_ms": () => ({ sql: "((ended_at - started_at) / 1000)", kind: "number", nullable: true }),
  "summary.weave.trace_name": () => ({ sql: "ifNull(nullIf(display_name, ''), op_name)", kind: "string", nullable: false }),
};

const JSON_ROOTS: ReadonlySet<string> = new Set(JSON_PARTS);

/**
 * Conservative key syntax: letters, digits and a few punctuation marks common in keys.
 * Quotes, backticks, backslashes, braces and control characters are refused even though
 * the path is bound as a parameter anyway.
 */
const SEGMENT = /^[\p{L}\p{N}_\-$@:+/# ]+$/u;
const MAX_PATH_CHARS = 1024;

/** What a field may depend on beyond the row: the project being queried. */
export interface FieldScope {
  readonly projectId?: string;
}

/** Resolves a dotted field path to its definition, or throws InvalidFieldError. */
export function resolveCallField(path: string, pb: ParamBuilder, scope: FieldScope = {}): CallField {
  const column = Object.hasOwn(COLUMNS, path) ? COLUMNS[path] : undefined;
  if (column) return { sql: path, kind: column.kind, nullable: column.nullable };
  const computed = Object.hasOwn(COMPUTED, path) ? COMPUTED[path] : undefined;
  if (computed) return computed(pb);
  // `summary.weave.costs_total` and `summary.weave.costs.<model>.<figure>`: see costs/costFields.ts.
  if (isCostsField(path)) return resolveCostsField(path, pb);
  // `feedback.[<type>].<field>`: from the call's feedback (feedback/callFields.ts).
  if (path.startsWith("feedback.")) return resolveCallFeedbackField(path, pb, scope.projectId);

  if (path.length > MAX_PATH_CHARS) throw new InvalidFieldError(`field path longer than ${MAX_PATH_CHARS} characters`);
  const segments = path.split(".");
  const root = segments[0] ?? "";
  if (!JSON_ROOTS.has(root)) throw new InvalidFieldError(`unknown field: ${path}`);
  if (root === "summary" && segments[1] === "weave") {
    throw new InvalidFieldError(`unknown computed field: ${path} (known: ${Object.keys(COMPUTED).join(", ")})`);
  }
  if (segments.length > 1 + MAX_JSON_DEPTH) {
    throw new InvalidFieldError(`field path deeper than ${MAX_JSON_DEPTH} keys below ${root}: ${path}`);
  }
  for (const segment of segments.slice(1)) {
    if (!SEGMENT.test(segment)) throw new InvalidFieldError(`invalid key ${JSON.stringify(segment)} in field path ${path}`);
  }
  if (segments.length === 1) return { sql: wholePartSql(root, pb), kind: "json_leaf", nullable: true };
  return { sql: jsonLeafSql(path, pb), kind: "json_leaf", nullable: true };
}

/**
 * A bare part name (`output`, `inputs`, ...): its leaf when the part is a scalar or empty,
 * else the part's stored JSON text (NULL when the call has none, e.g. no output yet). So
 * `output` is NULL only for a call without output, and `$contains` on it searches the text.
 */
function wholePartSql(part: string, pb: ParamBuilder): string {
  const p = pb.str(part);
  // `part` is one of JSON_PARTS, which are column names.
  return `if(indexOf(json_paths, ${p}) = 0, ${part}, json_values[indexOf(json_paths, ${p})])`;
}

/** The leaf at an exact flattened path; NULL when the call has no such leaf. */
function jsonLeafSql(path: string, pb: ParamBuilder): string {
  const p = pb.str(path);
  return `if(indexOf(json_paths, ${p}) = 0, NULL, json_values[indexOf(json_paths, ${p})])`;
}

/**
 * ORDER BY terms for one sort field, NULLs (absent leaves, running latency) last in both
 * directions. A JSON leaf sorts numerically first (numbers before text), then as text.
 */
export function sortExpressions(path: string, direction: SortDirection, pb: ParamBuilder, scope: FieldScope = {}): string[] {
  if (direction !== "asc" && direction !== "desc") {
    throw new InvalidFieldError(`sort direction must be "asc" or "desc", got ${JSON.stringify(direction)}`);
  }
  const field = resolveCallField(path, pb, scope);
  const dir = direction === "asc" ? "ASC" : "DESC";
  if (field.kind === "json_leaf") {
    return [`toFloat64OrNull(${field.sql}) ${dir} NULLS LAST`, `${field.sql} ${dir} NULLS LAST`];
  }
  return [`${field.sql} ${dir} NULLS LAST`];
}
