import { Datetime, JsonObject, V2ProjectParams } from "./common.js";
import { operation, PATH_PROJECT } from "./operation.js";
import { ListQuery, QueryList } from "./v2Objects.js";
import { z } from "./zod.js";

/**
 * The call-backed families under `/v2/{entity}/{project}/` (spec: tracing-api-evaluation.md):
 * evaluation_runs, predictions and scores are calls, written through the worker's merge path
 * and readable at once; the shapes of those calls are written in services/store/v2/evalCalls.ts.
 */

const TAG = "V2 evaluation runs";

const Ref = z.string().min(1).openapi({ example: "weave:///acme/agents/object/my-model:3Qx..." });
const CallId = z.string().min(1).max(128);
const IdParams = V2ProjectParams.extend({ id: CallId });
const DeleteRes = z.object({ num_deleted: z.number().int() });
const Success = z.object({ success: z.boolean() });

export const EvaluationRunCreateBody = z
  .object({ evaluation: Ref, model: Ref, source_evaluation_run_id: CallId.nullish() })
  .openapi("V2EvaluationRunCreateBody");
export const EvaluationRunReadRes = z
  .object({
    evaluation_run_id: z.string(),
    evaluation: z.string(),
    model: z.string(),
    status: z.string().nullish(),
    started_at: Datetime.nullish(),
    finished_at: Datetime.nullish(),
    summary: JsonObject.nullish(),
    source_evaluation_run_id: z.string().nullish(),
  })
  .openapi("V2EvaluationRunReadRes");
export const EvaluationRunListQuery = ListQuery.extend({
  evaluations: QueryList.optional(),
  models: QueryList.optional(),
  evaluation_run_ids: QueryList.optional(),
});
export const EvaluationRunFinishBody = z.object({ summary: JsonObject.nullish() }).openapi("V2EvaluationRunFinishBody");

export const PredictionCreateBody = z
  .object({ model: Ref, inputs: JsonObject, output: z.unknown(), evaluation_run_id: CallId.nullish() })
  .openapi("V2PredictionCreateBody");
export const PredictionReadRes = z
  .object({
    prediction_id: z.string(),
    model: z.string(),
    inputs: JsonObject,
    output: z.unknown(),
    evaluation_run_id: z.string().nullish(),
    wb_user_id: z.string().nullish(),
  })
  .openapi("V2PredictionReadRes");

export const ScoreCreateBody = z
  .object({ prediction_id: CallId, scorer: Ref, value: z.number(), evaluation_run_id: CallId.nullish() })
  .openapi("V2ScoreCreateBody");
export const ScoreReadRes = z
  .object({ score_id: z.string(), scorer: z.string(), value: z.number(), evaluation_run_id: z.string().nullish(), wb_user_id: z.string().nullish() })
  .openapi("V2ScoreReadRes");

const RunListQuery = ListQuery.extend({ evaluation_run_id: CallId.optional() });

const runs = "/v2/{entity}/{project}/evaluation_runs";
const predictions = "/v2/{entity}/{project}/predictions";
const scores = "/v2/{entity}/{project}/scores";

// Creates record their answers: a repeat under one retry id gets the same id, and writes nothing twice.
export const evaluationRunsListOp = operation({ id: "v2_evaluation_runs_list", method: "get", path: runs, summary: "List evaluation runs (JSON lines)", tag: TAG, params: V2ProjectParams, query: EvaluationRunListQuery, role: "viewer", scope: PATH_PROJECT, response: EvaluationRunReadRes, streamed: true });
export const evaluationRunCreateOp = operation({ id: "v2_evaluation_runs_create", method: "post", path: runs, summary: "Start an evaluation run", tag: TAG, params: V2ProjectParams, body: EvaluationRunCreateBody, role: "writer", scope: PATH_PROJECT, response: z.object({ evaluation_run_id: z.string() }), retries: "recorded" });
export const evaluationRunsDeleteOp = operation({ id: "v2_evaluation_runs_delete", method: "delete", path: runs, summary: "Delete evaluation runs and all their calls", tag: TAG, params: V2ProjectParams, query: z.object({ evaluation_run_ids: QueryList }), role: "admin", scope: PATH_PROJECT, response: DeleteRes, retries: "recorded" });
export const evaluationRunReadOp = operation({ id: "v2_evaluation_runs_read", method: "get", path: `${runs}/{id}`, summary: "Read an evaluation run", tag: TAG, params: IdParams, role: "viewer", scope: PATH_PROJECT, response: EvaluationRunReadRes });
export const evaluationRunFinishOp = operation({ id: "v2_evaluation_runs_finish", method: "post", path: `${runs}/{id}/finish`, summary: "Finish a run: each scorer's mean, the summarize call, the run's end", tag: TAG, params: IdParams, body: EvaluationRunFinishBody, role: "writer", scope: PATH_PROJECT, response: Success });

