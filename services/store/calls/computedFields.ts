import { isJsonObject, type JsonObject, type JsonValue } from "../../json.js";
import { countOf, countSql } from "../costs/counts.js";
import { usageOfSummary } from "../costs/pricing.js";
import type { FieldKind } from "../expr/fields.js";
import { quoteString, type ParamBuilder } from "../sql.js";
import { CALL_JSON_LEAVES } from "./jsonLeaves.js";

/**
 * The computed `summary.weave` values of a call, each defined once: its SQL over the FINAL
 * `calls` row (what filters and sorts compare, fields.ts) beside its TypeScript over the
 * same stored row (what the JSON view shows, query/callView.ts), so that a value shown is a
 * value a filter finds. test/calls/computedFields.test.ts runs both on random and edge rows
 * of the real ClickHouse and checks they agree, and that `$eq` on each shown value finds
 * its call.
 *
 * The forms are the Weave server's: `trace_name` is the display name when one is set (not
 * empty), else the op's name when `op_name` is an op ref (`weave:///<entity>/<project>/op/
 * <name>:<digest>`, the name percent-decoded), else `op_name`; `latency_ms` is whole
 * milliseconds, truncated toward zero. The costs (`summary.weave.costs...`) are
 * ../costs/costFields.ts (SQL) and ../costs/pricing.ts (JSON, `include_costs`), both reading
 * counts through ../costs/counts.ts.
 */

/** What the computed values read: a stored `calls` row, times in µs, the summary parsed. */
export interface ComputedInput {
  readonly op_name: string;
  readonly display_name: string | null;
  readonly started_at: number;
  readonly ended_at: number | null;
  readonly exception: string | null;
  readonly summary: JsonObject | null;
}

export interface ComputedField {
  readonly kind: FieldKind;
  readonly nullable: boolean;
  /** Shown in `summary.weave` of a call's JSON; a field not shown is for filters and sorts only. */
  readonly shown: boolean;
  /** The value in SQL over a `calls` row. */
  sql(pb: ParamBuilder): string;
  /** The same value in TypeScript. */
  value(call: ComputedInput): JsonValue;
}

export type CallStatus = "success" | "error" | "running" | "descendant_error";

// ---- trace_name ----------------------------------------------------------------------------

/** An op ref; its first group is the op's name. RE2 (`extract`, `match`) and JavaScript read it alike. */
const OP_REF = "^weave:///[^/]+/[^/]+/op/([^:]+):";
/**
 * Text whose every `%` starts an escape of well-formed UTF-8 (RFC 3629), so that
 * decodeURIComponent does not throw and ClickHouse's decodeURLComponent gives the same
 * text. A name that is not is shown as it is.
 */
const CONT = "%[89ABab][0-9A-Fa-f]";
const PERCENT_ENCODED =
  "^([^%]|%[0-7][0-9A-Fa-f]" +
  `|%[Cc][2-9A-Fa-f]${CONT}|%[Dd][0-9A-Fa-f]${CONT}` +
  `|%[Ee]0%[ABab][0-9A-Fa-f]${CONT}|%([Ee][1-9A-Ca-c]|[Ee][EFef])${CONT}${CONT}|%[Ee][Dd]%[89][0-9A-Fa-f]${CONT}` +
  `|%[Ff]0%[9ABab][0-9A-Fa-f]${CONT}${CONT}|%[Ff][1-3]${CONT}${CONT}${CONT}|%[Ff]4%8[0-9A-Fa-f]${CONT}${CONT})*$`;
const OP_REF_RE = new RegExp(OP_REF);
const PERCENT_ENCODED_RE = new RegExp(PERCENT_ENCODED);

/** `weave:///e/p/op/name:digest` → `name` (percent-decoded when well formed); anything else stays as it is. */
export function opDisplayName(opName: string): string {
  const name = OP_REF_RE.exec(opName)?.[1];
  if (!name) return opName;
  return PERCENT_ENCODED_RE.test(name) ? decodeURIComponent(name) : name;
}

/** opDisplayName in SQL; `n` binds the extracted name ('' when op_name is no op ref). */
const OP_DISPLAY_NAME_SQL =
  `arrayElement(arrayMap(n -> if(n = '', op_name, if(match(n, ${quoteString(PERCENT_ENCODED)}), decodeURLComponent(n), n)), ` +
  `[extract(op_name, ${quoteString(OP_REF)})]), 1)`;

// ---- status ----------------------------------------------------------------------------

const STATUS_ERROR_COUNT_PATH = "summary.status_counts.error";

