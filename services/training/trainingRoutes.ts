import {
  checkpointsDeleteOp,
  checkpointsListOp,
  jobEventsOp,
  jobReadOp,
  modelCreateOp,
  modelDeleteOp,
  modelLogOp,
  rlJobCreateOp,
  sftJobCreateOp,
  type Checkpoint,
  type TrainingEvent,
  type TrainingJob,
  type TrainingModel,
  type TrajectoryGroup,
} from "../contract/training.js";
import { defaultEntity } from "../auth/keys.js";
import { isTrainingJobType, RL_JOB, SFT_JOB, type RlJobInput, type SftJobInput } from "../contract/trainingJobs.js";
import { ClientError, NotFoundError, RetryableError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import type { RequestContext } from "../http/operation.js";
import type { JsonObject } from "../json.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import type { Job, JobEvent } from "../store/jobs/jobRows.js";
import { JobsRepository } from "../store/jobs/jobsRepository.js";
import { TrainingRepository } from "../store/training/trainingRepository.js";
import { projectIdOf, type CheckpointRecord, type ModelRecord } from "../store/training/trainingRows.js";
import { WeightsStore } from "../store/training/weightsStore.js";
import { microsToIso } from "../times.js";
import { JOB_COMPLETED, JOB_FAILED } from "../worker/jobs/handler.js";
import type { JobSubmitter } from "../worker/jobs/submitter.js";
import { sftDataProject } from "../worker/jobs/trainingData.js";

/** The base models a model may start from, and their weights (services/lm). */
export interface BaseModels {
  ids(): Promise<readonly string[]>;
  weights(id: string): Promise<Uint8Array | null>;
}

export interface TrainingDeps {
  readonly store: ClickHouseStore;
  readonly baseModels: BaseModels;
  /** Null in a process that has no jobs topic (a query-only process without Kafka): job routes answer 503. */
  readonly submitter: JobSubmitter | null;
}

const modelView = (m: ModelRecord): TrainingModel => ({ id: m.id, entity: m.entity, project: m.project, name: m.name, base_model: m.baseModel, run_id: m.runId });
const checkpointView = (c: CheckpointRecord): Checkpoint => ({ id: c.id, step: c.step, metrics: c.metrics });

const listOf = <T extends { id: string }>(data: T[], hasMore: boolean) => ({
  object: "list" as const,
  data,
  first_id: data[0]?.id ?? null,
  last_id: data[data.length - 1]?.id ?? null,
  has_more: hasMore,
});

const STATUS = { queued: "QUEUED", running: "RUNNING", completed: "COMPLETED", failed: "FAILED" } as const;

/** The runner's own end events, as the training API names them (runner.ts writes them after the handler's last). */
function eventView(event: JobEvent): TrainingEvent {
  if (event.type === JOB_COMPLETED) return { id: event.id, type: "training_ended", data: {} };
  if (event.type === JOB_FAILED) return { id: event.id, type: "training_failed", data: { error_message: String(event.data.error_message ?? "") } };
  return { id: event.id, type: event.type, data: event.data };
}

function jobView(job: Job): TrainingJob {
  return {
    id: job.id,
    status: STATUS[job.status],
    model_id: String(job.input.model_id),
    kind: job.type === RL_JOB ? "rl" : "sft",
    created_at: microsToIso(job.submittedAt),
    training_start: job.claim ? microsToIso(job.claim.claimedAt) : null,
    training_end: job.finishedAt === null ? null : microsToIso(job.finishedAt),
    error_message: job.status === "failed" ? job.error : null,
  };
}

/**
 * A running job whose end is already among its events (the runner writes the end event, then
 * the state) is shown ended: a client that read `training_ended` never reads RUNNING after it.
 */
async function settled(jobs: JobsRepository, job: Job): Promise<Job> {
  if (job.status !== "running") return job;
  const last = await jobs.lastEvent(job.id);
  if (last?.type === JOB_COMPLETED) return { ...job, status: "completed", finishedAt: last.at, error: null };
  if (last?.type === JOB_FAILED) return { ...job, status: "failed", finishedAt: last.at, error: String(last.data.error_message ?? "") };
  return job;
}

/** Mean, standard deviation and count of the rewards of logged groups. */
function rewardMetrics(groups: readonly TrajectoryGroup[]): Record<string, number> {
  const rewards = groups.flatMap((g) => g.trajectories.map((t) => t.reward));
  if (rewards.length === 0) return { num_trajectories: 0 };
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  const variance = rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length;
  return { reward: mean, reward_std_dev: Math.sqrt(variance), num_trajectories: rewards.length, num_groups: groups.length };
}

/**
 * The training control plane (spec: training-api.md). Models, checkpoints and logs are
 * written straight to ClickHouse; jobs go onto the jobs topic (a trainer runs them,
 * worker/jobs/trainerJob.ts) and are read back from the job store. A route naming a model or
 * a job by id looks it up first (404 when unknown or deleted) and then checks that the key
 * reaches its project (403).
 */
export function mountTrainingRoutes(api: HttpApi, deps: TrainingDeps): void {
  const repo = new TrainingRepository(deps.store);
  const weights = new WeightsStore(deps.store);
  const jobs = new JobsRepository(deps.store);

  const reachModel = async (modelId: string, ctx: RequestContext): Promise<ModelRecord> => {
    const model = await repo.model(modelId);
    if (!model || model.deleted) throw new NotFoundError(`model ${modelId} not found`);
    ctx.reachProject(projectIdOf(model));
    return model;
  };

  const reachJob = async (jobId: string, ctx: RequestContext): Promise<Job> => {
    const job = await jobs.get(jobId);
    if (!job || !isTrainingJobType(job.type)) throw new NotFoundError(`training job ${jobId} not found`);
    ctx.reachProject(String(job.input.project_id));
    return job;
  };

  const submit = async (type: string, model: ModelRecord, input: JsonObject): Promise<{ id: string }> => {
    if (!deps.submitter) throw new RetryableError("this process has no jobs queue (run it with the worker role or with Kafka)", 5);
    const message = await deps.submitter.submit({ type, serialKey: model.id, input });
    return { id: message.id };
  };

  api.mount(modelCreateOp, async ({ body }, ctx) => {
    const entity = body.entity ?? defaultEntity(ctx.principal);
    ctx.reachProject(`${entity}/${body.project}`);
    const existing = await repo.modelByName(entity, body.project, body.name);
    if (existing) {
      if (body.return_existing) return modelView(existing);
      throw new ClientError(409, `model ${entity}/${body.project}/${body.name} exists (send return_existing: true to get it)`);
    }
    const base = await deps.baseModels.weights(body.base_model);
    if (!base) throw new ClientError(400, `unknown base_model ${body.base_model}; known: ${(await deps.baseModels.ids()).join(", ")}`);
    const digest = await weights.put(`${entity}/${body.project}`, base);
    return modelView(await repo.createModel({ entity, project: body.project, name: body.name, baseModel: body.base_model }, digest));
  });

  api.mount(modelDeleteOp, async ({ params }, ctx) => {
    const model = await reachModel(params.model_id, ctx);
    const deleted = await repo.deleteModel(model);
    return { model_id: model.id, deleted_checkpoints: deleted, deleted_run: false };
  });

  api.mount(checkpointsListOp, async ({ params, query }, ctx) => {
    await reachModel(params.model_id, ctx);
    const page = await repo.checkpoints(params.model_id, query);
    return listOf(page.checkpoints.map(checkpointView), page.hasMore);
  });

  api.mount(checkpointsDeleteOp, async ({ params, body }, ctx) => {
    await reachModel(params.model_id, ctx);
    const { deleted, notFound } = await repo.deleteCheckpoints(params.model_id, body.steps);
    return { deleted_count: deleted, not_found_steps: notFound };
  });

  api.mount(modelLogOp, async ({ params, body }, ctx) => {
    const model = await reachModel(params.model_id, ctx);
    if (body.model_id && body.model_id !== model.id) throw new ClientError(400, `body model_id ${body.model_id} is not the model of the path, ${model.id}`);
    await repo.logTrajectories(model.id, { split: body.split, groups: body.trajectory_groups as unknown as JsonObject[], metrics: rewardMetrics(body.trajectory_groups) });
    return {};
  });

  api.mount(rlJobCreateOp, async ({ body }, ctx) => {
    const model = await reachModel(body.model_id, ctx);
    const input: RlJobInput = {
      model_id: model.id, project_id: projectIdOf(model), base_model: model.baseModel,
      trajectory_groups: body.trajectory_groups, experimental_config: body.experimental_config ?? null,
    };
    return submit(RL_JOB, model, input as unknown as JsonObject);
  });

  api.mount(sftJobCreateOp, async ({ body }, ctx) => {
    const model = await reachModel(body.model_id, ctx);
    const url = (body.training_data_url ?? body.training_folder_url)!;
    // A dataset or file of our own store is read with the model's rights: the key must reach its project too.
    const dataProject = sftDataProject(url);
    if (dataProject) ctx.reachProject(dataProject);
    const input: SftJobInput = {
      model_id: model.id, project_id: projectIdOf(model), base_model: model.baseModel,
      training_data_url: url, config: body.config ?? null, experimental_config: body.experimental_config ?? null,
    };
    return submit(SFT_JOB, model, input as unknown as JsonObject);
  });

  api.mount(jobReadOp, async ({ params }, ctx) => jobView(await settled(jobs, await reachJob(params.job_id, ctx))));

  api.mount(jobEventsOp, async ({ params, query }, ctx) => {
    const job = await reachJob(params.job_id, ctx);
    const page = await jobs.events(job.id, { after: query.after ?? null, limit: query.limit });
    return listOf(page.events.map(eventView), page.hasMore);
  });
}
