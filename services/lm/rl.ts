import type * as tfTypes from "@tensorflow/tfjs";
import { yieldToEventLoop } from "./backend.js";
import { TrainingInputError } from "./errors.js";
import { throwIfAborted } from "./sft.js";
import { encodeText } from "./tokenizer.js";
import { maskedMean, meanEntropy, stopGradient, Trainer, type Objective } from "./trainer.js";
import { appendAssistantTurn, appendContextTurn, emptySequence, fitToContext, packBatch, type TrainingSequence } from "./trainingSequences.js";
import type { RlChoice, RlConfig, RlGroup, RlTrajectory, StepMetrics, TrainingProgress, TrainingResult } from "./types.js";

type Tf = typeof tfTypes;

/** Trajectories per gradient step: a typical job (a few groups of a few trajectories) is one step. */
export const RL_BATCH_SIZE = 32;

/** Reward minus the group's mean, divided by the group's standard deviation when asked (0 when all rewards are equal). */
export function groupAdvantages(rewards: readonly number[], normalize: boolean): number[] {
  const mean = rewards.reduce((a, b) => a + b, 0) / Math.max(1, rewards.length);
  const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / Math.max(1, rewards.length));
  return rewards.map((r) => (normalize ? (std > 1e-8 ? (r - mean) / std : 0) : r - mean));
}

/** The logprobs recorded for the choice's bytes, when they are one per byte of its content; else undefined. */
export function recordedLogprobs(choice: RlChoice): number[] | undefined {
  const bytes = encodeText(choice.content);
  const sampled = choice.sampled;
  if (!sampled || sampled.length !== bytes.length) return undefined;
  const lineUp = sampled.every((s, i) => s.bytes.length === 1 && s.bytes[0] === bytes[i] && Number.isFinite(s.logprob));
  return lineUp ? sampled.map((s) => s.logprob) : undefined;
}

function trajectorySequence(trajectory: RlTrajectory, advantage: number, contextLength: number): TrainingSequence {
  const s = emptySequence(advantage);
  for (const item of trajectory.items) {
    if (item.kind === "context") appendContextTurn(s, item.turn);
    else appendAssistantTurn(s, item.choice.content, true, recordedLogprobs(item.choice));
  }
  return fitToContext(s, contextLength);
}

/**
 * Policy gradient on the choices' tokens. The ratio is new/old probability, the old one being
 * the logprob recorded when the token was sampled (the current policy's, detached, when none
 * was recorded: ratio 1). PPO: −min(ratio·A, clip(ratio, 1−ε, 1+ε_high)·A). CISPO: the clipped
 * ratio, detached, weights −A·logprob.
 */
export function policyObjective(config: RlConfig): Objective {
  return (tf: Tf, inputs) => {
    const current = stopGradient(tf, inputs.tokenLogprob);
    const old = tf.add(tf.mul(inputs.recorded, inputs.hasRecorded), tf.mul(current, tf.sub(1, inputs.hasRecorded)));
    const ratio = tf.exp(tf.sub(inputs.tokenLogprob, old));
    const clipped = tf.clipByValue(ratio, 1 - config.epsilon, 1 + config.epsilonHigh);
    const perToken = config.lossFn === "cispo"
      ? tf.neg(tf.mul(tf.mul(stopGradient(tf, clipped), inputs.advantages), inputs.tokenLogprob))
      : tf.neg(tf.minimum(tf.mul(ratio, inputs.advantages), tf.mul(clipped, inputs.advantages)));
    const loss = maskedMean(tf, perToken, inputs.mask);
    const outside = tf.cast(tf.notEqual(ratio, clipped), "float32");
    return { loss, metrics: { policy_loss: tf.clone(loss), entropy: meanEntropy(tf, inputs), clip_fraction: maskedMean(tf, outside, inputs.mask) } };
  };
}

function rewardStats(trajectories: readonly { reward: number }[]): { reward: number; reward_std_dev: number } {
  const rewards = trajectories.map((t) => t.reward);
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  return { reward: mean, reward_std_dev: Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length) };
}

/** Advantages per group, then one Adam step per `RL_BATCH_SIZE` trajectories (in the order given). */
export async function trainRl(weights: Uint8Array, groups: readonly RlGroup[], config: RlConfig,
  progress: TrainingProgress, signal?: AbortSignal): Promise<TrainingResult> {
  throwIfAborted(signal);
  const trainer = await Trainer.open(weights);
  try {
    const items = groups.flatMap((g) => {
      const advantages = groupAdvantages(g.trajectories.map((t) => t.reward), config.normalizeAdvantages);
      return g.trajectories.map((t, i) => ({ reward: t.reward, sequence: trajectorySequence(t, advantages[i] as number, trainer.config.contextLength) }));
    });
    if (!items.some((item) => item.sequence.trainable.some(Boolean))) throw new TrainingInputError("no trajectory has a choice to train on");
    progress.started(items.length);
    const objective = policyObjective(config);
    let last: StepMetrics = {};
    for (let from = 0; from < items.length; from += RL_BATCH_SIZE) {
      throwIfAborted(signal);
      const batch = items.slice(from, from + RL_BATCH_SIZE);
      last = { ...trainer.step(packBatch(batch.map((b) => b.sequence)), objective, config.learningRate), ...rewardStats(batch) };
      progress.step(last);
      await yieldToEventLoop();
    }
    return { weights: trainer.weights(), metrics: last };
  } finally {
    trainer.dispose();
  }
}
