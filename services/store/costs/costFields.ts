import type { Field, FieldSet } from "../expr/fields.js";
import { tupleElementSql, type ParamBuilder } from "../sql.js";
import { PRICES_TABLE } from "./schema.js";
import { InvalidFieldError } from "../../errors.js";
import { countSql } from "./counts.js";

/**
 * The cost fields of calls for filters and sorts (`$getField`, `sort_by`), one field set of
 * the calls query, computed in SQL over the FINAL `calls` row and the price table, with the
 * rules of pricing.ts:
 *
 * - `summary.weave.costs_total` (number, never NULL): the sum, over the models of the
 *   call's own `summary.usage` that have a price at its started_at, of
 *   prompt_tokens × prompt_token_cost + completion_tokens × completion_token_cost; 0 when
 *   no model is priced. It equals the sum of the `*_total_cost` figures that
 *   `include_costs` shows in `summary.weave.costs` (up to float rounding of the sum).
 * - `summary.weave.costs.<model>.<figure>` with figure one of prompt_tokens_total_cost,
 *   completion_tokens_total_cost, prompt_token_cost, completion_token_cost, requests,
 *   prompt_tokens, completion_tokens, total_tokens (number): that figure of
 *   `summary.weave.costs[<model>]` (the counts normalised as pricing.ts says); NULL when the
 *   call has no usage for the model or the model has no price (so it sorts last and matches
 *   no comparison). The price's other keys (units, dates, provider, level) are not fields.
 *   `<model>` may contain dots: the figure is the last segment.
 *
 * Usage is read from the flattened leaves `summary.usage.<model>.<key>`, each count as
 * counts.ts reads it (as pricing.ts does for the JSON): a leaf belongs to
 * the model between `summary.usage.` and its last segment. (A model's usage nested one
 * level deeper, `summary.usage.<model>.<x>.prompt_tokens`, would be read as model
 * `<model>.<x>`; clients do not write usage that way.)
 *
 * Price lookup: scalar subqueries build the price table grouped by (project, model): the
 * keys `'<project> <model>'` (project ids hold no spaces; defaults are project `''`), and
 * per key the effective dates, prompt and completion prices sorted latest first (effective
 * date, then created_at, then id). A call takes the first entry of its project's key whose
 * date is not after its started_at, else the first of the default key: an indexOf over the
 * keys and a scan of that model's few dates.
 *
 * Two ClickHouse 18.16 constraints shape the SQL:
 * - a scalar subquery runs once per place it is written (a few ms each), so the keys and
 *   the entries are each written once and per-row intermediate results are bound to lambda
 *   parameters (`arrayElement(arrayMap(x -> body, [value]), 1)` is `let x = value in
 *   body`); the subqueries' results stay constants, never copied per row;
 * - a table column named inside a lambda whose array arguments are themselves made by
 *   lambdas is an "Unknown identifier", while lambda parameters resolve at any depth: so
 *   the columns (started_at, project_id, json_paths, json_values) come in as parameters.
 */

export const COSTS_TOTAL_FIELD = "summary.weave.costs_total";
const PER_MODEL_PREFIX = "summary.weave.costs.";
export const PER_MODEL_FIGURES = [
  "prompt_tokens_total_cost", "completion_tokens_total_cost", "prompt_token_cost", "completion_token_cost",
  "requests", "prompt_tokens", "completion_tokens", "total_tokens",
] as const;
type Figure = (typeof PER_MODEL_FIGURES)[number];
const PER_MODEL_PATTERN = `${PER_MODEL_PREFIX}<model>.{${PER_MODEL_FIGURES.join(",")}}`;
const MAX_MODEL_CHARS = 512;

/**
 * The price table for lookups, one row per (project, model): its key, and its effective
 * dates and prices sorted latest first. Per price id the latest version wins (argMax) and
 * tombstoned ids are left out, as in currentPricesSql, reading only the columns a lookup needs.
 */
const LOOKUP_TABLE = `SELECT concat(project_id, ' ', llm_id) AS price_key,
        arrayReverseSort((x, k) -> k, groupArray(effective_date), groupArray(sort_key)) AS price_dates,
        arrayReverseSort((x, k) -> k, groupArray(prompt_cost), groupArray(sort_key)) AS price_prompt,
        arrayReverseSort((x, k) -> k, groupArray(completion_cost), groupArray(sort_key)) AS price_completion
      FROM (SELECT project_id, llm_id, effective_date, tuple(effective_date, argMax(created_at, version), id) AS sort_key,
                   argMax(prompt_token_cost, version) AS prompt_cost, argMax(completion_token_cost, version) AS completion_cost
            FROM ${PRICES_TABLE}
            GROUP BY project_id, llm_id, effective_date, id
            HAVING argMax(deleted, version) = 0)
      GROUP BY project_id, llm_id
      ORDER BY price_key`;
const KEYS = `(SELECT groupArray(price_key) FROM (${LOOKUP_TABLE}))`;
/** Each entry carries its key, checked on use: a lookup never trusts two subqueries to agree on order. */
const ENTRIES = `(SELECT groupArray(tuple(price_key, price_dates, price_prompt, price_completion)) FROM (${LOOKUP_TABLE}))`;

/** `let names = values in body`, for per-row values (a constant passed this way would be copied per row). */
const bind = (names: readonly string[], values: readonly string[], body: string) =>
  `arrayElement(arrayMap((${names.join(", ")}) -> ${body}, ${values.map((v) => `[${v}]`).join(", ")}), 1)`;

