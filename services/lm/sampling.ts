import type { Random } from "./random.js";

/** Choosing the next token from logits, and the log-probabilities reported for it. */

export function logSoftmax(logits: Float32Array): Float64Array {
  let max = -Infinity;
  for (const l of logits) max = Math.max(max, l);
  let sum = 0;
  for (const l of logits) sum += Math.exp(l - max);
  const logZ = max + Math.log(sum);
  return Float64Array.from(logits, (l) => l - logZ);
}

export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if ((values[i] as number) > (values[best] as number)) best = i;
  return best;
}

/** Token ids ordered by logprob, highest first (ties by id), the first `k`. */
export function topTokens(logprobs: Float64Array, k: number): number[] {
  const ids = Array.from(logprobs.keys());
  ids.sort((a, b) => (logprobs[b] as number) - (logprobs[a] as number) || a - b);
  return ids.slice(0, k);
}

/** Below this, dividing logits by the temperature would overflow: greedy. */
const MIN_TEMPERATURE = 1e-6;

/**
 * Temperature 0 is greedy (argmax). Otherwise the logits are divided by the temperature,
 * the distribution is cut to the smallest set of tokens whose probability reaches `topP`
 * (nucleus sampling), and one token is drawn from it with the seeded generator.
 */
export function chooseToken(logits: Float32Array, temperature: number, topP: number, random: Random): number {
  if (temperature <= MIN_TEMPERATURE) return argmax(logits);
  const tempered = logSoftmax(Float32Array.from(logits, (l) => l / temperature));
  const order = topTokens(tempered, tempered.length);
  const kept: number[] = [];
  let mass = 0;
  for (const id of order) {
    kept.push(id);
    mass += Math.exp(tempered[id] as number);
    if (mass >= topP) break;
  }
  let r = random.next() * mass;
  for (const id of kept) {
    r -= Math.exp(tempered[id] as number);
    if (r < 0) return id;
  }
  return kept[kept.length - 1] as number;
}
