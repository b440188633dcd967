import type { CallField } from "../calls/fields.js";
import { InvalidFieldError } from "../calls/fields.js";
import type { ParamBuilder } from "../sql.js";
import { currentPricesSql } from "./costsQuery.js";

/**
 * Cost fields of calls for filters and sorts (`$getField`, `sort_by`), computed in SQL over
 * the FINAL `calls` row and the price table, with the rules of pricing.ts:
 *
 * - `summary.weave.costs_total` (number, never NULL): the sum, over the models of the
 *   call's own `summary.usage` that have a price at its started_at, of
 *   prompt_tokens × prompt_token_cost + completion_tokens × completion_token_cost; 0 when
 *   no model is priced. It equals the sum of the `*_total_cost` figures that
 *   `include_costs` shows in `summary.weave.costs` (up to float rounding of the sum).
 * - `summary.weave.costs.<model>.<figure>` with figure one of prompt_tokens_total_cost,
 *   completion_tokens_total_cost, prompt_token_cost, completion_token_cost (number): that
 *   figure of `summary.weave.costs[<model>]`; NULL when the call has no usage for the
 *   model or the model has no price (so it sorts last and matches no comparison).
 *   `<model>` may contain dots: the figure is the last segment.
 *
 * Usage is read from the flattened leaves `summary.usage.<model>.<key>`: a leaf belongs to
 * the model between `summary.usage.` and its last segment. (A model's usage nested one
 * level deeper, `summary.usage.<model>.<x>.prompt_tokens`, would be read as model
 * `<model>.<x>`; clients do not write usage that way.)
 *
 * Price lookup: one scalar subquery builds the price table grouped by (project, model):
 * the keys `'<project> <model>'` (project ids hold no spaces; defaults are project `''`),
 * and per key the effective dates, prompt and completion prices sorted latest first
 * (effective date, then created_at, then id). A call takes the first entry of its
 * project's key whose date is not after its started_at, else the first of the default key.
 * The lookup per usage leaf is an indexOf over the keys and a scan of that model's dates.
 */

export const COSTS_TOTAL_FIELD = "summary.weave.costs_total";
const PER_MODEL_PREFIX = "summary.weave.costs.";
export const PER_MODEL_FIGURES = ["prompt_tokens_total_cost", "completion_tokens_total_cost", "prompt_token_cost", "completion_token_cost"] as const;
type Figure = (typeof PER_MODEL_FIGURES)[number];
const MAX_MODEL_CHARS = 512;

export function isCostsField(path: string): boolean {
  return path === COSTS_TOTAL_FIELD || path.startsWith(PER_MODEL_PREFIX);
}

const SORTED_PRICES = `SELECT concat(project_id, ' ', llm_id) AS price_key,
        arrayReverseSort((x, k) -> k, groupArray(effective_date), groupArray(sort_key)) AS price_dates,
        arrayReverseSort((x, k) -> k, groupArray(prompt_token_cost), groupArray(sort_key)) AS price_prompt,
        arrayReverseSort((x, k) -> k, groupArray(completion_token_cost), groupArray(sort_key)) AS price_completion
      FROM (SELECT project_id, llm_id, effective_date, prompt_token_cost, completion_token_cost, tuple(effective_date, created_at, id) AS sort_key
            FROM (${currentPricesSql("1")}))
      GROUP BY project_id, llm_id`;

/** One scalar subquery: a tuple of (keys, dates, prompt prices, completion prices). */
const PRICES = `(SELECT groupArray(price_key), groupArray(price_dates), groupArray(price_prompt), groupArray(price_completion) FROM (${SORTED_PRICES}))`;

/**
 * `body`, evaluated with the price tuple bound to `T` and each of `columns` bound to the
 * lambda parameter named in it: `arrayMap((T, a, b) -> body, [PRICES], [colA], [colB])[1]`.
 *
 * Why the wrapper: ClickHouse runs a scalar subquery once per place it appears, so the
 * tuple is written once and read through `T`; and ClickHouse 18.16 cannot resolve a table
 * column named inside a lambda whose array arguments are themselves made by lambdas
 * ("Unknown identifier"), while lambda parameters resolve at any depth, so the columns the
 * body needs come in as parameters too.
 */
export function withPrices(columns: Readonly<Record<string, string>>, body: string): string {
  const names = Object.keys(columns);
  const args = names.map((n) => `[${columns[n]}]`);
  return `arrayElement(arrayMap((T, ${names.join(", ")}) -> ${body}, [${PRICES}], ${args.join(", ")}), 1)`;
}

/** SQL for the price of `model` (SQL String) for a call of `project` started at `at` (µs), inside withPrices. */
export interface PriceLookupSql {
  /** 1 when a project or default price is in force, else 0. */
  readonly found: string;
  /** The prices in force; 0 when none. */
  readonly prompt: string;
  readonly completion: string;
}

