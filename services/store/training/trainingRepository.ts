import { ValidationError } from "../../errors.js";
import { uuid4 } from "../../ids.js";
import type { JsonValue } from "../../json.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { ClickHouseStore } from "../clickhouse.js";
import {
  checkpointByIdQuery,
  checkpointOfJobQuery,
  checkpointsAtQuery,
  checkpointsPageQuery,
  maxStepQuery,
  modelByIdQuery,
  modelByNameQuery,
  trajectoryLogsQuery,
} from "./trainingQuery.js";
import {
  fromCheckpointRow,
  fromModelRow,
  toCheckpointRow,
  toModelRow,
  type CheckpointReadRow,
  type CheckpointRecord,
  type ModelReadRow,
  type ModelRecord,
} from "./trainingRows.js";

export interface NewModel {
  readonly entity: string;
  readonly project: string;
  readonly name: string;
  readonly baseModel: string;
}

export interface CheckpointsPage {
  readonly checkpoints: CheckpointRecord[];
  readonly hasMore: boolean;
}

export interface NewCheckpoint {
  readonly metrics: Record<string, number>;
  readonly weightsDigest: string;
  readonly jobId: string | null;
}

/** Reward summary of logged trajectory groups. */
export interface TrajectoryLog {
  readonly split: string;
  readonly groups: JsonValue;
  readonly metrics: Record<string, number>;
}

/**
 * Models, checkpoints and trajectory logs (schema.ts). Writes go straight to ClickHouse, so
 * each answer is visible to the next request (ART reads the checkpoint list right after a job).
 */
