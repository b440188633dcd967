import { JsonObject } from "./common.js";
import { RlExperimentalConfig, SftConfig, TrajectoryGroup } from "./training.js";
import { z } from "./zod.js";

/**
 * The training jobs on the jobs topic (the trainer protocol, worker/jobs/runner.ts and the
 * docs/training.md, "Training API"): what the training routes submit and a trainer runs. Serial key:
 * the model id, so that the jobs of one model run one at a time, in order.
 */
export const RL_JOB = "training.rl";
export const SFT_JOB = "training.sft";
export const TRAINING_JOB_TYPES = [RL_JOB, SFT_JOB] as const;
export type TrainingJobType = (typeof TRAINING_JOB_TYPES)[number];

const Common = {
  model_id: z.string().min(1),
  /** `<entity>/<project>` of the model: its weights files live there. */
  project_id: z.string().min(1),
  base_model: z.string().min(1),
};

export const RlJobInput = z.object({ ...Common, trajectory_groups: z.array(TrajectoryGroup), experimental_config: RlExperimentalConfig.nullish() });
export type RlJobInput = z.infer<typeof RlJobInput>;

export const SftJobInput = z.object({ ...Common, training_data_url: z.string().min(1), config: SftConfig.nullish(), experimental_config: JsonObject.nullish() });
export type SftJobInput = z.infer<typeof SftJobInput>;

/** A trainer's output, kept as the job's output: the checkpoint it added. */
export const TrainingOutput = z.object({ checkpoint_id: z.string(), step: z.number().int(), metrics: z.record(z.string(), z.number()) });
export type TrainingOutput = z.infer<typeof TrainingOutput>;

export const isTrainingJobType = (type: string): type is TrainingJobType => (TRAINING_JOB_TYPES as readonly string[]).includes(type);