export const predictionsListOp = operation({ id: "v2_predictions_list", method: "get", path: predictions, summary: "List predictions (JSON lines)", tag: TAG, params: V2ProjectParams, query: RunListQuery, role: "viewer", scope: PATH_PROJECT, response: PredictionReadRes, streamed: true });
export const predictionCreateOp = operation({ id: "v2_predictions_create", method: "post", path: predictions, summary: "Record a prediction", tag: TAG, params: V2ProjectParams, body: PredictionCreateBody, role: "writer", scope: PATH_PROJECT, response: z.object({ prediction_id: z.string() }), retries: "recorded" });
export const predictionsDeleteOp = operation({ id: "v2_predictions_delete", method: "delete", path: predictions, summary: "Delete predictions (with their scores)", tag: TAG, params: V2ProjectParams, query: z.object({ prediction_ids: QueryList }), role: "admin", scope: PATH_PROJECT, response: DeleteRes, retries: "recorded" });
export const predictionReadOp = operation({ id: "v2_predictions_read", method: "get", path: `${predictions}/{id}`, summary: "Read a prediction", tag: TAG, params: IdParams, role: "viewer", scope: PATH_PROJECT, response: PredictionReadRes });
export const predictionFinishOp = operation({ id: "v2_predictions_finish", method: "post", path: `${predictions}/{id}/finish`, summary: "End the prediction's predict_and_score call with its scores", tag: TAG, params: IdParams, role: "writer", scope: PATH_PROJECT, response: Success });

export const scoresListOp = operation({ id: "v2_scores_list", method: "get", path: scores, summary: "List scores (JSON lines)", tag: TAG, params: V2ProjectParams, query: RunListQuery, role: "viewer", scope: PATH_PROJECT, response: ScoreReadRes, streamed: true });
export const scoreCreateOp = operation({ id: "v2_scores_create", method: "post", path: scores, summary: "Record a score of a prediction (a call and feedback on the prediction)", tag: TAG, params: V2ProjectParams, body: ScoreCreateBody, role: "writer", scope: PATH_PROJECT, response: z.object({ score_id: z.string() }), retries: "recorded" });
export const scoresDeleteOp = operation({ id: "v2_scores_delete", method: "delete", path: scores, summary: "Delete scores (and their feedback)", tag: TAG, params: V2ProjectParams, query: z.object({ score_ids: QueryList }), role: "admin", scope: PATH_PROJECT, response: DeleteRes, retries: "recorded" });
export const scoreReadOp = operation({ id: "v2_scores_read", method: "get", path: `${scores}/{id}`, summary: "Read a score", tag: TAG, params: IdParams, role: "viewer", scope: PATH_PROJECT, response: ScoreReadRes });

export type EvaluationRunCreateBody = z.output<typeof EvaluationRunCreateBody>;
export type EvaluationRunReadRes = z.output<typeof EvaluationRunReadRes>;
export type PredictionCreateBody = z.output<typeof PredictionCreateBody>;
export type PredictionReadRes = z.output<typeof PredictionReadRes>;
export type ScoreCreateBody = z.output<typeof ScoreCreateBody>;
export type ScoreReadRes = z.output<typeof ScoreReadRes>;
