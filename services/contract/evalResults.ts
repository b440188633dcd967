import { V2ProjectParams } from "./common.js";
import { operation, PATH_PROJECT } from "./operation.js";
import { QuerySchema } from "./queryExpr.js";
import { z } from "./zod.js";

/**
 * `POST /v2/{entity}/{project}/eval_results/query` (spec: tracing-api-evaluation.md): the
 * trials of one or more evaluations grouped by dataset row. How rows, trials and the summary
 * are made is written in services/store/evalResults/evalResultsRows.ts.
 */

const TAG = "V2 evaluation runs";
const MAX_EVALUATIONS = 100;

/**
 * Trial fields that `sort_by` and `filters[].query` may name: `row_digest`, `model_latency_seconds`,
 * `total_tokens`, `total_cost`, `scores.<scorer>[.<path>]`, `model_output[.<path>]`.
 */
export const EvalResultsSortBy = z
  .object({
    field: z.string().min(1).max(512),
    direction: z.enum(["asc", "desc"]).default("asc"),
    evaluation_call_id: z.string().min(1).nullish().openapi({ description: "Sort by this evaluation's trials only (the mean over them)" }),
  })
  .openapi("EvalResultsSortBy");

export const EvalResultsFilter = z
  .object({
    evaluation_call_id: z.string().min(1).nullish().openapi({ description: "Only this evaluation's trials must match" }),
    query: QuerySchema,
  })
  .openapi("EvalResultsFilter");

export const EvalResultsQueryBody = z
  .object({
    evaluation_call_ids: z.array(z.string().min(1)).max(MAX_EVALUATIONS).nullish(),
    evaluation_run_ids: z.array(z.string().min(1)).max(MAX_EVALUATIONS).nullish(),
    require_intersection: z.boolean().default(false),
    include_raw_data_rows: z.boolean().default(false),
    resolve_row_refs: z.boolean().default(false),
    include_rows: z.boolean().default(true),
    include_summary: z.boolean().default(false),
    include_costs: z.boolean().default(false),
    sort_by: z.array(EvalResultsSortBy).max(5).nullish(),
    filters: z.array(EvalResultsFilter).max(20).nullish(),
    filter_logic_operator: z.enum(["and", "or"]).default("or"),
    limit: z.number().int().min(0).nullish(),
    offset: z.number().int().min(0).default(0),
  })
  .openapi("EvalResultsQueryBody");

const Trial = z.object({
  predict_and_score_call_id: z.string(),
  predict_call_id: z.string().nullish(),
  model_output: z.unknown(),
  scores: z.record(z.string(), z.unknown()),
  model_latency_seconds: z.number().nullish(),
  total_tokens: z.number().nullish(),
  total_cost: z.number().nullish(),
  scorer_call_ids: z.record(z.string(), z.string()),
});

const ScorerStats = z.object({
  scorer_key: z.string(),
  path: z.string().nullish(),
  value_type: z.enum(["binary", "continuous"]).nullish(),
  trial_count: z.number().int(),
  numeric_count: z.number().int(),
  numeric_mean: z.number().nullish(),
  pass_true_count: z.number().int(),
  pass_known_count: z.number().int(),
  pass_rate: z.number().nullish(),
});

export const EvalResultsQueryRes = z
  .object({
    rows: z.array(
      z.object({
        row_digest: z.string(),
        raw_data_row: z.unknown().optional(),
        evaluations: z.array(z.object({ evaluation_call_id: z.string(), trials: z.array(Trial) })),
      }),
    ),
    total_rows: z.number().int(),
    summary: z
      .object({
        row_count: z.number().int(),
        evaluations: z.array(
          z.object({
            evaluation_call_id: z.string(),
            trial_count: z.number().int(),
            evaluation_ref: z.string().nullish(),
            model_ref: z.string().nullish(),
            display_name: z.string().nullish(),
            trace_id: z.string().nullish(),
            started_at: z.string().nullish(),
            scorer_stats: z.array(ScorerStats),
          }),
        ),
      })
      .nullish(),
    warnings: z.array(z.string()),
  })
  .openapi("EvalResultsQueryRes");

export const evalResultsQueryOp = operation({
  id: "v2_eval_results_query", method: "post", path: "/v2/{entity}/{project}/eval_results/query", summary: "Evaluation results grouped by dataset row",
  tag: TAG, params: V2ProjectParams, body: EvalResultsQueryBody, role: "viewer", scope: PATH_PROJECT, response: EvalResultsQueryRes,
});

export type EvalResultsQueryBody = z.output<typeof EvalResultsQueryBody>;
export type EvalResultsQueryRes = z.output<typeof EvalResultsQueryRes>;
export type EvalResultsSortBy = z.output<typeof EvalResultsSortBy>;
export type EvalResultsFilter = z.output<typeof EvalResultsFilter>;
