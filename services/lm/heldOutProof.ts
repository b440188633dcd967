import { bareDigitReward, digitQuestions, isHeldOutDigitQuestion, oneDigitPrompt, oneDigitReward, type DigitQuestion } from "./corpus.js";
import { loadModel } from "./model.js";
import { Random } from "./random.js";
import { trainRl } from "./rl.js";
import { RL_DEFAULTS } from "./trainingDefaults.js";
import type { ChatTurn, LanguageModel, RlGroup, RlTrajectory, SamplingOptions } from "./types.js";

/**
 * The held-out proof of RL (issue 10): RL rounds on prompts of a distribution, then the mean
 * reward on held-out prompts of the same distribution that RL never saw, before and after.
 *
 * The task is a format: questions answered by one digit ("How many legs does a spider have?
 * Answer with one digit.", "What is 3+4? Answer with one digit."), reward 1 when the answer is
 * one bare digit and the turn ends (corpus.ts bareDigitReward). The base model answers so about
 * two times in three (its corpus answers the digit 70% of the time, else "Eight." or "3+4=7").
 * The reward reads only the answer's form, so the behaviour RL reinforces is the same on every
 * question of the distribution, and it carries over to the held-out ones. Trained on 104 of the
 * 138 digit questions, measured on the other 34 (every fourth, isHeldOutDigitQuestion).
 * Also reported: the share of answers whose first digit is right (oneDigitReward), which the
 * format reward does not ask for.
 */
export interface ProofSettings {
  readonly rounds: number;
  /** Prompts per round, drawn from the training split; each is a group of `samples` completions. */
  readonly promptsPerRound: number;
  readonly samples: number;
  readonly learningRate: number;
  readonly seed: number;
  /** Seeded samples per held-out prompt at temperature 1 (the same seeds before and after). */
  readonly evalSamples: number;
  /** Held-out prompts measured (the first ones of the split); all 34 by default. */
  readonly heldOutPrompts?: number;
}

export const PROOF_DEFAULTS: ProofSettings = { rounds: 4, promptsPerRound: 8, samples: 8, learningRate: 1e-3, seed: 7, evalSamples: 8 };

export interface HeldOutScore {
  /** Mean format reward of the sampled answers. */
  readonly format: number;
  /** Share of sampled answers whose first digit is the right one. */
  readonly correct: number;
}

export interface ProofResult {
  readonly before: HeldOutScore;
  readonly after: HeldOutScore;
  /** Mean reward of each round's own samples (training prompts). */
  readonly trainRewards: readonly number[];
  readonly heldOutPrompts: number;
  readonly weights: Uint8Array;
}

/** How every answer of the proof is sampled, for training and for the held-out score. */
export const PROOF_SAMPLING: SamplingOptions = { temperature: 1, topP: 1, maxTokens: 8, stop: [], topLogprobs: 0 };

/** The one user turn asking a question of the proof. */
export const proofPrompt = (q: DigitQuestion): ChatTurn => ({ role: "user", content: oneDigitPrompt(q) });

/** The seed of held-out sample `sample` of held-out question `question`: the same before and after training. */
export const heldOutSeed = (question: number, sample: number): number => 1000 * question + sample;

/** The seed of the next training sample, drawn from the round's generator. */
export const trainingSampleSeed = (random: Random): number => random.int(2 ** 31);

export function proofSplit(): { train: DigitQuestion[]; heldOut: DigitQuestion[] } {
  const all = digitQuestions();
  return { train: all.filter((q) => !isHeldOutDigitQuestion(q)), heldOut: all.filter(isHeldOutDigitQuestion) };
}

export async function heldOutScore(weights: Uint8Array, questions: readonly DigitQuestion[], samples: number): Promise<HeldOutScore> {
  const model = await loadModel(weights);
  let format = 0;
  let correct = 0;
  try {
    for (const [i, q] of questions.entries()) {
      for (let s = 0; s < samples; s++) {
        const c = await model.complete([proofPrompt(q)], { ...PROOF_SAMPLING, seed: heldOutSeed(i, s) });
        format += bareDigitReward(c);
        correct += oneDigitReward(q, c.text);
      }
    }
  } finally {
    model.dispose();
  }
  const n = questions.length * samples;
  return { format: format / n, correct: correct / n };
}

async function sampledGroup(model: LanguageModel, q: DigitQuestion, samples: number, random: Random): Promise<RlTrajectory[]> {
  const trajectories: RlTrajectory[] = [];
  for (let s = 0; s < samples; s++) {
    const c = await model.complete([proofPrompt(q)], { ...PROOF_SAMPLING, seed: trainingSampleSeed(random) });
    trajectories.push({ reward: bareDigitReward(c), items: [{ kind: "context", turn: proofPrompt(q) }, { kind: "choice", choice: { content: c.text, sampled: c.tokens } }] });
  }
  return trajectories;
}

/** One round: sample groups on fresh training prompts with the current weights, then one `trainRl` call. */
async function rlRound(weights: Uint8Array, train: readonly DigitQuestion[], settings: ProofSettings, random: Random): Promise<{ weights: Uint8Array; reward: number }> {
  const model = await loadModel(weights);
  const groups: RlGroup[] = [];
  try {
    for (const q of roundQuestions(train, settings, random)) groups.push({ trajectories: await sampledGroup(model, q, settings.samples, random) });
  } finally {
    model.dispose();
  }
  const rewards = groups.flatMap((g) => g.trajectories.map((t) => t.reward));
  const result = await trainRl(weights, groups, { ...RL_DEFAULTS, learningRate: settings.learningRate }, { started: () => {}, step: () => {} });
  return { weights: result.weights, reward: rewards.reduce((a, b) => a + b, 0) / rewards.length };
}

/** The held-out questions a proof with these settings measures. */
export function heldOutQuestions(settings: ProofSettings): DigitQuestion[] {
  const heldOut = proofSplit().heldOut;
  return heldOut.slice(0, settings.heldOutPrompts ?? heldOut.length);
}

/** The training questions of one round, drawn from the proof's generator. */
export function roundQuestions(train: readonly DigitQuestion[], settings: ProofSettings, random: Random): DigitQuestion[] {
  return random.shuffle(train).slice(0, settings.promptsPerRound);
}

export async function runHeldOutProof(base: Uint8Array, settings: ProofSettings = PROOF_DEFAULTS): Promise<ProofResult> {
  const split = proofSplit();
  const heldOut = heldOutQuestions(settings);
  const before = await heldOutScore(base, heldOut, settings.evalSamples);
  const random = new Random(settings.seed);
  const trainRewards: number[] = [];
  let weights = base;
  for (let round = 0; round < settings.rounds; round++) {
    const r = await rlRound(weights, split.train, settings, random);
    weights = r.weights;
    trainRewards.push(r.reward);
  }
  return { before, after: await heldOutScore(weights, heldOut, settings.evalSamples), trainRewards, heldOutPrompts: heldOut.length, weights };
}