/** running while no end; error when the call raised; descendant_error when its summary counts errors below it; success otherwise. */
export function callStatus(call: Pick<ComputedInput, "ended_at" | "exception" | "summary">): CallStatus {
  if (call.ended_at === null) return "running";
  if (call.exception !== null) return "error";
  const counts = call.summary?.status_counts;
  return (isJsonObject(counts) ? (countOf(counts.error) ?? 0) : 0) > 0 ? "descendant_error" : "success";
}

// ---- total_tokens ----------------------------------------------------------------------

const USAGE_PREFIX = "summary.usage.";

/**
 * The sum over the models of summary.usage of each model's total_tokens as pricing.ts
 * normalises it (`total_tokens`, else prompt/input plus completion/output). A leaf
 * `summary.usage.<model>.<key>` belongs to the model before its last dot (as costFields.ts
 * reads usage). `jp`, `jv` are json_paths and json_values passed in as lambda parameters
 * (18.16 resolves no column inside lambdas over lambda-made arrays, see costFields.ts).
 */
const TOTAL_TOKENS_SQL = (() => {
  const prefix = quoteString(USAGE_PREFIX);
  const count = (key: string) => countSql(`arrayElement(jv, indexOf(jp, concat(${prefix}, m, ${quoteString(`.${key}`)})))`);
  const either = (a: string, b: string) => `ifNull(${count(a)}, ifNull(${count(b)}, 0))`;
  const total = `ifNull(${count("total_tokens")}, ${either("prompt_tokens", "input_tokens")} + ${either("completion_tokens", "output_tokens")})`;
  const usageLeaves = `arrayFilter(p -> startsWith(p, ${prefix}) AND position(substring(p, ${USAGE_PREFIX.length + 1}), '.') > 0, jp)`;
  const modelOf = `substring(p, ${USAGE_PREFIX.length + 1}, length(p) - ${USAGE_PREFIX.length + 1} - length(arrayElement(splitByChar('.', p), -1)))`;
  const distinct = "arrayFilter((m, i) -> indexOf(ms, m) = i, ms, arrayEnumerate(ms))";
  const body = `if(empty(models), NULL, arraySum(arrayMap(m -> ${total}, models)))`;
  const withModels = `arrayElement(arrayMap(models -> ${body}, [arrayElement(arrayMap(ms -> ${distinct}, [arrayMap(p -> ${modelOf}, ${usageLeaves})]), 1)]), 1)`;
  return `arrayElement(arrayMap((jp, jv) -> ${withModels}, [json_paths], [json_values]), 1)`;
})();

function totalTokens(summary: JsonObject | null): number | null {
  const usage = usageOfSummary(summary);
  if (usage.size === 0) return null;
  let total = 0;
  for (const u of usage.values()) total += u.total_tokens;
  return total;
}

// ---- the table -------------------------------------------------------------------------

/** By their key under `summary.weave`; the shown ones in the order the JSON view writes them. */
export const CALL_COMPUTED_FIELDS: Readonly<Record<string, ComputedField>> = {
  status: {
    kind: "string",
    nullable: false,
    shown: true,
    sql: (pb) =>
      "multiIf(ended_at IS NULL, 'running', exception IS NOT NULL, 'error', " +
      `ifNull(${countSql(CALL_JSON_LEAVES.leafSql(STATUS_ERROR_COUNT_PATH, pb))}, 0) > 0, 'descendant_error', 'success')`,
    value: callStatus,
  },
  trace_name: {
    kind: "string",
    nullable: false,
    shown: true,
    sql: () => `ifNull(nullIf(display_name, ''), ${OP_DISPLAY_NAME_SQL})`,
    value: (call) => (call.display_name ? call.display_name : opDisplayName(call.op_name)),
  },
  // NULL while running.
  latency_ms: {
    kind: "number",
    nullable: true,
    shown: true,
    sql: () => "intDiv(ended_at - started_at, 1000)",
    // `+ 0`: no -0 (a call that ended less than 1 ms before it started), as intDiv gives none.
    value: (call) => (call.ended_at === null ? null : Math.trunc((call.ended_at - call.started_at) / 1000) + 0),
  },
  // NULL without usage. Not shown (the Weave server shows no such value); a filter and sort field.
  total_tokens: {
    kind: "number",
    nullable: true,
    shown: false,
    sql: () => TOTAL_TOKENS_SQL,
    value: (call) => totalTokens(call.summary),
  },
};

const SHOWN = Object.entries(CALL_COMPUTED_FIELDS).filter(([, field]) => field.shown);

/** The shown computed values of a call, to set into its `summary.weave`. */
export function shownComputedValues(call: ComputedInput): JsonObject {
  const out: JsonObject = {};
  for (const [key, field] of SHOWN) out[key] = field.value(call);
  return out;
}
