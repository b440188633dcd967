import type { EvalResultsFilter, EvalResultsQueryRes, EvalResultsSortBy } from "../../contract/evalResults.js";
import { bytesDigest, objectDigest } from "../../digests.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../../json.js";
import { fromPlainJson } from "../../losslessJson.js";
import { evaluateExpr, fieldOf } from "./trialExpr.js";

/**
 * How eval_results groups trials (facts from the Weave server's eval_results helpers, extended
 * to what the Weave TS SDK writes):
 * - a trial is a child of an evaluation's root whose op is `Evaluation.predict_and_score` (Python
 *   SDK, EvaluationLogger, /v2/) or `Evaluation.predictAndScore` (TS SDK `Evaluation`);
 * - its row is `inputs.example`: a dataset row ref (`.../attr/rows/id/<row digest>`) gives that
 *   digest; an inline example the digest of its JSON (`json.dumps(sort_keys=True)`);
 * - its model output is `output.output` (`output.model_output` in the TS SDK), its scores
 *   `output.scores`;
 * - its model call is the child that is not a score (`attributes.weave.score`, or the TS
 *   SDK's `_weave_eval_meta.score`) and whose op is the trial's `inputs.model` (a model that is
 *   an op), else whose op name holds `predict`, `invoke`, `infer` or `forward` (the model
 *   methods Weave's SDKs call; Weave's server compares `inputs.self` with the model instead,
 *   which costs a read of every child's inputs); latency is that call's duration, else `output.model_latency` (a number or `{mean}`); tokens the sum of
 *   `total_tokens` over its `summary.usage`;
 * - each score key names the scorer call whose op name is the key (or `<key>.score`), else
 *   one whose op name holds the key.
 * Rows sort by `row_digest` unless `sort_by` says otherwise.
 */

export const PREDICT_AND_SCORE_OPS = new Set(["Evaluation.predict_and_score", "Evaluation.predictAndScore"]);
const ROW_REF_MARK = "/attr/rows/id/";

export type Trial = EvalResultsQueryRes["rows"][number]["evaluations"][number]["trials"][number];
export type ResultRow = EvalResultsQueryRes["rows"][number];
type Summary = NonNullable<EvalResultsQueryRes["summary"]>;
type ScorerStats = Summary["evaluations"][number]["scorer_stats"][number];

/** A trial call or one of its children, parsed. */
export interface TrialCall {
  readonly id: string;
  readonly parentId: string;
  /** 1: a child of an evaluation's root; 2: a grandchild. */
  readonly level: number;
  readonly opName: string;
  readonly startedAt: number;
  readonly endedAt: number | null;
  readonly attributes: JsonObject;
  readonly inputs: JsonObject;
  readonly output: JsonValue;
  readonly summary: JsonObject | null;
}

/** `weave:///e/p/op/<name>:<digest>` → `<name>`; a plain op name stays. */
export function opBaseName(opName: string): string {
  const match = /^weave:\/\/\/[^/]+\/[^/]+\/op\/([^:]+):/.exec(opName);
  return match?.[1] ? decodeURIComponent(match[1]) : opName;
}

export function rowDigestOf(example: JsonValue | undefined): string {
  if (typeof example === "string") {
    const at = example.lastIndexOf(ROW_REF_MARK);
    if (at >= 0) return decodeURIComponent(example.slice(at + ROW_REF_MARK.length));
    return bytesDigest(Buffer.from(example, "utf8"));
  }
  return objectDigest(fromPlainJson(example ?? null));
}

/** The dataset row digest a ref names, or null when the example is not a row ref. */
export function rowRefDigest(example: unknown): string | null {
  if (typeof example !== "string" || !example.startsWith("weave:///")) return null;
  const at = example.lastIndexOf(ROW_REF_MARK);
  return at >= 0 ? decodeURIComponent(example.slice(at + ROW_REF_MARK.length)) : null;
}

const isScoreCall = (c: TrialCall): boolean => {
  const weave = isJsonObject(c.attributes.weave) ? c.attributes.weave : {};
  const meta = isJsonObject(c.attributes._weave_eval_meta) ? c.attributes._weave_eval_meta : {};
  return weave.score === "true" || meta.score === true;
};

const MODEL_METHOD = /predict|invoke|infer|forward/;

function modelCallOf(children: readonly TrialCall[], modelRef: JsonValue | undefined): TrialCall | null {
  const candidates = children.filter((c) => !isScoreCall(c));
  return (
    candidates.find((c) => c.opName === modelRef) ??
    candidates.find((c) => MODEL_METHOD.test(opBaseName(c.opName).toLowerCase())) ??
    null
  );
}

