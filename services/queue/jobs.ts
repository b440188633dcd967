import { z } from "zod";
import { isJsonObject, type JsonObject } from "../json.js";
import type { Topic } from "./queue.js";

/**
 * A job as it travels on the jobs topic (see worker/jobs/runner.ts for the protocol).
 * Keyed by `serial_key`: the jobs of one key stay in order in one partition.
 */
export interface JobMessage {
  /** A UUID (v7: ordered by submission time). */
  readonly id: string;
  /** Which handler runs it, e.g. `evaluation`, `training`. */
  readonly type: string;
  /** Jobs of one serial key run one at a time, in submission order (e.g. a model id). */
  readonly serial_key: string;
  /** The handler's input; its shape is the handler's business. */
  readonly input: JsonObject;
  /** µs since the epoch. */
  readonly submitted_at: number;
}

export const JobMessageSchema = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  serial_key: z.string().min(1),
  input: z.custom<JsonObject>((value) => isJsonObject(value)),
  submitted_at: z.number().int(),
}) satisfies z.ZodType<JobMessage>;

export function jobsTopic(name: string): Topic<JobMessage> {
  return { name, key: (job) => job.serial_key, schema: JobMessageSchema };
}