export function priceLookupSql(model: string, at: string, project: string): PriceLookupSql {
  const own = `indexOf(T.1, concat(${project}, ' ', ${model}))`;
  const fallback = `indexOf(T.1, concat(' ', ${model}))`;
  const first = (key: string) => `arrayFirstIndex(pd -> pd <= ${at}, arrayElement(T.2, ${key}))`;
  const pick = (slot: number) =>
    `if(${first(own)} > 0, arrayElement(arrayElement(T.${slot}, ${own}), ${first(own)}), arrayElement(arrayElement(T.${slot}, ${fallback}), ${first(fallback)}))`;
  return { found: `(${first(own)} > 0 OR ${first(fallback)} > 0)`, prompt: pick(3), completion: pick(4) };
}

// ---- usage leaves (summary.usage.<model>.<key>) --------------------------------------

const USAGE_PREFIX = "summary.usage.";
/** Kinds of the leaves that are priced: 1 prompt_tokens, 2 input_tokens, 3 completion_tokens, 4 output_tokens. */
const kindSql = (p: string) =>
  `multiIf(endsWith(${p}, '.prompt_tokens'), 1, endsWith(${p}, '.input_tokens'), 2, endsWith(${p}, '.completion_tokens'), 3, endsWith(${p}, '.output_tokens'), 4, 0)`;
/** The model of a priced leaf: between `summary.usage.` (14 bytes) and `.<key>`. */
const modelSql = (p: string) => `substring(${p}, 15, length(${p}) - 15 - arrayElement([13, 12, 17, 13], ${kindSql(p)}))`;
const isPricedLeaf = (p: string) => `(startsWith(${p}, '${USAGE_PREFIX}') AND ${kindSql(p)} > 0)`;
const LEAF_PATHS = `arrayFilter(lp -> ${isPricedLeaf("lp")}, jp)`;
const LEAF_VALUES = `arrayFilter((vv, vp) -> ${isPricedLeaf("vp")}, jv, jp)`;
/** Models whose prompt_tokens (completion_tokens) leaf is a number: their input_tokens (output_tokens) do not count. */
const modelsWithNumeric = (key: string, bytes: number) =>
  `arrayMap(np -> substring(np, 15, length(np) - ${15 + bytes}), arrayFilter((fp, fv) -> endsWith(fp, '.${key}') AND isNotNull(toFloat64OrNull(fv)), ${LEAF_PATHS}, ${LEAF_VALUES}))`;

const ROW = { t: "started_at", pr: "project_id", jp: "json_paths", jv: "json_values" } as const;

function costsTotalSql(): string {
  const lookup = priceLookupSql(modelSql("p"), "t", "pr");
  const tokens =
    `multiIf(${kindSql("p")} = 2 AND has(${modelsWithNumeric("prompt_tokens", 13)}, ${modelSql("p")}), 0, ` +
    `${kindSql("p")} = 4 AND has(${modelsWithNumeric("completion_tokens", 17)}, ${modelSql("p")}), 0, toFloat64OrZero(v))`;
  const body = `arraySum(arrayMap((p, v) -> ${tokens} * if(${kindSql("p")} <= 2, ${lookup.prompt}, ${lookup.completion}), ${LEAF_PATHS}, ${LEAF_VALUES}))`;
  return withPrices(ROW, body);
}

function perModelSql(model: string, figure: Figure, pb: ParamBuilder): string {
  const leaf = (key: string) => `toFloat64OrNull(arrayElement(jv, indexOf(jp, ${pb.str(`${USAGE_PREFIX}${model}.${key}`)})))`;
  const prefix = pb.str(`${USAGE_PREFIX}${model}.`);
  const lookup = priceLookupSql(pb.str(model), "t", "pr");
  const present = `(arrayExists(ep -> startsWith(ep, ${prefix}), jp) AND ${lookup.found})`;
  let value: string;
  switch (figure) {
    case "prompt_tokens_total_cost":
      value = `coalesce(${leaf("prompt_tokens")}, ${leaf("input_tokens")}, 0) * ${lookup.prompt}`;
      break;
    case "completion_tokens_total_cost":
      value = `coalesce(${leaf("completion_tokens")}, ${leaf("output_tokens")}, 0) * ${lookup.completion}`;
      break;
    case "prompt_token_cost":
      value = lookup.prompt;
      break;
    case "completion_token_cost":
      value = lookup.completion;
      break;
  }
  return withPrices(ROW, `if(${present}, ${value}, NULL)`);
}

/** Resolves a `summary.weave.costs...` path; called from resolveCallField. */
export function resolveCostsField(path: string, pb: ParamBuilder): CallField {
  if (path === COSTS_TOTAL_FIELD) return { sql: costsTotalSql(), kind: "number", nullable: false };
  const rest = path.slice(PER_MODEL_PREFIX.length);
  const dot = rest.lastIndexOf(".");
  const model = dot > 0 ? rest.slice(0, dot) : "";
  const figure = rest.slice(dot + 1);
  if (!model || !(PER_MODEL_FIGURES as readonly string[]).includes(figure)) {
    throw new InvalidFieldError(
      `unknown cost field: ${path} (known: ${COSTS_TOTAL_FIELD}, ${PER_MODEL_PREFIX}<model>.{${PER_MODEL_FIGURES.join(",")}})`,
    );
  }
  if (model.length > MAX_MODEL_CHARS || /[\u0000-\u001f]/.test(model)) throw new InvalidFieldError(`invalid model name in ${path}`);
  return { sql: perModelSql(model, figure as Figure, pb), kind: "number", nullable: true };
}