function scorerCallIds(scores: JsonObject, children: readonly TrialCall[], model: TrialCall | null): Record<string, string> {
  const scorers = children.filter((c) => c !== model).map((c) => ({ id: c.id, name: opBaseName(c.opName).toLowerCase() }));
  const out: Record<string, string> = {};
  for (const key of Object.keys(scores)) {
    const k = key.toLowerCase();
    const match = scorers.find((s) => s.name === k || s.name === `${k}.score`) ?? scorers.find((s) => s.name.includes(k) || k.includes(s.name));
    if (match) out[key] = match.id;
  }
  return out;
}

function totalTokens(summary: JsonObject | null): number | null {
  if (!summary || !isJsonObject(summary.usage)) return null;
  let total = 0;
  let found = false;
  for (const usage of Object.values(summary.usage)) {
    if (isJsonObject(usage) && typeof usage.total_tokens === "number") {
      total += usage.total_tokens;
      found = true;
    }
  }
  return found ? total : null;
}

function latencyOf(model: TrialCall | null, output: JsonObject): number | null {
  if (model && model.endedAt !== null) return (model.endedAt - model.startedAt) / 1e6;
  const l = output.model_latency;
  if (typeof l === "number") return l;
  if (isJsonObject(l) && typeof l.mean === "number") return l.mean;
  return null;
}

/** One trial from its predict_and_score call and that call's children; `cost` prices the model call. */
export function trialOf(pas: TrialCall, children: readonly TrialCall[], cost: (model: TrialCall) => number | null): Trial & { modelCall: TrialCall | null } {
  const output = isJsonObject(pas.output) ? pas.output : {};
  const scores = isJsonObject(output.scores) ? output.scores : {};
  const model = modelCallOf(children, pas.inputs.model);
  return {
    predict_and_score_call_id: pas.id,
    predict_call_id: model?.id ?? null,
    model_output: "output" in output ? output.output : (output.model_output ?? null),
    scores,
    model_latency_seconds: latencyOf(model, output),
    total_tokens: totalTokens(model?.summary ?? null),
    total_cost: model ? cost(model) : null,
    scorer_call_ids: scorerCallIds(scores, children, model),
    modelCall: model,
  };
}

/** Rows grouped by row digest, evaluations in the order asked, trials in start order. */
export function groupRows(
  rootIds: readonly string[],
  trials: readonly { evaluationId: string; example: JsonValue | undefined; trial: Trial }[],
  includeRaw: boolean,
): ResultRow[] {
  const rows = new Map<string, { raw: JsonValue | undefined; byEval: Map<string, Trial[]> }>();
  for (const { evaluationId, example, trial } of trials) {
    const digest = rowDigestOf(example);
    const row = rows.get(digest) ?? { raw: example, byEval: new Map<string, Trial[]>() };
    rows.set(digest, row);
    const list = row.byEval.get(evaluationId) ?? [];
    list.push(trial);
    row.byEval.set(evaluationId, list);
  }
  return [...rows].map(([digest, row]) => ({
    row_digest: digest,
    ...(includeRaw ? { raw_data_row: row.raw ?? null } : {}),
    evaluations: rootIds.filter((id) => row.byEval.has(id)).map((id) => ({ evaluation_call_id: id, trials: row.byEval.get(id)! })),
  }));
}

export function intersect(rows: readonly ResultRow[], rootIds: readonly string[], required: boolean): ResultRow[] {
  if (!required || rootIds.length < 2) return [...rows];
  return rows.filter((r) => rootIds.every((id) => r.evaluations.some((e) => e.evaluation_call_id === id)));
}

const trialsOf = (row: ResultRow, evaluationId: string | null | undefined): Trial[] =>
  row.evaluations.filter((e) => !evaluationId || e.evaluation_call_id === evaluationId).flatMap((e) => e.trials);

/** A row passes a filter when any of its trials (of the named evaluation) matches its query. */
export function applyFilters(rows: readonly ResultRow[], filters: readonly EvalResultsFilter[] | null | undefined, op: "and" | "or"): ResultRow[] {
  if (!filters || filters.length === 0) return [...rows];
  const passes = (row: ResultRow, f: EvalResultsFilter) => trialsOf(row, f.evaluation_call_id).some((t) => evaluateExpr(f.query.$expr, (path) => fieldOf(row.row_digest, t, path)));
  return rows.filter((row) => (op === "and" ? filters.every((f) => passes(row, f)) : filters.some((f) => passes(row, f))));
}