export class TrainingRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  /** The model, deleted or not; null when it never existed. */
  async model(id: string): Promise<ModelRecord | null> {
    const [row] = await this.store.rows<ModelReadRow>("training_model_get", modelByIdQuery(id));
    return row ? fromModelRow(row) : null;
  }

  async modelByName(entity: string, project: string, name: string): Promise<ModelRecord | null> {
    const [row] = await this.store.rows<ModelReadRow>("training_model_by_name", modelByNameQuery(entity, project, name));
    return row ? fromModelRow(row) : null;
  }

  /** Creates a model with its step-0 checkpoint (the base weights, already stored under `weightsDigest`). */
  async createModel(model: NewModel, weightsDigest: string): Promise<ModelRecord> {
    const now = this.clock.nowMicros();
    const record: ModelRecord = { ...model, id: uuid4(), runId: null, createdAt: now, deleted: false, version: now };
    await this.writeCheckpoint({ modelId: record.id, step: 0, id: uuid4(), metrics: {}, weightsDigest, jobId: null, createdAt: now, deleted: false, version: now });
    await this.store.insert("training_model_create", "training_models", [toModelRow(record)]);
    return record;
  }

  /** Deletes a model and its live checkpoints; answers how many checkpoints were deleted. */
  async deleteModel(model: ModelRecord): Promise<number> {
    const live = await this.checkpointsAt(model.id, null);
    await this.tombstoneCheckpoints(live);
    await this.store.insert("training_model_delete", "training_models", [toModelRow({ ...model, deleted: true, version: this.nextVersion(model.version) })]);
    return live.length;
  }

  async checkpoints(modelId: string, page: { after?: string | undefined; order: "asc" | "desc"; limit: number }): Promise<CheckpointsPage> {
    let fromStep: number | null = null;
    if (page.after !== undefined) {
      const [row] = await this.store.rows<CheckpointReadRow>("training_checkpoint_by_id", checkpointByIdQuery(modelId, page.after));
      if (!row) throw ValidationError.at(["query", "after"], `no checkpoint ${page.after} in model ${modelId}`);
      fromStep = Number(row.step);
    }
    const rows = await this.store.rows<CheckpointReadRow>("training_checkpoints_page", checkpointsPageQuery(modelId, { fromStep, order: page.order, limit: page.limit }));
    return { checkpoints: rows.slice(0, page.limit).map(fromCheckpointRow), hasMore: rows.length > page.limit };
  }

  /** The model's live checkpoint of the highest step, or null when it has none left. */
  async latestCheckpoint(modelId: string): Promise<CheckpointRecord | null> {
    return (await this.checkpoints(modelId, { order: "desc", limit: 1 })).checkpoints[0] ?? null;
  }

  async checkpointAt(modelId: string, step: number): Promise<CheckpointRecord | null> {
    return (await this.checkpointsAt(modelId, [step]))[0] ?? null;
  }

  /** Deletes the live checkpoints of these steps; answers the steps that had none. */
  async deleteCheckpoints(modelId: string, steps: readonly number[]): Promise<{ deleted: number; notFound: number[] }> {
    const wanted = [...new Set(steps)];
    const live = wanted.length === 0 ? [] : await this.checkpointsAt(modelId, wanted);
    await this.tombstoneCheckpoints(live);
    const found = new Set(live.map((c) => c.step));
    return { deleted: live.length, notFound: wanted.filter((s) => !found.has(s)) };
  }

  /**
   * Adds the checkpoint a training job made, at the step after the highest the model ever
   * had. A job that added one already (it ran again after its runner stopped) gets that one.
   */
  async addCheckpoint(modelId: string, checkpoint: NewCheckpoint): Promise<CheckpointRecord> {
    const done = checkpoint.jobId === null ? null : await this.checkpointOfJob(modelId, checkpoint.jobId);
    if (done) return done;
    const [max] = await this.store.rows<{ step: string | number; n: string | number }>("training_max_step", maxStepQuery(modelId));
    const step = Number(max?.n ?? 0) === 0 ? 0 : Number(max!.step) + 1;
    const now = this.clock.nowMicros();
    const record: CheckpointRecord = { modelId, step, id: uuid4(), ...checkpoint, createdAt: now, deleted: false, version: now };
    await this.writeCheckpoint(record);
    return record;
  }

  /** The checkpoint a training job added, deleted since or not; null when it added none. */
  async checkpointOfJob(modelId: string, jobId: string): Promise<CheckpointRecord | null> {
    const [row] = await this.store.rows<CheckpointReadRow>("training_checkpoint_of_job", checkpointOfJobQuery(modelId, jobId));
    return row ? fromCheckpointRow(row) : null;
  }

  async logTrajectories(modelId: string, log: TrajectoryLog): Promise<void> {
    await this.store.insert("training_log", "training_trajectory_logs", [
      { model_id: modelId, id: uuid4(), split: log.split, groups: JSON.stringify(log.groups), metrics: JSON.stringify(log.metrics), created_at: this.clock.nowMicros() },
    ]);
  }

  /** Logged trajectories of a model, oldest first (tests and operators). */
  async trajectoryLogs(modelId: string): Promise<TrajectoryLog[]> {
    const rows = await this.store.rows<{ split: string; groups: string; metrics: string }>("training_logs_read", trajectoryLogsQuery(modelId));
    return rows.map((r) => ({ split: r.split, groups: JSON.parse(r.groups) as JsonValue, metrics: JSON.parse(r.metrics) as Record<string, number> }));
  }

  private async checkpointsAt(modelId: string, steps: readonly number[] | null): Promise<CheckpointRecord[]> {
    return (await this.store.rows<CheckpointReadRow>("training_checkpoints_at", checkpointsAtQuery(modelId, steps))).map(fromCheckpointRow);
  }

  private async writeCheckpoint(checkpoint: CheckpointRecord): Promise<void> {
    await this.store.insert("training_checkpoint_write", "training_checkpoints", [toCheckpointRow(checkpoint)]);
  }

  private async tombstoneCheckpoints(checkpoints: readonly CheckpointRecord[]): Promise<void> {
    if (checkpoints.length === 0) return;
    const rows = checkpoints.map((c) => toCheckpointRow({ ...c, deleted: true, version: this.nextVersion(c.version) }));
    await this.store.insert("training_checkpoints_delete", "training_checkpoints", rows);
  }

  private nextVersion(previous: number): number {
    return Math.max(this.clock.nowMicros(), previous + 1);
  }
}
