import { initialParameters, type TransformerConfig } from "../../services/lm/transformer.js";
import { VOCAB_SIZE } from "../../services/lm/tokenizer.js";
import { encodeWeights } from "../../services/lm/weightsFormat.js";
import type { StepMetrics, TrainingProgress } from "../../services/lm/index.js";

/** A model small enough that tests train it in a second. */
export const TINY: TransformerConfig = { vocabSize: VOCAB_SIZE, contextLength: 48, dModel: 32, layers: 1, heads: 2, ffDim: 64 };

export function tinyWeights(seed = 1): Uint8Array {
  return encodeWeights({ config: TINY, tensors: initialParameters(TINY, seed), meta: { test: "tiny" } });
}

/** A TrainingProgress that records what it is told. */
export function recorder(): TrainingProgress & { sequences: number[]; steps: StepMetrics[] } {
  const sequences: number[] = [];
  const steps: StepMetrics[] = [];
  return { sequences, steps, started: (n) => sequences.push(n), step: (m) => steps.push(m) };
}

export const SAY_IT = [{ role: "user" as const, content: "Say it" }];
export const SENTENCE = "The cat sat on the mat.";

/** The tiny model after SFT on one dialog until its greedy answer is that dialog's sentence. */
export async function memorizedWeights(): Promise<Uint8Array> {
  const { trainSft } = await import("../../services/lm/index.js");
  const examples = Array.from({ length: 160 }, () => ({ messages: [...SAY_IT, { role: "assistant" as const, content: SENTENCE }] }));
  const result = await trainSft(tinyWeights(3), examples, { learningRate: 1e-2, batchSize: 8, assistantTurns: "all" }, recorder());
  return result.weights;
}
