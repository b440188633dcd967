import { ASSISTANT, END_OF_TURN, encodeText, turnTokens } from "./tokenizer.js";
import type { ChatTurn } from "./types.js";

/**
 * A token sequence with, for each position after the first, whether predicting that token
 * carries loss, and (RL) the logprob recorded for it when it was sampled (NaN: none recorded).
 */
export interface TrainingSequence {
  readonly tokens: number[];
  readonly trainable: boolean[];   // trainable[i]: token i (i ≥ 1) carries loss
  readonly recorded: number[];     // recorded[i]: logprob recorded for token i, or NaN
  readonly advantage: number;
}

export function emptySequence(advantage = 0): TrainingSequence {
  return { tokens: [], trainable: [], recorded: [], advantage };
}

export function appendTokens(s: TrainingSequence, tokens: readonly number[], trainable: boolean, recorded?: readonly number[]): void {
  tokens.forEach((t, i) => {
    s.tokens.push(t);
    s.trainable.push(trainable);
    s.recorded.push(recorded?.[i] ?? NaN);
  });
}

/** An assistant turn whose content (and closing `<|end|>`) is trained on. */
export function appendAssistantTurn(s: TrainingSequence, content: string, trainable: boolean, recorded?: readonly number[]): void {
  appendTokens(s, [ASSISTANT], false);
  appendTokens(s, [...encodeText(content), END_OF_TURN], trainable, recorded);
}

export function appendContextTurn(s: TrainingSequence, turn: ChatTurn): void {
  appendTokens(s, turnTokens(turn), false);
}

/** The last `contextLength + 1` tokens (the model reads at most `contextLength` and predicts the next). */
export function fitToContext(s: TrainingSequence, contextLength: number): TrainingSequence {
  const drop = Math.max(0, s.tokens.length - (contextLength + 1));
  return { tokens: s.tokens.slice(drop), trainable: s.trainable.slice(drop), recorded: s.recorded.slice(drop), advantage: s.advantage };
}

export function trainableCount(s: TrainingSequence): number {
  return s.trainable.slice(1).filter(Boolean).length;
}

/** The sequences of one step as flat arrays, padded to the longest: inputs [B, T], the rest [B·T]. */
export interface PackedBatch {
  readonly batch: number;
  readonly length: number;
  readonly inputs: Int32Array;
  readonly targets: Int32Array;
  readonly mask: Float32Array;
  readonly recorded: Float32Array;   // NaN → use the current policy's logprob
  readonly hasRecorded: Float32Array; // 1 where recorded is a number
  readonly advantages: Float32Array;
}

export function packBatch(sequences: readonly TrainingSequence[]): PackedBatch {
  const length = Math.max(1, ...sequences.map((s) => s.tokens.length - 1));
  const n = sequences.length * length;
  const packed = {
    batch: sequences.length, length,
    inputs: new Int32Array(n).fill(END_OF_TURN), targets: new Int32Array(n).fill(END_OF_TURN),
    mask: new Float32Array(n), recorded: new Float32Array(n), hasRecorded: new Float32Array(n), advantages: new Float32Array(n),
  };
  sequences.forEach((s, b) => {
    for (let t = 0; t + 1 < s.tokens.length; t++) {
      const at = b * length + t;
      const recorded = s.recorded[t + 1] ?? NaN;
      packed.inputs[at] = s.tokens[t] as number;
      packed.targets[at] = s.tokens[t + 1] as number;
      packed.mask[at] = s.trainable[t + 1] ? 1 : 0;
      packed.recorded[at] = Number.isNaN(recorded) ? 0 : recorded;
      packed.hasRecorded[at] = Number.isNaN(recorded) ? 0 : 1;
      packed.advantages[at] = s.advantage;
    }
  });
  return packed;
}
