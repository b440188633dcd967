/** The public types of the built-in language model (re-exported by index.ts). */
export type ChatRole = "system" | "developer" | "user" | "assistant" | "tool";
export interface ChatTurn { readonly role: ChatRole; readonly content: string }

export interface SamplingOptions {
  readonly temperature: number;      // 0 → greedy (argmax); OpenAI default 1
  readonly topP: number;             // (0, 1], nucleus sampling; default 1
  readonly maxTokens: number;        // completion tokens at most
  readonly stop: readonly string[];  // generation stops before any of these (not included in text); ≤ 4
  readonly seed?: number;            // same seed + same model + same input → same completion
  readonly topLogprobs: number;      // 0..20 alternatives reported per token
}
export interface TopLogprob { readonly token: string; readonly logprob: number; readonly bytes: number[] }
export interface TokenLogprob extends TopLogprob { readonly top_logprobs: TopLogprob[] }
export interface Completion {
  readonly text: string;
  /** One per generated token, logprob under the model's distribution BEFORE temperature/top_p (as OpenAI reports). */
  readonly tokens: TokenLogprob[];
  readonly finishReason: "stop" | "length";
  readonly promptTokens: number;
  readonly completionTokens: number;
}
export interface LanguageModel {
  /** Completes the conversation with one assistant turn; `onToken` sees each token as it is produced. */
  complete(turns: readonly ChatTurn[], options: SamplingOptions, onToken?: (token: TokenLogprob) => void): Promise<Completion>;
  countPromptTokens(turns: readonly ChatTurn[]): number;
  dispose(): void;
}
export interface BaseModelInfo { readonly id: string; readonly created: number /* unix seconds */; readonly description: string }

export type StepMetrics = Record<string, number>;
export interface TrainingProgress {
  started(numSequences: number): void;      // → event training_started {num_sequences}
  step(metrics: StepMetrics): void;         // → event gradient_step (all numbers)
}
export interface TrainingResult { readonly weights: Uint8Array; readonly metrics: StepMetrics /* of the last step / summary */ }

export interface SftExample { readonly messages: readonly ChatTurn[] }
export interface SftConfig {
  readonly learningRate: number | readonly number[];   // a list = one rate per step
  readonly batchSize: number | "auto";
  readonly assistantTurns: "all" | "last";              // which assistant turns carry loss
}

/** A trainable assistant turn: the text sampled, with the per-token logprobs recorded when it was sampled
 *  (choice.logprobs.content: bytes + logprob per token), or null when the choice carries none. */
export interface RlChoice { readonly content: string; readonly sampled: readonly { bytes: readonly number[]; logprob: number }[] | null }
export type RlItem = { readonly kind: "context"; readonly turn: ChatTurn } | { readonly kind: "choice"; readonly choice: RlChoice };
export interface RlTrajectory { readonly items: readonly RlItem[]; readonly reward: number }
export interface RlGroup { readonly trajectories: readonly RlTrajectory[] }
export interface RlConfig {
  readonly learningRate: number;          // default chosen by lm
  readonly epsilon: number;               // PPO clip low (default 0.2)
  readonly epsilonHigh: number;           // PPO clip high (default = epsilon)
  readonly normalizeAdvantages: boolean;  // divide by group std (default true)
  readonly lossFn: "ppo" | "cispo";
}
