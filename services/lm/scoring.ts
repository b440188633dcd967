import { tensorflow } from "./backend.js";
import { parameterTensors } from "./model.js";
import { logitsAll } from "./transformer.js";
import { appendAssistantTurn, appendContextTurn, emptySequence, fitToContext } from "./trainingSequences.js";
import type { ChatTurn } from "./types.js";
import { decodeWeights } from "./weightsFormat.js";

/**
 * The log-probability that the model answers `turns` with exactly `content` and ends its turn
 * (sum over the content's bytes and the closing `<|end|>`): how tests and the bench see
 * training move a model.
 */
export async function completionLogprob(weights: Uint8Array, turns: readonly ChatTurn[], content: string): Promise<number> {
  const decoded = decodeWeights(weights);
  const tf = await tensorflow();
  const s = emptySequence();
  turns.forEach((turn) => appendContextTurn(s, turn));
  appendAssistantTurn(s, content, true);
  const seq = fitToContext(s, decoded.config.contextLength);
  const params = parameterTensors(tf, decoded);
  try {
    return tf.tidy(() => {
      const inputs = tf.tensor2d([seq.tokens.slice(0, -1)], [1, seq.tokens.length - 1], "int32");
      const logprobs = tf.logSoftmax(logitsAll(tf, decoded.config, params, inputs)).arraySync() as number[][];
      return seq.tokens.slice(1).reduce((sum, token, t) => (seq.trainable[t + 1] ? sum + (logprobs[t]?.[token] as number) : sum), 0);
    });
  } finally {
    tf.dispose(Object.values(params));
  }
}
