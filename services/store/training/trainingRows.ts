import type { JsonObject } from "../../json.js";

/** A model as stored (schema.ts). Times in µs. */
export interface ModelRecord {
  readonly id: string;
  readonly entity: string;
  readonly project: string;
  readonly name: string;
  readonly baseModel: string;
  readonly runId: string | null;
  readonly createdAt: number;
  readonly deleted: boolean;
  readonly version: number;
}

export const projectIdOf = (model: Pick<ModelRecord, "entity" | "project">): string => `${model.entity}/${model.project}`;

export interface CheckpointRecord {
  readonly modelId: string;
  readonly step: number;
  readonly id: string;
  readonly metrics: Record<string, number>;
  readonly weightsDigest: string;
  /** The training job that made it; null for step 0. */
  readonly jobId: string | null;
  readonly createdAt: number;
  readonly deleted: boolean;
  readonly version: number;
}

export interface ModelRow {
  id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
  run_id: string;
  created_at: number;
  deleted: number;
  version: number;
}

export interface CheckpointRow {
  model_id: string;
  step: number;
  id: string;
  metrics: string;
  weights_digest: string;
  job_id: string;
  created_at: number;
  deleted: number;
  version: number;
}

/** Rows as read: 64-bit integers arrive as strings (JSONEachRow). */
type Read<R> = { [K in keyof R]: R[K] extends number ? string | number : R[K] };

export function toModelRow(m: ModelRecord): ModelRow {
  return { id: m.id, entity: m.entity, project: m.project, name: m.name, base_model: m.baseModel, run_id: m.runId ?? "", created_at: m.createdAt, deleted: m.deleted ? 1 : 0, version: m.version };
}

export function fromModelRow(r: Read<ModelRow>): ModelRecord {
  return {
    id: r.id, entity: r.entity, project: r.project, name: r.name, baseModel: r.base_model, runId: r.run_id === "" ? null : r.run_id,
    createdAt: Number(r.created_at), deleted: Number(r.deleted) === 1, version: Number(r.version),
  };
}

export function toCheckpointRow(c: CheckpointRecord): CheckpointRow {
  return {
    model_id: c.modelId, step: c.step, id: c.id, metrics: JSON.stringify(c.metrics), weights_digest: c.weightsDigest, job_id: c.jobId ?? "",
    created_at: c.createdAt, deleted: c.deleted ? 1 : 0, version: c.version,
  };
}

export function fromCheckpointRow(r: Read<CheckpointRow>): CheckpointRecord {
  return {
    modelId: r.model_id, step: Number(r.step), id: r.id, metrics: numbersOf(JSON.parse(r.metrics) as JsonObject), weightsDigest: r.weights_digest,
    jobId: r.job_id === "" ? null : r.job_id, createdAt: Number(r.created_at), deleted: Number(r.deleted) === 1, version: Number(r.version),
  };
}

/** The finite numeric entries of a metrics object (what the API promises: numbers only). */
export function numbersOf(metrics: JsonObject): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(metrics)) if (typeof v === "number" && Number.isFinite(v)) out[k] = v;
  return out;
}

export type ModelReadRow = Read<ModelRow>;
export type CheckpointReadRow = Read<CheckpointRow>;
