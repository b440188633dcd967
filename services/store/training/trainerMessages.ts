import type { JsonObject } from "../../json.js";
import type { ClickHouseStore } from "../clickhouse.js";
import type { Migration } from "../migrations.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";

/**
 * `trainer_messages`: the external trainer relay's mailbox (worker/jobs/trainerRelay.ts,
 * training/trainerRoutes.ts). One row per message of one attempt of a training job:
 * - `offered` (written by the relay when it starts an attempt; data {project_id}),
 * - `claim` (a trainer asks for the attempt; one row per trainer),
 * - `assigned` (the relay's choice among the claims: the earliest; data {trainer_id}),
 * - `closed` (the relay left the attempt: it ended, failed or was interrupted),
 * all with `seq` 0; then the assigned trainer's own messages with `seq` 1, 2, 3, ...
 * (heartbeat, training_started, gradient_step, training_ended, training_failed).
 * A message sent again with the same seq replaces the first (the key is job, attempt,
 * trainer, seq, type), so a trainer may retry a POST whose answer it lost.
 */
export const TRAINER_MESSAGES_MIGRATION: Migration = {
  version: 35,
  name: "trainer_messages",
  statements: [
    `CREATE TABLE IF NOT EXISTS trainer_messages (
      job_id String,
      attempt UInt32,
      trainer_id String,
      seq UInt32,
      type String,
      data String,
      received_at Int64
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (job_id, attempt, trainer_id, seq, type)`,
  ],
};

export interface TrainerMessage {
  readonly trainerId: string;
  readonly seq: number;
  readonly type: string;
  readonly data: JsonObject;
  readonly receivedAt: number;
}

/** An attempt a relay offered and no trainer was assigned yet. */
export interface OfferedAttempt {
  readonly jobId: string;
  readonly attempt: number;
  readonly projectId: string;
}

interface MessageRow {
  trainer_id: string;
  seq: number | string;
  type: string;
  data: string;
  received_at: number | string;
}

const built = (pb: ParamBuilder, sql: string): BuiltQuery => ({ sql, params: pb.params });

const fromRow = (r: MessageRow): TrainerMessage => ({
  trainerId: r.trainer_id, seq: Number(r.seq), type: r.type, data: JSON.parse(r.data) as JsonObject, receivedAt: Number(r.received_at),
});

/** Oldest offers first; only attempts whose relay is still there and has chosen no trainer. */
function openOffersQuery(limit: number): BuiltQuery {
  const pb = new ParamBuilder();
  return built(
    pb,
    `SELECT job_id, attempt, anyIf(data, type = 'offered') AS offer, min(received_at) AS since
     FROM trainer_messages FINAL
     WHERE seq = 0 AND type IN ('offered', 'assigned', 'closed')
     GROUP BY job_id, attempt
     HAVING countIf(type = 'offered') > 0 AND countIf(type IN ('assigned', 'closed')) = 0
     ORDER BY since, job_id LIMIT ${pb.count(limit)}`,
  );
}

function attemptMessagesQuery(jobId: string, attempt: number, where: string, pb: ParamBuilder): BuiltQuery {
  return built(
    pb,
    `SELECT trainer_id, seq, type, data, received_at FROM trainer_messages FINAL
     WHERE job_id = ${pb.str(jobId)} AND attempt = ${pb.count(attempt)} AND ${where}
     ORDER BY seq, received_at, trainer_id`,
  );
}

export class TrainerMessages {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly now: () => number = () => Date.now() * 1000,
  ) {}

  private async write(jobId: string, attempt: number, trainerId: string, seq: number, type: string, data: JsonObject): Promise<void> {
    const row = { job_id: jobId, attempt, trainer_id: trainerId, seq, type, data: JSON.stringify(data), received_at: this.now() };
    await this.store.insert("trainer_messages_write", "trainer_messages", [row]);
  }

  offer(jobId: string, attempt: number, projectId: string): Promise<void> {
    return this.write(jobId, attempt, "", 0, "offered", { project_id: projectId });
  }

  close(jobId: string, attempt: number): Promise<void> {
    return this.write(jobId, attempt, "", 0, "closed", {});
  }

  claim(jobId: string, attempt: number, trainerId: string): Promise<void> {
    return this.write(jobId, attempt, trainerId, 0, "claim", {});
  }

  assign(jobId: string, attempt: number, trainerId: string): Promise<void> {
    return this.write(jobId, attempt, "", 0, "assigned", { trainer_id: trainerId });
  }

  /** A trainer's own message (seq ≥ 1). */
  send(jobId: string, attempt: number, message: { trainerId: string; seq: number; type: string; data: JsonObject }): Promise<void> {
    return this.write(jobId, attempt, message.trainerId, message.seq, message.type, message.data);
  }

  async openOffers(limit: number): Promise<OfferedAttempt[]> {
    const rows = await this.store.rows<{ job_id: string; attempt: number | string; offer: string }>("trainer_open_offers", openOffersQuery(limit));
    return rows.map((r) => ({ jobId: r.job_id, attempt: Number(r.attempt), projectId: String((JSON.parse(r.offer) as JsonObject).project_id ?? "") }));
  }

  /** The offer/claim/assigned/closed rows of an attempt, in the order received. */
  async control(jobId: string, attempt: number): Promise<TrainerMessage[]> {
    const pb = new ParamBuilder();
    return (await this.store.rows<MessageRow>("trainer_control", attemptMessagesQuery(jobId, attempt, "seq = 0", pb))).map(fromRow);
  }

  /** The trainer the relay assigned the attempt to, or null. */
  async assignee(jobId: string, attempt: number): Promise<string | null> {
    const assigned = (await this.control(jobId, attempt)).find((m) => m.type === "assigned");
    return assigned ? String(assigned.data.trainer_id) : null;
  }

  /** A trainer's messages of an attempt after `afterSeq`, by seq. */
  async after(jobId: string, attempt: number, trainerId: string, afterSeq: number): Promise<TrainerMessage[]> {
    const pb = new ParamBuilder();
    const where = `trainer_id = ${pb.str(trainerId)} AND seq > ${pb.count(afterSeq)}`;
    return (await this.store.rows<MessageRow>("trainer_messages_after", attemptMessagesQuery(jobId, attempt, where, pb))).map(fromRow);
  }
}
