import type { JsonObject, JsonValue } from "../../json.js";

export type JobStatus = "queued" | "running" | "completed" | "failed";

/** The runner that holds a job: it alone runs it and writes its events and its end. */
export interface JobClaim {
  readonly id: string;
  readonly runnerId: string;
  /** µs since the epoch. */
  readonly claimedAt: number;
}

/** One state of a job (see schema.ts for the meaning of each field). Times in µs. */
export interface Job {
  readonly id: string;
  readonly type: string;
  readonly serialKey: string;
  readonly input: JsonObject;
  readonly submittedAt: number;
  readonly status: JobStatus;
  readonly attempt: number;
  readonly notBefore: number;
  readonly claim: JobClaim | null;
  /** Set once completed (JSON `null` is an output too). */
  readonly output: JsonValue | undefined;
  readonly error: string | null;
  readonly finishedAt: number | null;
  readonly version: number;
}

/** What a job reported, in order. */
export interface JobEvent {
  readonly id: string;
  readonly seq: number;
  readonly type: string;
  readonly data: JsonObject;
  /** µs since the epoch. */
  readonly at: number;
}

/** A `jobs` row as written. */
export interface JobRow {
  id: string;
  type: string;
  serial_key: string;
  input: string;
  submitted_at: number;
  status: JobStatus;
  attempt: number;
  not_before: number;
  claim_id: string;
  runner_id: string;
  claimed_at: number;
  output: string;
  error: string;
  finished_at: number;
  version: number;
}

/** A `jobs` row as read: 64-bit integers arrive as strings (JSONEachRow). */
export type JobReadRow = Omit<JobRow, "submitted_at" | "not_before" | "claimed_at" | "finished_at" | "version" | "attempt"> & {
  submitted_at: string | number;
  not_before: string | number;
  claimed_at: string | number;
  finished_at: string | number;
  version: string | number;
  attempt: string | number;
};

export interface JobEventRow {
  job_id: string;
  seq: number;
  id: string;
  type: string;
  data: string;
  at: number;
}

export type JobEventReadRow = Omit<JobEventRow, "seq" | "at"> & { seq: string | number; at: string | number };

export function toJobRow(job: Job): JobRow {
  return {
    id: job.id,
    type: job.type,
    serial_key: job.serialKey,
    input: JSON.stringify(job.input),
    submitted_at: job.submittedAt,
    status: job.status,
    attempt: job.attempt,
    not_before: job.notBefore,
    claim_id: job.claim?.id ?? "",
    runner_id: job.claim?.runnerId ?? "",
    claimed_at: job.claim?.claimedAt ?? 0,
    output: job.output === undefined ? "" : JSON.stringify(job.output),
    error: job.error ?? "",
    finished_at: job.finishedAt ?? 0,
    version: job.version,
  };
}

export function fromJobRow(row: JobReadRow): Job {
  return {
    id: row.id,
    type: row.type,
    serialKey: row.serial_key,
    input: JSON.parse(row.input) as JsonObject,
    submittedAt: Number(row.submitted_at),
    status: row.status,
    attempt: Number(row.attempt),
    notBefore: Number(row.not_before),
    claim: row.claim_id === "" ? null : { id: row.claim_id, runnerId: row.runner_id, claimedAt: Number(row.claimed_at) },
    output: row.output === "" ? undefined : (JSON.parse(row.output) as JsonValue),
    error: row.error === "" ? null : row.error,
    finishedAt: Number(row.finished_at) === 0 ? null : Number(row.finished_at),
    version: Number(row.version),
  };
}

export function toJobEventRow(jobId: string, event: JobEvent): JobEventRow {
  return { job_id: jobId, seq: event.seq, id: event.id, type: event.type, data: JSON.stringify(event.data), at: event.at };
}

export function fromJobEventRow(row: JobEventReadRow): JobEvent {
  return { id: row.id, seq: Number(row.seq), type: row.type, data: JSON.parse(row.data) as JsonObject, at: Number(row.at) };
}
