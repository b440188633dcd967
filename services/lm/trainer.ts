import type * as tfTypes from "@tensorflow/tfjs";
import { tensorflow } from "./backend.js";
import { parameterTensors } from "./model.js";
import { Adam } from "./optimizer.js";
import { logitsAll, type TransformerConfig } from "./transformer.js";
import type { PackedBatch } from "./trainingSequences.js";
import type { StepMetrics } from "./types.js";
import { decodeWeights, encodeWeights } from "./weightsFormat.js";

type Tf = typeof tfTypes;
type Tensor = tfTypes.Tensor;

/** A batch on the backend: per position (flattened [B·T]) its token's logprob under the model being trained. */
export interface StepInputs {
  readonly logprobs: Tensor;       // [B·T, V] log-softmax of the logits
  readonly tokenLogprob: Tensor;   // [B·T] logprob of the target token
  readonly mask: Tensor;           // [B·T] 1 where the target carries loss
  readonly recorded: Tensor;       // [B·T] logprob recorded at sampling (0 where none)
  readonly hasRecorded: Tensor;    // [B·T] 1 where a logprob was recorded
  readonly advantages: Tensor;     // [B·T] the sequence's advantage
}

/** The loss of one step, and scalar tensors reported beside it (entropy, policy_loss, ...). */
export type Objective = (tf: Tf, inputs: StepInputs) => { readonly loss: Tensor; readonly metrics: Readonly<Record<string, Tensor>> };

/** Mean of `values` over the positions where `mask` is 1. */
export function maskedMean(tf: Tf, values: Tensor, mask: Tensor): Tensor {
  return tf.div(tf.sum(tf.mul(values, mask)), tf.maximum(tf.sum(mask), 1));
}

/** Mean entropy (nats) of the next-token distributions at trainable positions. */
export function meanEntropy(tf: Tf, inputs: StepInputs): Tensor {
  return maskedMean(tf, tf.neg(tf.sum(tf.mul(tf.exp(inputs.logprobs), inputs.logprobs), 1)), inputs.mask);
}

/** Identity whose gradient is zero (tfjs has no stop_gradient op). */
export function stopGradient(tf: Tf, x: Tensor): Tensor {
  const detach = tf.customGrad((...args: (Tensor | tfTypes.GradSaveFunc)[]) => ({
    value: tf.clone(args[0] as Tensor),
    gradFunc: (dy: Tensor | Tensor[]) => tf.zerosLike(dy as Tensor),
  }));
  return detach(x);
}

/** Weights being trained: parameters and Adam's moments on the backend, one gradient step at a time. */
export class Trainer {
  private readonly adam: Adam;

  private constructor(private readonly tf: Tf, readonly config: TransformerConfig, private readonly params: Record<string, Tensor>,
    readonly meta: Readonly<Record<string, string | number>>) {
    this.adam = new Adam(tf);
  }

  static async open(weights: Uint8Array): Promise<Trainer> {
    const decoded = decodeWeights(weights);
    const tf = await tensorflow();
    return new Trainer(tf, decoded.config, parameterTensors(tf, decoded), decoded.meta);
  }

  /** One Adam step on `objective` over the batch; returns loss, grad_norm and the objective's metrics. */
  step(batch: PackedBatch, objective: Objective, learningRate: number): StepMetrics {
    const tf = this.tf;
    const names = Object.keys(this.params);
    const tensors = {
      inputs: tf.tensor2d(batch.inputs, [batch.batch, batch.length], "int32"),
      targets: tf.tensor1d(batch.targets, "int32"),
      mask: tf.tensor1d(batch.mask), recorded: tf.tensor1d(batch.recorded),
      hasRecorded: tf.tensor1d(batch.hasRecorded), advantages: tf.tensor1d(batch.advantages),
    };
    let kept: Record<string, Tensor> = {};
    const { value, grads } = tf.valueAndGrads((...params: Tensor[]) => {
      const p = Object.fromEntries(names.map((name, i) => [name, params[i] as Tensor]));
      const logprobs = tf.logSoftmax(logitsAll(tf, this.config, p, tensors.inputs));
      const tokenLogprob = tf.sum(tf.mul(logprobs, tf.oneHot(tensors.targets, this.config.vocabSize).toFloat()), 1);
      const { loss, metrics } = objective(tf, { ...tensors, logprobs, tokenLogprob });
      kept = Object.fromEntries(Object.entries(metrics).map(([k, t]) => [k, tf.keep(t)]));
      return loss as tfTypes.Scalar;
    })(names.map((name) => this.params[name] as Tensor));
    const gradByName = Object.fromEntries(names.map((name, i) => [name, grads[i] as Tensor]));
    const gradNorm = this.adam.step(this.params, gradByName, learningRate);
    const metrics: StepMetrics = { loss: value.dataSync()[0] as number, grad_norm: gradNorm, learning_rate: learningRate };
    for (const [k, t] of Object.entries(kept)) metrics[k] = t.dataSync()[0] as number;
    tf.dispose([value, ...grads, ...Object.values(kept), ...Object.values(tensors)]);
    metrics.num_trainable_tokens = batch.mask.reduce((a, b) => a + b, 0);
    return metrics;
  }

  weights(meta: Readonly<Record<string, string | number>> = this.meta): Uint8Array {
    const tensors = new Map<string, Float32Array>();
    for (const [name, t] of Object.entries(this.params)) tensors.set(name, t.dataSync() as Float32Array);
    return encodeWeights({ config: this.config, tensors, meta });
  }

  dispose(): void {
    this.adam.dispose();
    for (const t of Object.values(this.params)) t.dispose();
  }
}
