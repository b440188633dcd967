import { yieldToEventLoop } from "./backend.js";
import { TrainingAbortedError, TrainingInputError } from "./errors.js";
import { maskedMean, meanEntropy, Trainer, type Objective } from "./trainer.js";
import { appendAssistantTurn, appendContextTurn, emptySequence, fitToContext, packBatch, trainableCount, type TrainingSequence } from "./trainingSequences.js";
import type { SftConfig, SftExample, StepMetrics, TrainingProgress, TrainingResult } from "./types.js";

const AUTO_BATCH_SIZE = 8;

/** Cross-entropy on the trainable tokens (mean per token). */
export const crossEntropy: Objective = (tf, inputs) => ({
  loss: tf.neg(maskedMean(tf, inputs.tokenLogprob, inputs.mask)),
  metrics: { entropy: meanEntropy(tf, inputs) },
});

function exampleSequence(example: SftExample, assistantTurns: SftConfig["assistantTurns"], contextLength: number): TrainingSequence {
  const lastAssistant = example.messages.map((m) => m.role).lastIndexOf("assistant");
  const s = emptySequence();
  example.messages.forEach((turn, i) => {
    if (turn.role === "assistant") appendAssistantTurn(s, turn.content, assistantTurns === "all" || i === lastAssistant);
    else appendContextTurn(s, turn);
  });
  return fitToContext(s, contextLength);
}

export function learningRateAt(rate: SftConfig["learningRate"], step: number): number {
  if (typeof rate === "number") return rate;
  const r = rate[Math.min(step, rate.length - 1)];
  if (r === undefined) throw new TrainingInputError("learning_rate is an empty list");
  return r;
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new TrainingAbortedError();
}

/**
 * One epoch over the examples in order, `batchSize` examples per Adam step ("auto": 8);
 * a list of learning rates gives step i the i-th (the last one for later steps).
 */
export async function trainSft(weights: Uint8Array, examples: readonly SftExample[], config: SftConfig,
  progress: TrainingProgress, signal?: AbortSignal): Promise<TrainingResult> {
  throwIfAborted(signal);
  const trainer = await Trainer.open(weights);
  try {
    const sequences = examples.map((e) => exampleSequence(e, config.assistantTurns, trainer.config.contextLength)).filter((s) => trainableCount(s) > 0);
    if (sequences.length === 0) throw new TrainingInputError("no example has an assistant turn to train on");
    const batchSize = config.batchSize === "auto" ? AUTO_BATCH_SIZE : Math.max(1, Math.floor(config.batchSize));
    progress.started(sequences.length);
    let last: StepMetrics = {};
    for (let step = 0; step * batchSize < sequences.length; step++) {
      throwIfAborted(signal);
      last = trainer.step(packBatch(sequences.slice(step * batchSize, (step + 1) * batchSize)), crossEntropy, learningRateAt(config.learningRate, step));
      progress.step(last);
      await yieldToEventLoop();
    }
    return { weights: trainer.weights(), metrics: last };
  } finally {
    trainer.dispose();
  }
}
