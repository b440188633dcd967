import { RL_JOB, RlJobInput, SFT_JOB, SftJobInput, type TrainingOutput } from "../../contract/trainingJobs.js";
import { RetryableError, errorText } from "../../errors.js";
import type { JsonObject } from "../../json.js";
import type { ClickHouseStore } from "../../store/clickhouse.js";
import { TrainerMessages, type TrainerMessage } from "../../store/training/trainerMessages.js";
import { projectIdOf, type ModelRecord } from "../../store/training/trainingRows.js";
import type { JobContext, JobHandler } from "./handler.js";
import { parseInput } from "./trainerJob.js";
import { decodeWeights } from "../../lm/weightsFormat.js";
import { TrainingCheckpoints, type BaseWeights } from "./trainingCheckpoints.js";

/**
 * The relay to an external trainer (`TRAINER=external`): the training job handler does not
 * train; it offers the job's attempt to trainers that speak the HTTP protocol of
 * services/training/trainerRoutes.ts (docs/training.md, "External trainer protocol") and turns what the
 * chosen trainer sends into the job's events, checkpoint and end. Claims, heartbeats and the
 * job's state stay with the job runner that runs this handler; the trainer needs only HTTP.
 *
 * An attempt: `offered` → the first trainer's `claim` is `assigned` → its messages in `seq`
 * order (a gap waits for the missing one) → `training_ended` (the checkpoint is added, the job
 * completes) or `training_failed` (the job fails; `retryable: true` retries it as the next
 * attempt, offered again). No message from the assigned trainer for `leaseMs` fails the job.
 * Waiting for a claim has no time limit (the job shows RUNNING meanwhile).
 */
export interface RelaySettings {
  /** Longest silence of the assigned trainer before the job fails. */
  readonly leaseMs: number;
  /** How often the relay reads the mailbox. */
  readonly pollMs: number;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

export function trainerRelayJobs(store: ClickHouseStore, settings: RelaySettings, baseWeights: BaseWeights): Record<string, JobHandler> {
  const relay = new TrainerRelay(store, settings, baseWeights);
  return {
    [RL_JOB]: (input, ctx) => relay.run(parseInput(RlJobInput, input, RL_JOB).model_id, ctx),
    [SFT_JOB]: (input, ctx) => relay.run(parseInput(SftJobInput, input, SFT_JOB).model_id, ctx),
  };
}

class TrainerRelay {
  private readonly checkpoints: TrainingCheckpoints;
  private readonly mailbox: TrainerMessages;

  constructor(store: ClickHouseStore, private readonly settings: RelaySettings, baseWeights: BaseWeights) {
    this.checkpoints = new TrainingCheckpoints(store, baseWeights);
    this.mailbox = new TrainerMessages(store);
  }

  async run(modelId: string, ctx: JobContext): Promise<TrainingOutput> {
    const model = await this.checkpoints.liveModel(modelId);
    const earlier = await this.checkpoints.earlierOutput(model, ctx.jobId);
    if (earlier) return earlier;
    await this.mailbox.offer(ctx.jobId, ctx.attempt, projectIdOf(model));
    try {
      const trainer = await this.assignedTrainer(ctx);
      return await this.relay(model, trainer, ctx);
    } finally {
      // An interrupted run (its runner stops) leaves the offer open: the run that resumes the attempt keeps it.
      if (!ctx.signal.aborted) await this.mailbox.close(ctx.jobId, ctx.attempt).catch(() => undefined);
    }
  }

  /** The trainer of this attempt: the one assigned before (a resumed run), else the earliest claim. */
  private async assignedTrainer(ctx: JobContext): Promise<string> {
    for (;;) {
      ctx.signal.throwIfAborted();
      const control = await this.mailbox.control(ctx.jobId, ctx.attempt);
      const assigned = control.find((m) => m.type === "assigned");
      if (assigned) return String(assigned.data.trainer_id);
      const first = control.filter((m) => m.type === "claim").sort((a, b) => a.receivedAt - b.receivedAt || a.trainerId.localeCompare(b.trainerId))[0];
      if (first) {
        await this.mailbox.assign(ctx.jobId, ctx.attempt, first.trainerId);
        return first.trainerId;
      }
      await sleep(this.settings.pollMs, ctx.signal);
    }
  }

  private async relay(model: ModelRecord, trainer: string, ctx: JobContext): Promise<TrainingOutput> {
    let lastSeq = 0;
    let lastSign = Date.now();
    for (;;) {
      ctx.signal.throwIfAborted();
      const messages = inOrder(await this.mailbox.after(ctx.jobId, ctx.attempt, trainer, lastSeq), lastSeq);
      for (const message of messages) {
        lastSeq = message.seq;
        lastSign = Date.now();
        const output = await this.handle(model, message, ctx);
        if (output) return output;
      }
      if (Date.now() - lastSign > this.settings.leaseMs) {
        throw new Error(`external trainer ${trainer} sent nothing for ${Math.round(this.settings.leaseMs / 1000)} s (TRAINER_LEASE_MS); it is taken for dead`);
      }
      await sleep(this.settings.pollMs, ctx.signal);
    }
  }

  /** One message of the trainer: an event to store, the end (the output), or a failure (thrown). */
  private async handle(model: ModelRecord, message: TrainerMessage, ctx: JobContext): Promise<TrainingOutput | null> {
    switch (message.type) {
      case "heartbeat":
        return null;
      case "training_started":
      case "gradient_step":
        await ctx.progress({ type: message.type, data: message.data });
        return null;
      case "training_ended":
        return this.ended(model, message.data, ctx);
      case "training_failed": {
        const text = `external trainer failed: ${String(message.data.error_message ?? "")}`;
        throw message.data.retryable === true ? new RetryableError(text) : new Error(text);
      }
      default:
        throw new Error(`external trainer sent a message of unknown type ${message.type}`);
    }
  }

  /** The trainer's weights must be a file of the model's project in the model's format; then the checkpoint is added. */
  private async ended(model: ModelRecord, data: JsonObject, ctx: JobContext): Promise<TrainingOutput> {
    const digest = String(data.weights_digest ?? "");
    const weights = await this.checkpoints.weights.get(projectIdOf(model), digest);
    if (!weights) throw new Error(`external trainer ended with weights_digest ${digest}, which is not a file of project ${projectIdOf(model)}`);
    try {
      decodeWeights(weights);
    } catch (err) {
      throw new Error(`external trainer's weights ${digest} are not model weights: ${errorText(err)}`);
    }
    const metrics = (data.metrics ?? {}) as Record<string, number>;
    return this.checkpoints.addCheckpoint(model, ctx.jobId, digest, metrics);
  }
}

/** The messages that follow `lastSeq` without a gap (a missing seq is waited for). */
function inOrder(messages: readonly TrainerMessage[], lastSeq: number): TrainerMessage[] {
  const out: TrainerMessage[] = [];
  for (const m of messages) {
    if (m.seq !== lastSeq + out.length + 1) break;
    out.push(m);
  }
  return out;
}
