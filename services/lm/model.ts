import type * as tfTypes from "@tensorflow/tfjs";
import { tensorflow, yieldToEventLoop } from "./backend.js";
import { Random } from "./random.js";
import { chooseToken, logSoftmax, topTokens } from "./sampling.js";
import { firstStop, settledLength } from "./stopStrings.js";
import { decodeBytes, encodeText, isSpecial, promptTokens, tokenEntry } from "./tokenizer.js";
import { logitsLast, parameterShapes, type Parameters, type TransformerConfig } from "./transformer.js";
import type { ChatTurn, Completion, LanguageModel, SamplingOptions, TokenLogprob } from "./types.js";
import { decodeWeights, type ModelWeights } from "./weightsFormat.js";

type Tf = typeof tfTypes;

/** Parameter tensors on the backend for decoded weights (the caller disposes them). */
export function parameterTensors(tf: Tf, weights: ModelWeights): Record<string, tfTypes.Tensor> {
  const out: Record<string, tfTypes.Tensor> = {};
  for (const [name, shape] of parameterShapes(weights.config)) out[name] = tf.tensor(weights.tensors.get(name) as Float32Array, shape);
  return out;
}

interface Generation {
  readonly bytes: number[];
  readonly tokens: TokenLogprob[];
  streamed: number;
}

class TransformerModel implements LanguageModel {
  constructor(private readonly tf: Tf, private readonly config: TransformerConfig, private readonly params: Parameters) {}

  countPromptTokens(turns: readonly ChatTurn[]): number {
    return promptTokens(turns).length;
  }

  /** Next-token logits for a context; only its last `contextLength` tokens are seen (a sliding window). */
  private nextLogits(context: readonly number[]): Float32Array {
    const window = context.slice(-this.config.contextLength);
    return this.tf.tidy(() => {
      const tokens = this.tf.tensor2d([window], [1, window.length], "int32");
      return logitsLast(this.tf, this.config, this.params, tokens).dataSync() as Float32Array;
    });
  }

  async complete(turns: readonly ChatTurn[], options: SamplingOptions, onToken?: (token: TokenLogprob) => void): Promise<Completion> {
    const prompt = promptTokens(turns);
    const context = [...prompt];
    const random = new Random(options.seed);
    const stops = options.stop.map(encodeText);
    const out: Generation = { bytes: [], tokens: [], streamed: 0 };
    const emit = (upTo: number): void => {
      for (; out.streamed < upTo; out.streamed++) onToken?.(out.tokens[out.streamed] as TokenLogprob);
    };
    let finishReason: Completion["finishReason"] = "length";
    while (out.bytes.length < options.maxTokens) {
      const logits = this.nextLogits(context);
      const token = chooseToken(logits, options.temperature, options.topP, random);
      if (isSpecial(token)) {
        finishReason = "stop";
        break;
      }
      const logprobs = logSoftmax(logits);
      const alternatives = topTokens(logprobs, options.topLogprobs).map((id) => tokenEntry(id, logprobs[id] as number));
      out.tokens.push({ ...tokenEntry(token, logprobs[token] as number), top_logprobs: alternatives });
      out.bytes.push(token);
      context.push(token);
      const stopAt = firstStop(out.bytes, stops);
      if (stopAt >= 0) {
        out.bytes.length = stopAt;
        out.tokens.length = stopAt;
        finishReason = "stop";
        break;
      }
      emit(settledLength(out.bytes, stops));
      await yieldToEventLoop();
    }
    emit(out.tokens.length);
    return {
      text: decodeBytes(out.bytes),
      tokens: out.tokens,
      finishReason,
      promptTokens: prompt.length,
      completionTokens: out.tokens.length,
    };
  }

  dispose(): void {
    for (const t of Object.values(this.params)) t.dispose();
  }
}

export async function loadModel(weights: Uint8Array): Promise<LanguageModel> {
  const decoded = decodeWeights(weights);
  const tf = await tensorflow();
  return new TransformerModel(tf, decoded.config, parameterTensors(tf, decoded));
}
