import type { Logger } from "pino";
import { uuidv7 } from "../../ids.js";
import type { JsonObject } from "../../json.js";
import type { JobMessage } from "../../queue/jobs.js";
import type { BatchHandler, EventPublisher } from "../../queue/queue.js";
import type { JobsRepository } from "../../store/jobs/jobsRepository.js";
import { MonotonicClock, type Clock } from "../../times.js";
import { errorText } from "../../errors.js";

export interface JobSubmission {
  readonly type: string;
  readonly input: JsonObject;
  /** Jobs of one key run one at a time, in submission order; none: the job runs on its own. */
  readonly serialKey?: string;
  /** The job's id when the submitter chose it (a UUIDv7, e.g. the id of the call the job writes); default: a new one. */
  readonly id?: string;
}

/**
 * Submits jobs (runner.ts, step 1): publishes the job, which makes it durable, then records
 * it as queued so that its status reads at once. If that record fails after the publish,
 * the job is still accepted (the consumer records it when it reads the message): answering
 * an error for a job that will run would make a client submit it twice.
 */
export class JobSubmitter {
  constructor(
    private readonly publisher: EventPublisher<JobMessage>,
    private readonly jobs: JobsRepository,
    private readonly log: Logger,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  async submit(submission: JobSubmission): Promise<JobMessage> {
    const submittedAt = this.clock.nowMicros();
    const id = submission.id ?? uuidv7(Math.floor(submittedAt / 1000));
    const message: JobMessage = { id, type: submission.type, serial_key: submission.serialKey ?? id, input: submission.input, submitted_at: submittedAt };
    await this.publisher.publish([message]);
    try {
      await this.jobs.record([message]);
    } catch (err) {
      this.log.warn({ job: id, err: errorText(err) }, "submitted job not recorded yet; the consumer will");
    }
    return message;
  }
}

/**
 * The consumer side of the jobs topic (runner.ts, step 1): records what it reads and wakes
 * the runner; it never waits for a job to run. Redelivered messages record nothing new.
 */
export function jobIntake(jobs: JobsRepository, onRecorded: () => void = () => {}): BatchHandler<JobMessage> {
  return async (messages) => {
    await jobs.record(messages);
    onRecorded();
  };
}
