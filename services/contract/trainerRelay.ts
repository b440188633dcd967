import { JsonObject } from "./common.js";
import { ANY_KEY, LOOKED_UP_PROJECT, operation } from "./operation.js";
import { TRAINING_JOB_TYPES } from "./trainingJobs.js";
import { z } from "./zod.js";

/**
 * The external trainer protocol (`TRAINER=external`; docs/training.md, "External trainer protocol";
 * the relay is worker/jobs/trainerRelay.ts, the routes training/trainerRoutes.ts): a trainer
 * in any language claims a training job's attempt, downloads the starting weights with
 * `/file/content`, sends its events in `seq` order, uploads the new weights with
 * `/file/create` and ends the attempt with `training_ended` {weights_digest}.
 */
const TAG = "Trainer";

const TrainerId = z.string().min(1).max(128).openapi({ description: "the trainer's own name, the same in its claim and its messages" });

export const TrainerClaimReq = z.object({ trainer_id: TrainerId }).openapi("TrainerClaimReq");

export const TrainerJob = z
  .object({
    id: z.string(),
    attempt: z.number().int().openapi({ description: "send it back with every message of this attempt" }),
    type: z.enum(TRAINING_JOB_TYPES),
    input: JsonObject.openapi({ description: "the job's input (contract/trainingJobs.ts): model_id, project_id, base_model, then RL or SFT fields" }),
    weights: z
      .object({ project_id: z.string(), digest: z.string() })
      .openapi({ description: "the starting weights (THLM format): `POST /file/content` {project_id, digest}" }),
  })
  .openapi("TrainerJob");
export type TrainerJob = z.infer<typeof TrainerJob>;

export const TrainerClaimRes = z.object({ job: TrainerJob.nullable() }).openapi("TrainerClaimRes");

const Numbers = z.record(z.string(), z.number());

/** The trainer's messages, one per seq from 1; the data of each type is checked before it is stored. */
const messageOf = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ trainer_id: TrainerId, attempt: z.number().int().min(1), seq: z.number().int().min(1).max(1_000_000_000), type: z.literal(type), data });

export const TrainerMessageReq = z
  .discriminatedUnion("type", [
    messageOf("heartbeat", z.object({}).default({})),
    messageOf("training_started", z.object({ num_sequences: z.number().int().min(0) })),
    messageOf("gradient_step", Numbers),
    messageOf("training_ended", z.object({ weights_digest: z.string().min(1).max(256), metrics: Numbers.default({}) })),
    messageOf("training_failed", z.object({ error_message: z.string().max(10_000), retryable: z.boolean().default(false) })),
  ])
  .openapi("TrainerMessageReq");
export type TrainerMessageReq = z.infer<typeof TrainerMessageReq>;

export const TrainerMessageRes = z.object({}).openapi("TrainerMessageRes");
export const TrainerJobParams = z.object({ job_id: z.string().min(1).max(64) });

export const trainerClaimOp = operation({
  id: "trainer_claim", method: "post", path: "/v1/trainer/claim", summary: "An external trainer claims the oldest training job waiting for one", tag: TAG,
  // Any key; only jobs of projects the key reaches are offered to it.
  body: TrainerClaimReq, response: TrainerClaimRes, role: "writer", scope: ANY_KEY,
});
export const trainerMessageOp = operation({
  id: "trainer_message", method: "post", path: "/v1/trainer/jobs/{job_id}/messages", summary: "An external trainer's event, heartbeat or end for a job it claimed", tag: TAG,
  params: TrainerJobParams, body: TrainerMessageReq, response: TrainerMessageRes, role: "writer", scope: LOOKED_UP_PROJECT,
});
