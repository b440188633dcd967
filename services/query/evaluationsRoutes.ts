import {
  callsScoreOp, EVALUATE_MODEL_JOB, evaluateModelOp, evaluationStatusOp, SCORE_CALLS_JOB, type EvaluateModelJobInput, type EvaluationStatus,
  type ScoreCallsJobInput,
} from "../contract/evaluations.js";
import { NotFoundError, RetryableError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { uuidv7 } from "../ids.js";
import { isJsonObject, type JsonObject } from "../json.js";
import type { CallRow } from "../store/calls/callRows.js";
import { CallsReadRepository } from "../store/calls/callsRead.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import type { Job } from "../store/jobs/jobRows.js";
import { JobsRepository } from "../store/jobs/jobsRepository.js";
import { PREDICT_AND_SCORE_OP } from "../store/v2/evalCalls.js";
import { MonotonicClock } from "../times.js";
import { EvalObjects } from "../worker/jobs/evalObjects.js";
import { JOB_FAILED } from "../worker/jobs/handler.js";
import type { JobSubmission, JobSubmitter } from "../worker/jobs/submitter.js";
import { opDisplayName } from "../store/calls/computedFields.js";
import type { ProjectRetention } from "../store/projects/retention.js";

export interface EvaluationsDeps {
  readonly store: ClickHouseStore;
  /** Each project's retention (what its calls reads leave out). */
  readonly retention: ProjectRetention;
  /** Null in a process without a jobs topic: the job routes answer 503. */
  readonly submitter: JobSubmitter | null;
}

/**
 * `/evaluations/evaluate_model`, `/evaluations/status`, `/calls/score` (contract/evaluations.ts;
 * the jobs: worker/jobs/evaluationJobs.ts). Submissions check every ref first (422 for a ref
 * that is not the project's or names another class, 404 for one that names nothing, 404 for an
 * unknown call id), so a job is queued only when it can run.
 */
export function mountEvaluationRoutes(api: HttpApi, deps: EvaluationsDeps): void {
  const objects = new EvalObjects(deps.store);
  const reads = new CallsReadRepository(deps.store, deps.retention);
  const jobs = new JobsRepository(deps.store);
  const clock = new MonotonicClock();
  const submit = async (submission: JobSubmission): Promise<void> => {
    if (!deps.submitter) throw new RetryableError("this process has no jobs queue (run it with the worker role or with Kafka)", 5);
    await deps.submitter.submit(submission);
  };

  api.mount(evaluateModelOp, async ({ body }, ctx) => {
    const evaluation = await objects.evaluation(body.project_id, body.evaluation_ref, ["body", "evaluation_ref"]);
    await objects.model(body.project_id, body.model_ref, ["body", "model_ref"]);
    const startedAt = clock.nowMicros();
    const callId = uuidv7(Math.floor(startedAt / 1000));
    const input: EvaluateModelJobInput = {
      project_id: body.project_id, evaluation_ref: body.evaluation_ref, model_ref: body.model_ref, call_id: callId,
      started_at: startedAt, total_rows: evaluation.rowCount * evaluation.trials, wb_user_id: ctx.principal.username,
    };
    // The job's id is the root call's: the status reads one from the other.
    await submit({ type: EVALUATE_MODEL_JOB, id: callId, input: input as unknown as JsonObject });
    return { call_id: callId };
  });

  api.mount(evaluationStatusOp, async ({ body }) => ({ status: await evaluationStatus(reads, jobs, body.project_id, body.call_id) }));

  api.mount(callsScoreOp, async ({ body }, ctx) => {
    for (const [i, ref] of body.scorer_refs.entries()) await objects.scorer(body.project_id, ref, ["body", "scorer_refs", i]);
    const found = new Set<string>();
    for await (const row of reads.stream({ projectId: body.project_id, filter: { call_ids: body.call_ids }, columns: ["id"] })) found.add(row.id);
    const missing = body.call_ids.find((id) => !found.has(id));
    if (missing !== undefined) throw new NotFoundError(`call ${missing} not found in project ${body.project_id}`);
    const input: ScoreCallsJobInput = {
      project_id: body.project_id, call_ids: [...new Set(body.call_ids)], scorer_refs: [...new Set(body.scorer_refs)],
      requested_at: clock.nowMicros(), wb_user_id: ctx.principal.username,
    };
    await submit({ type: SCORE_CALLS_JOB, input: input as unknown as JsonObject });
    return {};
  });
}

/**
 * An evaluation's status: its root call ended → `complete` with its output (`failed` with its
 * exception); its job failed → `failed` with the job's error (a job whose runners all died
 * leaves the root open); otherwise `running` while the job or the root exists. `completed_rows`
 * counts the root's finished predict_and_score children; `total_rows` is rows × trials (known
 * from the job; for a root without a job, the children seen).
 */
async function evaluationStatus(reads: CallsReadRepository, jobs: JobsRepository, projectId: string, callId: string): Promise<EvaluationStatus> {
  const [root, storedJob] = await Promise.all([readRoot(reads, projectId, callId), jobs.get(callId)]);
  const job = storedJob && storedJob.type === EVALUATE_MODEL_JOB && storedJob.input.project_id === projectId ? storedJob : null;
  if (root && root.ended_at !== null) {
    if (root.exception !== null) return { code: "failed", error: root.exception };
    const output: unknown = root.output === null ? null : JSON.parse(root.output);
    return { code: "complete", output: isJsonObject(output) ? output : {} };
  }
  if (job) {
    const failed = await jobFailure(jobs, job);
    if (failed !== null) return { code: "failed", error: failed };
  }
  if (!root && !job) return { code: "not_found" };
  let completed = 0;
  let seen = 0;
  if (root) {
    for await (const child of reads.stream({ projectId, filter: { parent_ids: [callId] }, columns: ["id", "op_name", "ended_at"] })) {
      if (opDisplayName(child.op_name) !== PREDICT_AND_SCORE_OP) continue;
      seen++;
      if (child.ended_at !== null) completed++;
    }
  }
  const total = typeof job?.input.total_rows === "number" ? job.input.total_rows : seen;
  return { code: "running", completed_rows: completed, total_rows: total };
}

async function readRoot(reads: CallsReadRepository, projectId: string, callId: string): Promise<CallRow | null> {
  for await (const row of reads.stream({ projectId, filter: { call_ids: [callId] } })) return row;
  return null;
}

/** The job's error when it failed (its state, or its last event when the state is not written yet). */
async function jobFailure(jobs: JobsRepository, job: Job): Promise<string | null> {
  if (job.status === "failed") return job.error ?? "the evaluation job failed";
  if (job.status !== "running") return null;
  const last = await jobs.lastEvent(job.id);
  return last?.type === JOB_FAILED ? String(last.data.error_message ?? "the evaluation job failed") : null;
}
