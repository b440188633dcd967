import { ProjectId } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * Evaluation and scoring jobs (spec: tracing-api-evaluation.md, "Evaluations and scoring
 * jobs"): `evaluate_model` and `calls/score` queue a job on the job runner
 * (worker/jobs/evaluationJobs.ts runs them); `status` reads an evaluation's progress from its
 * job and its calls.
 */

const TAG = "Evaluations";
const MAX_SCORED_CALLS = 1_000;
const MAX_SCORERS = 20;

/** Job types on the jobs topic. */
export const EVALUATE_MODEL_JOB = "evaluation.evaluate_model";
export const SCORE_CALLS_JOB = "calls.score";

export const EvaluateModelReq = z
  .object({
    project_id: ProjectId,
    evaluation_ref: z.string().min(1).openapi({ description: "An `Evaluation` object of the project" }),
    model_ref: z.string().min(1).openapi({ description: "An `LLMStructuredCompletionModel` object of the project" }),
  })
  .openapi("EvaluateModelReq");

export const EvaluateModelRes = z.object({ call_id: z.string() }).openapi("EvaluateModelRes");

export const EvaluationStatusReq = z.object({ project_id: ProjectId, call_id: z.string().min(1) }).openapi("EvaluationStatusReq");

export const EvaluationStatus = z
  .discriminatedUnion("code", [
    z.object({ code: z.literal("not_found") }),
    z.object({ code: z.literal("running"), completed_rows: z.number().int(), total_rows: z.number().int() }),
    z.object({ code: z.literal("failed"), error: z.string().nullish() }),
    z.object({ code: z.literal("complete"), output: z.record(z.string(), z.unknown()) }),
  ])
  .openapi("EvaluationStatus");
export type EvaluationStatus = z.infer<typeof EvaluationStatus>;

export const EvaluationStatusRes = z.object({ status: EvaluationStatus }).openapi("EvaluationStatusRes");

export const CallsScoreReq = z
  .object({
    project_id: ProjectId,
    call_ids: z.array(z.string().min(1)).min(1).max(MAX_SCORED_CALLS),
    scorer_refs: z.array(z.string().min(1)).min(1).max(MAX_SCORERS).openapi({ description: "`LLMAsAJudgeScorer` objects of the project" }),
  })
  .openapi("CallsScoreReq");

export const CallsScoreRes = z.object({}).openapi("CallsScoreRes");

/** The evaluate_model job's input: the request, the root call's id and start time (chosen at submission, so a resumed run rewrites the same root). */
export const EvaluateModelJobInput = z.object({
  project_id: z.string(),
  evaluation_ref: z.string(),
  model_ref: z.string(),
  call_id: z.string(),
  started_at: z.number().int(),
  total_rows: z.number().int(),
  wb_user_id: z.string(),
});
export type EvaluateModelJobInput = z.infer<typeof EvaluateModelJobInput>;

export const ScoreCallsJobInput = z.object({
  project_id: z.string(),
  call_ids: z.array(z.string()),
  scorer_refs: z.array(z.string()),
  /** µs; the score calls' ids are derived from it and the job's id, so a resumed job writes the same ids. */
  requested_at: z.number().int(),
  wb_user_id: z.string(),
});
export type ScoreCallsJobInput = z.infer<typeof ScoreCallsJobInput>;

export const evaluateModelOp = operation({
  id: "evaluate_model",
  method: "post",
  path: "/evaluations/evaluate_model",
  summary: "Run an evaluation of an LLM model as a job; answers the root call's id",
  tag: TAG,
  body: EvaluateModelReq,
  response: EvaluateModelRes,
  role: "writer",
  scope: BODY_PROJECT,
});

export const evaluationStatusOp = operation({
  id: "evaluation_status",
  method: "post",
  path: "/evaluations/status",
  summary: "The progress of an evaluation started by evaluate_model",
  tag: TAG,
  body: EvaluationStatusReq,
  response: EvaluationStatusRes,
  role: "viewer",
  scope: BODY_PROJECT,
});

export const callsScoreOp = operation({
  id: "calls_score",
  method: "post",
  path: "/calls/score",
  summary: "Score calls with scorers as a job: a score call and feedback per call and scorer",
  tag: TAG,
  body: CallsScoreReq,
  response: CallsScoreRes,
  role: "writer",
  scope: BODY_PROJECT,
});
