import { trainerClaimOp, trainerMessageOp, type TrainerJob } from "../contract/trainerRelay.js";
import { isTrainingJobType, type TrainingJobType } from "../contract/trainingJobs.js";
import { ClientError, NotFoundError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { JobsRepository } from "../store/jobs/jobsRepository.js";
import { TrainerMessages, type OfferedAttempt } from "../store/training/trainerMessages.js";
import { TrainingCheckpoints, type BaseWeights } from "../worker/jobs/trainingCheckpoints.js";

export interface TrainerRouteSettings {
  /** How long a claim waits for the relay to choose among the claims before it tries the next job. */
  readonly claimWaitMs: number;
  readonly pollMs: number;
}

export const TRAINER_ROUTE_DEFAULTS: TrainerRouteSettings = { claimWaitMs: 10_000, pollMs: 100 };

/** Offers looked at per claim request (the oldest first). */
const OFFERS_PER_CLAIM = 20;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The external trainer's routes (contract/trainerRelay.ts; the relay that answers them runs in
 * the worker, worker/jobs/trainerRelay.ts). With the built-in trainer no job is ever offered:
 * a claim answers `{job: null}` and a message 409.
 */
export function mountTrainerRoutes(api: HttpApi, store: ClickHouseStore, baseWeights: BaseWeights, settings: TrainerRouteSettings = TRAINER_ROUTE_DEFAULTS): void {
  const mailbox = new TrainerMessages(store);
  const jobs = new JobsRepository(store);
  const checkpoints = new TrainingCheckpoints(store, baseWeights);

  /** Claims one offered attempt: the claim is stored, then the relay's choice is awaited. */
  const claimOne = async (offer: OfferedAttempt, trainerId: string): Promise<TrainerJob | null> => {
    await mailbox.claim(offer.jobId, offer.attempt, trainerId);
    for (const started = Date.now(); Date.now() - started < settings.claimWaitMs; await sleep(settings.pollMs)) {
      const assignee = await mailbox.assignee(offer.jobId, offer.attempt);
      if (assignee === null) continue;
      if (assignee !== trainerId) return null;
      const job = await jobs.get(offer.jobId);
      if (!job || !isTrainingJobType(job.type) || job.status !== "running" || job.attempt !== offer.attempt) return null;
      const start = await checkpoints.startingPoint(await checkpoints.liveModel(String(job.input.model_id)));
      return { id: job.id, attempt: job.attempt, type: job.type as TrainingJobType, input: job.input, weights: { project_id: start.projectId, digest: start.digest } };
    }
    return null;
  };

  api.mount(trainerClaimOp, async ({ body }, ctx) => {
    const offers = (await mailbox.openOffers(OFFERS_PER_CLAIM)).filter((o) => ctx.mayReach(o.projectId));
    for (const offer of offers) {
      const job = await claimOne(offer, body.trainer_id);
      if (job) return { job };
    }
    return { job: null };
  });

  api.mount(trainerMessageOp, async ({ params, body }, ctx) => {
    const job = await jobs.get(params.job_id);
    if (!job || !isTrainingJobType(job.type)) throw new NotFoundError(`training job ${params.job_id} not found`);
    ctx.reachProject(String(job.input.project_id));
    if (job.status !== "running" || job.attempt !== body.attempt) {
      throw new ClientError(409, `job ${job.id} is ${job.status} at attempt ${job.attempt}, not running attempt ${body.attempt}: stop working on it`);
    }
    const assignee = await mailbox.assignee(job.id, body.attempt);
    if (assignee !== body.trainer_id) throw new ClientError(409, `attempt ${body.attempt} of job ${job.id} is not assigned to trainer ${body.trainer_id}`);
    await mailbox.send(job.id, body.attempt, { trainerId: body.trainer_id, seq: body.seq, type: body.type, data: body.data });
    return {};
  });
}
