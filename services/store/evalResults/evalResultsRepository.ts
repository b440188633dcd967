import type { EvalResultsQueryBody, EvalResultsQueryRes } from "../../contract/evalResults.js";
import { type JsonObject, type JsonValue } from "../../json.js";
import { microsToIso } from "../../times.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { withCopiesAsNull } from "../calls/ioCopies.js";
import { CostsRepository } from "../costs/costsRepository.js";
import { costsOfUsage, usageOfSummary, type PriceBook } from "../costs/pricing.js";
import { evaluationRootsQuery, rowValuesQuery, trialCallsQuery, trialChildrenQuery, type RootRow, type TrialCallRow } from "./evalResultsQuery.js";
import {
  applyFilters, groupRows, intersect, opBaseName, PREDICT_AND_SCORE_OPS, rowRefDigest, sortRows, summarize, trialOf,
  type ResultRow, type RootMeta, type Trial, type TrialCall,
} from "./evalResultsRows.js";
import { checkExprFields, checkField } from "./trialExpr.js";
import type { ProjectRetention } from "../projects/retention.js";

const parse = <T extends JsonValue>(text: string | null, fallback: T): T => (text === null || text === "" ? fallback : (JSON.parse(text) as T));

function toTrialCall(row: TrialCallRow): TrialCall {
  return {
    id: row.id,
    parentId: row.parent_id,
    level: Number(row.level),
    opName: row.op_name,
    startedAt: Number(row.started_at),
    endedAt: row.ended_at === null ? null : Number(row.ended_at),
    // Read without the inputs and output their marks stand for, which these rows never need (evalResultsRows.ts).
    attributes: parse<JsonObject>(withCopiesAsNull(row.attributes), {}),
    inputs: parse<JsonObject>(row.inputs, {}),
    output: parse<JsonValue>(row.output, null),
    summary: parse<JsonObject | null>(row.summary, null),
  };
}

/** `POST /v2/{entity}/{project}/eval_results/query`: SQL in evalResultsQuery.ts, grouping in evalResultsRows.ts. */
export class EvalResultsRepository {
  private readonly costs: CostsRepository;

  constructor(
    private readonly store: ClickHouseStore,
    private readonly retention: ProjectRetention,
  ) {
    this.costs = new CostsRepository(store);
  }

  async query(projectId: string, req: EvalResultsQueryBody): Promise<EvalResultsQueryRes> {
    (req.sort_by ?? []).forEach((t, i) => checkField(t.field, ["body", "sort_by", i, "field"]));
    (req.filters ?? []).forEach((f, i) => checkExprFields(f.query.$expr, ["body", "filters", i, "query"]));
    const rootIds = [...new Set([...(req.evaluation_call_ids ?? []), ...(req.evaluation_run_ids ?? [])])];
    const empty = { rows: [], total_rows: 0, ...(req.include_summary ? { summary: { row_count: 0, evaluations: [] } } : {}), warnings: [] as string[] };
    if (rootIds.length === 0) return empty;

    const roots = await this.store.rows<RootRow>("eval_results_roots", evaluationRootsQuery(projectId, rootIds, await this.retention.cutoff(projectId)));
    const found = new Set(roots.map((r) => r.id));
    const warnings = rootIds.filter((id) => !found.has(id)).map((id) => `evaluation call ${id} not found`);
    if (roots.length === 0) return { ...empty, warnings };

    const places = roots.map((r) => ({ id: r.id, trace_id: r.trace_id, started_at: Number(r.started_at) }));
    const [first, second] = await Promise.all([
      this.store.rows<TrialCallRow>("eval_results_trials", trialCallsQuery(projectId, places)),
      this.store.rows<TrialCallRow>("eval_results_trial_children", trialChildrenQuery(projectId, places)),
    ]);
    const calls = [...first, ...second].map(toTrialCall);
    const trials = await this.trials(projectId, calls, req.include_costs);
    const withRaw = req.include_rows && req.include_raw_data_rows;
    let all = groupRows(rootIds, trials, withRaw);
    if (withRaw && req.resolve_row_refs) warnings.push(...(await this.resolveRowRefs(projectId, all)));

    all = sortRows(applyFilters(intersect(all, rootIds, req.require_intersection), req.filters, req.filter_logic_operator), req.sort_by);
    const page = req.limit === null || req.limit === undefined ? all.slice(req.offset) : all.slice(req.offset, req.offset + req.limit);
    return {
      rows: req.include_rows ? page : [],
      total_rows: req.include_rows ? all.length : 0,
      ...(req.include_summary ? { summary: summarize(all, rootIds, rootMeta(roots)) } : {}),
      warnings,
    };
  }

