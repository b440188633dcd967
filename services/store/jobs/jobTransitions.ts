import { randomInt } from "node:crypto";
import { uuid4 } from "../../ids.js";
import type { JsonValue } from "../../json.js";
import type { JobMessage } from "../../queue/jobs.js";
import type { Job } from "./jobRows.js";

/**
 * The states a job goes through, each a whole new row one step above the last:
 *
 *   queued ──claim──▶ running ──▶ completed | failed
 *     ▲                  │
 *     └── retry later ───┤  (a retryable failure, attempts left: queued with not_before)
 *     └── released ──────┘  (its runner stopped: queued again, same attempt)
 *
 * A running job whose runner stopped heartbeating is claimed again from `running`.
 */
const STEP = 65_536;

export const stepOf = (version: number): number => Math.floor(version / STEP);

/** The next step, salted: two claims written on one step get different versions (claims.ts). */
export const nextVersion = (version: number): number => (stepOf(version) + 1) * STEP + randomInt(STEP);

export function queuedJob(message: JobMessage): Job {
  return {
    id: message.id,
    type: message.type,
    serialKey: message.serial_key,
    input: message.input,
    submittedAt: message.submitted_at,
    status: "queued",
    attempt: 1,
    notBefore: 0,
    claim: null,
    output: undefined,
    error: null,
    finishedAt: null,
    version: 0,
  };
}

export function claimedJob(job: Job, runnerId: string, now: number, attempt: number): Job {
  return { ...job, status: "running", attempt, claim: { id: uuid4(), runnerId, claimedAt: now }, version: nextVersion(job.version) };
}

export function completedJob(job: Job, output: JsonValue, now: number): Job {
  return { ...job, status: "completed", output, error: null, finishedAt: now, version: nextVersion(job.version) };
}

export function failedJob(job: Job, message: string, now: number): Job {
  return { ...job, status: "failed", error: message, finishedAt: now, version: nextVersion(job.version) };
}

export function retryLaterJob(job: Job, message: string, notBefore: number): Job {
  return { ...job, status: "queued", attempt: job.attempt + 1, notBefore, claim: null, error: message, version: nextVersion(job.version) };
}

export function releasedJob(job: Job): Job {
  return { ...job, status: "queued", claim: null, version: nextVersion(job.version) };
}
