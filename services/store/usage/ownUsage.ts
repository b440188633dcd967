import type { ParamBuilder } from "../sql.js";
import { AGGREGATE_OPERATIONS, INFERENCE_OPERATIONS, OPERATION_ATTRIBUTE } from "../../genAiOperations.js";

/**
 * A call's own usage: what the call itself spent, per model. Every total over several calls
 * (`/calls/usage`, `/trace/usage`, the token and cost figures of `/calls/stats`) adds own
 * usages, never summaries, so each token is counted once whichever client wrote the trace.
 * A single call's `summary.usage` is still read back as the client sent it.
 *
 * What a client puts in `summary.usage` depends on who it is (`attributes.weave.source`):
 * - Weave TypeScript SDK (`js-sdk`): a call's own LLM usage plus the summaries of the
 *   children that ended before it (each child's already holding its own descendants');
 * - Weave Python SDK (`python-sdk`): a call with children sends the sum of its children's
 *   summaries (its own LLM output is then not added), a call without children its own;
 * - OTLP spans (calls with an `otel_dump`): what their attributes report, which is the span's
 *   own for a model call but, for agent, tool and orchestration spans, the total of the spans
 *   below them again (genAiOperations.ts);
 * - anyone else (plain API calls): the call's own usage.
 *
 * The rule, per model and per figure (requests, prompt_tokens, completion_tokens,
 * total_tokens, each read from the summary as pricing.ts says):
 * - a call of the two SDKs: own = its summary − the sum of its direct children's
 *   summaries, never below zero (a child the SDK did not roll in, e.g. one that ended after
 *   its parent, must not push the parent below zero);
 * - an OTLP span whose `attributes.operation` is an inference (`chat`, …): own = its summary;
 * - an OTLP span whose operation is an aggregate (`invoke_agent`, `execute_tool`, …): own = 0;
 * - any other OTLP span (no operation, or one the conventions do not name): as an SDK call,
 *   its summary − its direct children's summaries, never below zero. Structurally: what a
 *   span reports beyond what the spans directly below it report is its own, so a wrapper
 *   that repeats its children's usage (Vercel AI SDK 6's `ai.generateText` over
 *   `ai.generateText.doGenerate`) counts nothing, and a span with a model call of its own
 *   besides its children keeps it. It sees direct children only: a wrapper whose usage
 *   comes from grandchildren through children that report none is counted again;
 * - any other call: own = its summary.
 * So the own usages of an SDK trace add up to its root's summary, whatever arrived when: a
 * child not arrived yet is not subtracted, and its parent's summary still holds it. A
 * deleted child is subtracted too: its usage leaves the totals with it.
 *
 * SQL (ClickHouse 18.16: no window functions, no correlated subqueries). Plan, one read:
 * (1) ARRAY JOIN each call's `summary.usage.<model>.<key>` leaves from `json_paths` /
 * `json_values`, with the call's rule (USAGE_RULE); (2) GROUP BY call and model: the
 * summary's figures; (3) ARRAY JOIN [0, 1] AS role: each (call, model) row counts once for
 * the call itself (role 0, when its own usage is wanted) and once against its parent (role
 * 1); (4) GROUP BY target call and model: own = role-0 figures, minus role-1 figures when
 * the call's rule says so, or nothing for an aggregate.
 * The read must hold every direct child of each wanted call, deleted ones included.
 */

/** Writers whose `summary.usage` already holds their descendants' usage. */
export const ROLLED_UP_SOURCES = ["js-sdk", "python-sdk"] as const;
/**
 * Where the writer names itself: both SDKs set it on every call they start (the Python SDK
 * unless its `capture_client_info` setting, on by default, is turned off: its calls then
 * count as any other writer's). OTLP spans keep their attributes under `attributes.otel`.
 */
export const SOURCE_PATH = "attributes.weave.source";

export const OWN_FIGURES = ["requests", "prompt_tokens", "completion_tokens", "total_tokens"] as const;

/** How a call's own usage follows from its summary (the cases of the rule above). */
export const USAGE_RULE = { summary: 0, lessChildren: 1, none: 2 } as const;

/** Where an OTLP span's `gen_ai.operation.name` is kept (otlp/attributes.ts). */
export const OPERATION_PATH = `attributes.${OPERATION_ATTRIBUTE}`;

export interface OwnUsageRead {
  /** The calls read, each once (`calls FINAL`), every direct child of a wanted call among those `where` keeps. */
  readonly table: string;
  /** A boolean over a row of `table`: the calls read. */
  readonly where: string;
  /** A boolean over a row of `table`: its own usage is wanted. The other calls read only count as children. */
  readonly wanted: string;
  /** Columns carried from a wanted call to its result rows: output name → SQL over a row of `table`. */
  readonly carry: Readonly<Record<string, string>>;
}