  /** Trials in start order, each with its evaluation and example. */
  private async trials(projectId: string, calls: readonly TrialCall[], includeCosts: boolean) {
    const children = new Map<string, TrialCall[]>();
    for (const c of calls) {
      const list = children.get(c.parentId) ?? [];
      list.push(c);
      children.set(c.parentId, list);
    }
    const pasCalls = calls.filter((c) => c.level === 1 && PREDICT_AND_SCORE_OPS.has(opBaseName(c.opName))).sort((a, b) => a.startedAt - b.startedAt || (a.id < b.id ? -1 : 1));
    const book = includeCosts ? await this.priceBook(projectId, pasCalls.flatMap((p) => children.get(p.id) ?? [])) : null;
    const cost = (model: TrialCall): number | null => (book ? totalCost(model, book) : null);
    return pasCalls.map((pas) => {
      const { modelCall: _model, ...trial } = trialOf(pas, children.get(pas.id) ?? [], cost);
      return { evaluationId: pas.parentId, example: pas.inputs.example, trial: trial as Trial };
    });
  }

  private async priceBook(projectId: string, calls: readonly TrialCall[]): Promise<PriceBook> {
    const models = new Set(calls.flatMap((c) => [...usageOfSummary(c.summary).keys()]));
    return this.costs.priceBook(projectId, [...models]);
  }

  /** Replaces dataset row refs in `raw_data_row` by the rows' values. */
  private async resolveRowRefs(projectId: string, rows: ResultRow[]): Promise<string[]> {
    const digests = [...new Set(rows.flatMap((r) => rowRefDigest(r.raw_data_row) ?? []))];
    if (digests.length === 0) return [];
    const found = await this.store.rows<{ digest: string; val: string }>("eval_results_row_values", rowValuesQuery(projectId, digests));
    const values = new Map(found.map((r) => [r.digest, JSON.parse(r.val) as JsonValue]));
    for (const row of rows) {
      const digest = rowRefDigest(row.raw_data_row);
      if (digest !== null && values.has(digest)) row.raw_data_row = values.get(digest);
    }
    const missing = digests.filter((d) => !values.has(d)).length;
    return missing > 0 ? [`${missing} dataset row refs could not be resolved; their raw_data_row stays a ref`] : [];
  }
}

function totalCost(call: TrialCall, book: PriceBook): number | null {
  const priced = Object.values(costsOfUsage(usageOfSummary(call.summary), call.startedAt, book));
  return priced.length === 0 ? null : priced.reduce((sum, c) => sum + c.prompt_tokens_total_cost + c.completion_tokens_total_cost, 0);
}

function rootMeta(roots: readonly RootRow[]): Map<string, RootMeta> {
  return new Map(roots.map((r) => {
    const inputs = parse<JsonObject>(r.inputs, {});
    const ref = (v: JsonValue | undefined) => (typeof v === "string" ? v : null);
    return [r.id, { evaluation_ref: ref(inputs.self), model_ref: ref(inputs.model), display_name: r.display_name, trace_id: r.trace_id, started_at: microsToIso(Number(r.started_at)) }];
  }));
}
