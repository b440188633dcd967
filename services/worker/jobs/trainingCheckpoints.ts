import type { TrainingOutput } from "../../contract/trainingJobs.js";
import type { ClickHouseStore } from "../../store/clickhouse.js";
import { TrainingRepository } from "../../store/training/trainingRepository.js";
import { projectIdOf, type ModelRecord } from "../../store/training/trainingRows.js";
import { WeightsStore } from "../../store/training/weightsStore.js";

/** A shipped base model's weights, null for an unknown id (lm/modelThreads.ts `baseWeights`). */
export type BaseWeights = (baseModelId: string) => Promise<Uint8Array | null>;

/** Where a training job starts from: a weights file of the model's project. */
export interface StartingWeights {
  readonly projectId: string;
  readonly digest: string;
  /** The checkpoint step it is, or null for the base model's weights (no live checkpoint left). */
  readonly step: number | null;
}

/**
 * What every trainer (the built-in one, trainerJob.ts, and the relay to an external one,
 * trainerRelay.ts) does around its training: the model must be live, a job run again answers
 * the checkpoint it wrote before, training starts from the latest live checkpoint (the base
 * model's weights when none is left), and the result is the next checkpoint, written before
 * the job ends so that a client that reads `training_ended` finds it listed.
 */
export class TrainingCheckpoints {
  private readonly repo: TrainingRepository;
  readonly weights: WeightsStore;

  constructor(store: ClickHouseStore, private readonly baseWeights: BaseWeights) {
    this.repo = new TrainingRepository(store);
    this.weights = new WeightsStore(store);
  }

  async liveModel(modelId: string): Promise<ModelRecord> {
    const model = await this.repo.model(modelId);
    if (!model || model.deleted) throw new Error(`model ${modelId} was deleted`);
    return model;
  }

  /** The checkpoint this job wrote in an earlier run, as its output, or null. */
  async earlierOutput(model: ModelRecord, jobId: string): Promise<TrainingOutput | null> {
    const earlier = await this.repo.checkpointOfJob(model.id, jobId);
    return earlier ? { checkpoint_id: earlier.id, step: earlier.step, metrics: earlier.metrics } : null;
  }

  async startingPoint(model: ModelRecord): Promise<StartingWeights> {
    const projectId = projectIdOf(model);
    const latest = await this.repo.latestCheckpoint(model.id);
    if (latest) return { projectId, digest: latest.weightsDigest, step: latest.step };
    const base = await this.baseWeights(model.baseModel);
    if (!base) throw new Error(`unknown base model ${model.baseModel}`);
    return { projectId, digest: await this.weights.put(projectId, base), step: null };
  }

  async startingWeights(model: ModelRecord): Promise<Uint8Array> {
    const latest = await this.repo.latestCheckpoint(model.id);
    const weights = latest ? await this.weights.get(projectIdOf(model), latest.weightsDigest) : await this.baseWeights(model.baseModel);
    if (!weights) throw new Error(latest ? `the weights of checkpoint step ${latest.step} are missing` : `unknown base model ${model.baseModel}`);
    return weights;
  }

  /** Adds the next checkpoint (the step after the highest the model ever had) with weights already stored in its project. */
  async addCheckpoint(model: ModelRecord, jobId: string, weightsDigest: string, metrics: Record<string, number>): Promise<TrainingOutput> {
    const checkpoint = await this.repo.addCheckpoint(model.id, { metrics: finiteMetrics(metrics), weightsDigest, jobId });
    return { checkpoint_id: checkpoint.id, step: checkpoint.step, metrics: checkpoint.metrics };
  }
}

export const finiteMetrics = (metrics: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(metrics).filter(([, v]) => Number.isFinite(v)));