/**
 * The price of `model` for a call of `project` started at `at` (SQL expressions: columns,
 * lambda parameters or bound values): a tuple (found UInt8, prompt Float64, completion
 * Float64), with 0 prices when none is found. Two scalar subqueries (KEYS, ENTRIES), each
 * written once.
 */
export function priceLookupSql(model: string, at: string, project: string): string {
  // kx: [the project's key, the default key]; ex: their entries; jx: the entry in force under each (0: none).
  const keys = `[concat(lpr, ' ', lm), concat(' ', lm)]`;
  const entries = `arrayMap(pk -> arrayElement(${ENTRIES}, indexOf(${KEYS}, pk)), kx)`;
  const inForce = `arrayMap((pe, pk) -> if(pe.1 = pk, arrayFirstIndex(pd -> pd <= lt, pe.2), 0), ex, kx)`;
  const own = "arrayElement(jx, 1) > 0";
  const price = (slot: number) =>
    `if(${own}, arrayElement(${tupleElementSql("arrayElement(ex, 1)", slot)}, arrayElement(jx, 1)), arrayElement(${tupleElementSql("arrayElement(ex, 2)", slot)}, arrayElement(jx, 2)))`;
  const result = `(${own} OR arrayElement(jx, 2) > 0, ${price(3)}, ${price(4)})`;
  return bind(["lt", "lpr", "lm"], [at, project, model], bind(["kx"], [keys], bind(["ex"], [entries], bind(["jx"], [inForce], result))));
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
  `arrayMap(np -> substring(np, 15, length(np) - ${15 + bytes}), arrayFilter((fp, fv) -> endsWith(fp, '.${key}') AND isNotNull(${countSql("fv")}), ${LEAF_PATHS}, ${LEAF_VALUES}))`;

const ROW_NAMES = ["t", "pr", "jp", "jv"];
const ROW_VALUES = ["started_at", "project_id", "json_paths", "json_values"];

function costsTotalSql(): string {
  const tokens =
    `multiIf(${kindSql("p")} = 2 AND has(pm, ${modelSql("p")}), 0, ` +
    `${kindSql("p")} = 4 AND has(cm, ${modelSql("p")}), 0, ifNull(${countSql("v")}, 0))`;
  const leafCost = bind(["price"], [priceLookupSql(modelSql("p"), "t", "pr")], `${tokens} * if(${kindSql("p")} <= 2, price.2, price.3)`);
  const body = bind(
    ["pm", "cm"],
    [modelsWithNumeric("prompt_tokens", 13), modelsWithNumeric("completion_tokens", 17)],
    `arraySum(arrayMap((p, v) -> ${leafCost}, ${LEAF_PATHS}, ${LEAF_VALUES}))`,
  );
  return bind(ROW_NAMES, ROW_VALUES, body);
}

function perModelSql(model: string, figure: Figure, pb: ParamBuilder): string {
  const leaf = (key: string) => countSql(`arrayElement(json_values, indexOf(json_paths, ${pb.str(`${USAGE_PREFIX}${model}.${key}`)}))`);
  const present = `arrayExists(ep -> startsWith(ep, ${pb.str(`${USAGE_PREFIX}${model}.`)}), json_paths)`;
  const prompt = `coalesce(${leaf("prompt_tokens")}, ${leaf("input_tokens")}, 0)`;
  const completion = `coalesce(${leaf("completion_tokens")}, ${leaf("output_tokens")}, 0)`;
  // Each figure: the count it reads (bound to `tokens`, as pricing.ts normalises usage) and its value.
  const figures: Record<Figure, readonly [tokens: string, value: string]> = {
    prompt_tokens_total_cost: [prompt, "tokens * price.2"],
    completion_tokens_total_cost: [completion, "tokens * price.3"],
    prompt_token_cost: [prompt, "price.2"],
    completion_token_cost: [completion, "price.3"],
    requests: [`coalesce(${leaf("requests")}, 0)`, "tokens"],
    prompt_tokens: [prompt, "tokens"],
    completion_tokens: [completion, "tokens"],
    total_tokens: [`coalesce(${leaf("total_tokens")}, ${prompt} + ${completion})`, "tokens"],
  };
  const [tokens, value] = figures[figure];
  const lookup = priceLookupSql(pb.str(model), "started_at", "project_id");
  return bind(["price", "present", "tokens"], [lookup, present, tokens], `if(present AND price.1, ${value}, NULL)`);
}

/** `summary.weave.costs_total` and `summary.weave.costs.<model>.<figure>`. */
export const CALL_COST_FIELDS: FieldSet = {
  name: "call costs",
  known: [COSTS_TOTAL_FIELD, PER_MODEL_PATTERN],
  resolve(path, pb) {
    if (path === COSTS_TOTAL_FIELD) return { sql: costsTotalSql(), kind: "number", nullable: false };
    return path.startsWith(PER_MODEL_PREFIX) ? perModelField(path, pb) : undefined;
  },
};

function perModelField(path: string, pb: ParamBuilder): Field {
  const rest = path.slice(PER_MODEL_PREFIX.length);
  const dot = rest.lastIndexOf(".");
  const model = dot > 0 ? rest.slice(0, dot) : "";
  const figure = rest.slice(dot + 1);
  if (!model || !(PER_MODEL_FIGURES as readonly string[]).includes(figure)) {
    throw new InvalidFieldError(`unknown cost field: ${path} (known: ${COSTS_TOTAL_FIELD}, ${PER_MODEL_PATTERN})`);
  }
  if (model.length > MAX_MODEL_CHARS || /[\u0000-\u001f]/.test(model)) throw new InvalidFieldError(`invalid model name in ${path}`);
  return { sql: perModelSql(model, figure as Figure, pb), kind: "number", nullable: true };
}
