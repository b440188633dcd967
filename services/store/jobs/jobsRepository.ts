import { ValidationError } from "../../errors.js";
import type { JobMessage } from "../../queue/jobs.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { fromJobEventRow, fromJobRow, toJobEventRow, toJobRow, type Job, type JobEvent, type JobEventReadRow, type JobReadRow } from "./jobRows.js";
import { alterTarget } from "../clusterSchema.js";
import { deleteSubmittedBeforeQuery, eventSeqQuery, eventsPageQuery, jobByIdQuery, lastBeatsQuery, lastEventQuery, nextPerSerialKeyQuery, oldestSubmittedQuery } from "./jobsQuery.js";
import { queuedJob } from "./jobTransitions.js";

export interface JobEventsPage {
  readonly events: JobEvent[];
  readonly hasMore: boolean;
}

/** A job the runner may run next, with the last sign of life of its runner if it has one. */
export interface NextJob {
  /** Its state without the input (read the whole job with `get` before claiming it). */
  readonly job: Job;
  readonly lastBeatAt: number | null;
}

/**
 * The job tables. Every write is one INSERT of whole rows: states are versions of the job's
 * row (schema.ts), events and heartbeats are appended. An INSERT returns once its part is
 * written, so the next read sees it.
 */
export class JobsRepository {
  constructor(private readonly store: ClickHouseStore) {}

  /** Records submitted jobs as queued; recording one again changes nothing. */
  async record(messages: readonly JobMessage[]): Promise<void> {
    await this.store.insert("jobs_record", "jobs", messages.map((m) => toJobRow(queuedJob(m))));
  }

  async get(id: string): Promise<Job | null> {
    const [row] = await this.store.rows<JobReadRow>("jobs_get", jobByIdQuery(id));
    return row ? fromJobRow(row) : null;
  }

  /** Writes a new state of a job (a transition of jobTransitions.ts). */
  async write(job: Job): Promise<void> {
    await this.store.insert("jobs_write", "jobs", [toJobRow(job)]);
  }

  /**
   * Deletes the jobs of `types` submitted before `beforeMicros` (every state of each; a
   * mutation ClickHouse applies in the background) when one was submitted before
   * `whenOlderThanMicros`, so that a table trimmed daily is rewritten once a day, not at every
   * call. Their heartbeats and events stay: a few rows each, read by job id only.
   * Whether a delete was started.
   */
  async deleteSubmittedBefore(types: readonly string[], beforeMicros: number, whenOlderThanMicros: number): Promise<boolean> {
    if (types.length === 0) return false;
    const [row] = await this.store.rows<{ oldest: string | number }>("jobs_oldest", oldestSubmittedQuery(types));
    const oldest = Number(row?.oldest ?? 0);
    if (oldest === 0 || oldest >= whenOlderThanMicros) return false;
    await this.store.command("jobs_expire", deleteSubmittedBeforeQuery(alterTarget(this.store, "jobs"), types, beforeMicros));
    return true;
  }

  /** Per serial key, its next unfinished job, for the handled types; oldest first. */
  async nextPerSerialKey(types: readonly string[], limit: number): Promise<NextJob[]> {
    if (types.length === 0) return [];
    const jobs = (await this.store.rows<JobReadRow>("jobs_next", nextPerSerialKeyQuery(types, limit))).map(fromJobRow);
    const running = jobs.filter((j) => j.status === "running").map((j) => j.id);
    const beats = new Map<string, number>();
    if (running.length > 0) {
      const rows = await this.store.rows<{ job_id: string; beat_at: string | number }>("jobs_last_beats", lastBeatsQuery(running));
      for (const r of rows) beats.set(r.job_id, Number(r.beat_at));
    }
    return jobs.map((job) => ({ job, lastBeatAt: beats.get(job.id) ?? null }));
  }

  async beat(jobId: string, claimId: string, at: number): Promise<void> {
    await this.store.insert("jobs_beat", "job_heartbeats", [{ job_id: jobId, claim_id: claimId, beat_at: at }]);
  }

  async appendEvents(jobId: string, events: readonly JobEvent[]): Promise<void> {
    await this.store.insert("jobs_events_append", "job_events", events.map((e) => toJobEventRow(jobId, e)));
  }

  async lastEvent(jobId: string): Promise<JobEvent | null> {
    const [row] = await this.store.rows<JobEventReadRow>("jobs_last_event", lastEventQuery(jobId));
    return row ? fromJobEventRow(row) : null;
  }

  /**
   * The events after the one whose id is `after` (from the first when null), in order, at
   * most `limit`. An `after` that is not an event of this job is refused.
   */
  async events(jobId: string, page: { after: string | null; limit: number }): Promise<JobEventsPage> {
    let afterSeq = 0;
    if (page.after !== null) {
      const [row] = await this.store.rows<{ seq: string | number }>("jobs_event_seq", eventSeqQuery(jobId, page.after));
      if (!row) throw ValidationError.at(["query", "after"], `no event ${page.after} in job ${jobId}`);
      afterSeq = Number(row.seq);
    }
    const rows = await this.store.rows<JobEventReadRow>("jobs_events_page", eventsPageQuery(jobId, afterSeq, page.limit));
    return { events: rows.slice(0, page.limit).map(fromJobEventRow), hasMore: rows.length > page.limit };
  }
}