const USAGE_PREFIX = "summary.usage.";
/** The keys read, by kind: 1 prompt_tokens, 2 input_tokens, 3 completion_tokens, 4 output_tokens, 5 total_tokens, 6 requests. */
const KEYS = ["prompt_tokens", "input_tokens", "completion_tokens", "output_tokens", "total_tokens", "requests"];

const sumOf = (k: number) => `sumIf(n, k = ${k})`;
const numericCount = (k: number) => `countIf(k = ${k} AND isNotNull(n))`;

/**
 * One row per (wanted call, model) whose own usage has a non-zero figure: `id`, `model`,
 * the OWN_FIGURES (Float64) and the carried columns.
 *
 * ClickHouse 18.16 spends its time here analysing the query, not reading a trace's rows:
 * an alias is expanded into its whole expression wherever it is used, so the values every
 * aggregate uses (kind, number, model) are columns of the level below, never aliases.
 */
export function ownUsageSql(read: OwnUsageRead, pb: ParamBuilder): string {
  const carried = Object.keys(read.carry);
  const list = (f: (name: string) => string) => carried.map((name) => `, ${f(name)}`).join("");
  const prefix = pb.str(USAGE_PREFIX);
  const leaf = (path: string) => `arrayElement(json_values, indexOf(json_paths, ${pb.str(path)}))`;
  const rolledUp = `has(${pb.strings(ROLLED_UP_SOURCES)}, ${leaf(SOURCE_PATH)})`;
  const operation = leaf(OPERATION_PATH);
  const rule = `multiIf(${rolledUp}, ${USAGE_RULE.lessChildren}, isNull(otel_dump), ${USAGE_RULE.summary},
      has(${pb.strings(INFERENCE_OPERATIONS)}, ${operation}), ${USAGE_RULE.summary},
      has(${pb.strings(AGGREGATE_OPERATIONS)}, ${operation}), ${USAGE_RULE.none}, ${USAGE_RULE.lessChildren})`;
  const own = (figure: string) =>
    `multiIf(maxIf(rule, role = 0) = ${USAGE_RULE.none}, toFloat64(0),
      maxIf(rule, role = 0) = ${USAGE_RULE.lessChildren}, greatest(0, sumIf(s_${figure}, role = 0) - sumIf(s_${figure}, role = 1)),
      sumIf(s_${figure}, role = 0)) AS ${figure}`;
  return `SELECT if(role = 0, self, assumeNotNull(parent)) AS id, model${list((c) => `anyIf(b_${c}, role = 0) AS ${c}`)},
  ${OWN_FIGURES.map(own).join(",\n  ")}
FROM (
  SELECT id AS self, model, any(parent_id) AS parent, any(is_wanted) AS wanted, any(usage_rule) AS rule${list((c) => `any(a_${c}) AS b_${c}`)},
    ifNull(${sumOf(6)}, 0) AS s_requests,
    ifNull(if(${numericCount(1)} > 0, ${sumOf(1)}, ${sumOf(2)}), 0) AS s_prompt_tokens,
    ifNull(if(${numericCount(3)} > 0, ${sumOf(3)}, ${sumOf(4)}), 0) AS s_completion_tokens,
    if(${numericCount(5)} > 0, ifNull(${sumOf(5)}, 0), s_prompt_tokens + s_completion_tokens) AS s_total_tokens
  FROM (
    SELECT id, parent_id, toUInt8(${read.wanted}) AS is_wanted, toUInt8(${rule}) AS usage_rule${list((c) => `${read.carry[c]} AS a_${c}`)},
      toFloat64OrNull(leaf_value) AS n, arrayElement(splitByChar('.', leaf_path), -1) AS leaf_key,
      indexOf(${pb.strings(KEYS)}, leaf_key) AS k, substring(leaf_path, 15, length(leaf_path) - 15 - length(leaf_key)) AS model
    FROM ${read.table}
    ARRAY JOIN arrayFilter(x -> startsWith(x, ${prefix}), json_paths) AS leaf_path,
               arrayFilter((y, x) -> startsWith(x, ${prefix}), json_values, json_paths) AS leaf_value
    WHERE ${read.where}
  )
  WHERE k > 0
  GROUP BY id, model
)
ARRAY JOIN [0, 1] AS role
WHERE (role = 0 AND wanted = 1) OR (role = 1 AND isNotNull(parent))
GROUP BY id, model
HAVING countIf(role = 0) > 0 AND (${OWN_FIGURES.map((f) => `${f} != 0`).join(" OR ")})`;
}