type SortValue = number | string | null;

/** A row's value for one sort term: the mean of the trials' numbers (booleans as 0/1), else the first text. */
function sortValue(row: ResultRow, term: EvalResultsSortBy): SortValue {
  if (term.field === "row_digest") return row.row_digest;
  const values = trialsOf(row, term.evaluation_call_id).map((t) => fieldOf(row.row_digest, t, term.field));
  const numbers = values.flatMap((v) => (typeof v === "number" ? [v] : typeof v === "boolean" ? [v ? 1 : 0] : []));
  if (numbers.length > 0) return numbers.reduce((a, b) => a + b, 0) / numbers.length;
  const text = values.find((v): v is string => typeof v === "string");
  return text ?? null;
}

function compareValues(a: SortValue, b: SortValue): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorts by the terms (absent values last in either direction), then by row digest. */
export function sortRows(rows: ResultRow[], terms: readonly EvalResultsSortBy[] | null | undefined): ResultRow[] {
  const list = terms ?? [];
  const keyed = rows.map((row) => ({ row, keys: list.map((t) => sortValue(row, t)) }));
  keyed.sort((x, y) => {
    for (let i = 0; i < list.length; i++) {
      const [a, b] = [x.keys[i]!, y.keys[i]!];
      if (a === null || b === null) {
        if (a !== b) return a === null ? 1 : -1;
        continue;
      }
      const c = compareValues(a, b) * (list[i]!.direction === "desc" ? -1 : 1);
      if (c !== 0) return c;
    }
    return x.row.row_digest < y.row.row_digest ? -1 : x.row.row_digest > y.row.row_digest ? 1 : 0;
  });
  return keyed.map((k) => k.row);
}

export interface RootMeta {
  readonly evaluation_ref: string | null;
  readonly model_ref: string | null;
  readonly display_name: string | null;
  readonly trace_id: string;
  readonly started_at: string;
}

/**
 * Per evaluation: trial count and one entry per scorer leaf (`path` inside a dict output):
 * booleans count toward the pass rate (`binary`), numbers toward the mean (`continuous`).
 */
export function summarize(rows: readonly ResultRow[], rootIds: readonly string[], meta: ReadonlyMap<string, RootMeta>): Summary {
  const evaluations = rootIds.flatMap((id) => {
    const trials = rows.flatMap((r) => r.evaluations.filter((e) => e.evaluation_call_id === id).flatMap((e) => e.trials));
    if (trials.length === 0) return [];
    const stats = new Map<string, ScorerStats>();
    for (const trial of trials) for (const [key, value] of Object.entries(trial.scores)) addLeaves(stats, key, [], value);
    for (const s of stats.values()) {
      if (s.pass_known_count > 0) s.pass_rate = s.pass_true_count / s.pass_known_count;
      if (s.numeric_count > 0) s.numeric_mean = (s.numeric_mean ?? 0) / s.numeric_count;
    }
    const m = meta.get(id);
    return [{
      evaluation_call_id: id,
      trial_count: trials.length,
      evaluation_ref: m?.evaluation_ref ?? null,
      model_ref: m?.model_ref ?? null,
      display_name: m?.display_name ?? null,
      trace_id: m?.trace_id ?? null,
      started_at: m?.started_at ?? null,
      scorer_stats: [...stats.values()],
    }];
  });
  return { row_count: rows.length, evaluations };
}

/** Adds a score's leaves; `numeric_mean` holds the running sum until summarize divides it. */
function addLeaves(stats: Map<string, ScorerStats>, key: string, path: string[], value: unknown): void {
  if (isJsonObject(value)) {
    for (const [k, v] of Object.entries(value)) addLeaves(stats, key, [...path, k], v);
    return;
  }
  const isBool = typeof value === "boolean";
  if (!isBool && (typeof value !== "number" || !Number.isFinite(value))) return;
  const p = path.length > 0 ? path.join(".") : null;
  const id = `${key}\u0000${p ?? ""}`;
  const s = stats.get(id) ?? {
    scorer_key: key, path: p, value_type: isBool ? "binary" : "continuous",
    trial_count: 0, numeric_count: 0, numeric_mean: null, pass_true_count: 0, pass_known_count: 0, pass_rate: null,
  };
  stats.set(id, s);
  s.trial_count += 1;
  if (isBool) {
    s.pass_known_count += 1;
    if (value) s.pass_true_count += 1;
  } else {
    s.numeric_count += 1;
    s.numeric_mean = (s.numeric_mean ?? 0) + (value as number);
  }
}
