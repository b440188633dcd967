import type { Logger } from "pino";
import { RetryableError } from "../errors.js";
import { moduleBeside, SupervisedThread } from "../supervisedThread.js";
import { baseModelSpec, cachedWeightsPath, readCachedWeights } from "./baseModelCatalog.js";
import { InvalidWeightsError, TrainingAbortedError, TrainingInputError } from "./errors.js";
import type { ModelWeightsRef } from "./modelCache.js";
import type {
  ChatTurn, Completion, RlConfig, RlGroup, SamplingOptions, SftConfig, SftExample, StepMetrics, TokenLogprob, TrainingProgress, TrainingResult,
} from "./types.js";

/**
 * The built-in language model's work (sampling, SFT and RL steps, building a base model) runs
 * in model threads, never on the thread that answers requests: a training step holds its
 * thread for a second or more. Up to MODEL_THREADS SupervisedThreads (supervisedThread.ts), each
 * started at the first work it is given, each with its own tfjs (loaded at its first work)
 * and its own cache of loaded models (modelCache.ts). Work goes to an idle thread, else to a
 * thread not yet started, else to the least busy one; a thread interleaves its works between
 * tokens and between steps, as the library yields.
 *
 * Work is a message; weights go with it as a copy (callers keep theirs in caches), and come
 * back moved (a training's new weights, a base model built). A thread that ends fails the
 * works it held with a RetryableError (a request answers 503, a job is retried) and is
 * started again. A work whose AbortSignal fires, or whose event handler throws, fails at once
 * with that reason, and the thread is told to stop it (between tokens or steps).
 */

/** What a model thread is asked, and what it answers to each. */
export interface ModelWork {
  complete: { ask: { model: ModelWeightsRef; turns: readonly ChatTurn[]; options: SamplingOptions; streams: boolean }; answer: Completion };
  sft: { ask: { weights: Uint8Array; examples: readonly SftExample[]; config: SftConfig }; answer: TrainingResult };
  rl: { ask: { weights: Uint8Array; groups: readonly RlGroup[]; config: RlConfig }; answer: TrainingResult };
  baseWeights: { ask: { modelId: string }; answer: Uint8Array | null };
}
export type WorkKind = keyof ModelWork;
export type WorkAsk = { [K in WorkKind]: { readonly kind: K } & ModelWork[K]["ask"] }[WorkKind];
export type WorkAnswer = ModelWork[WorkKind]["answer"];

/** Reported while a work runs: each token of a streamed completion, a training's start and its steps. */
export type WorkEvent =
  | { readonly kind: "token"; readonly token: TokenLogprob }
  | { readonly kind: "started"; readonly numSequences: number }
  | { readonly kind: "step"; readonly metrics: StepMetrics };

export type ToModelThread = { readonly type: "work"; readonly id: number; readonly work: WorkAsk } | { readonly type: "cancel"; readonly id: number };
export type FromModelThread =
  | { readonly type: "event"; readonly id: number; readonly event: WorkEvent }
  | { readonly type: "done"; readonly id: number; readonly answer: WorkAnswer }
  | { readonly type: "failed"; readonly id: number; readonly error: { readonly name: string; readonly message: string } };

/** A model thread's start data (modelThread.ts). */
export interface ModelThreadData {
  /** Weights of loaded models the thread keeps (INFERENCE_MODEL_CACHE_BYTES). */
  readonly cacheBytes: number;
}

export interface WorkHooks {
  readonly onEvent?: (event: WorkEvent) => void;
  readonly signal?: AbortSignal | undefined;
}

const ENTRY = moduleBeside(import.meta.url, "./modelThread");

/** The library's errors keep their type across the thread (callers tell them apart); any other is an Error with its message. */
function errorFrom({ name, message }: { name: string; message: string }): Error {
  if (name === "InvalidWeightsError") return new InvalidWeightsError(message);
  if (name === "TrainingInputError") return new TrainingInputError(message);
  if (name === "AbortError") return new TrainingAbortedError();
  return new Error(message);
}

/** Bytes that own their whole buffer: a view into a larger buffer would send all of it. */
export const wholeBytes = (bytes: Uint8Array): Uint8Array => (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice());

type Outcome = { readonly ok: true; readonly answer: WorkAnswer } | { readonly ok: false; readonly error: unknown };

interface Pending {
  readonly onEvent: (event: WorkEvent) => void;
  readonly settle: (outcome: Outcome) => void;
}

class ModelThread {
  private readonly thread: SupervisedThread<ToModelThread, FromModelThread>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  constructor(data: ModelThreadData, name: string, log: Logger) {
    this.thread = new SupervisedThread<ToModelThread, FromModelThread>({
      entry: ENTRY,
      data: () => data,
      name,
      log,
      onMessage: (message) => this.answered(message),
      onEnded: (code) => this.failAll(new RetryableError(`the model thread ended (exit code ${code}); it is started again`)),
      hasMetrics: false,
    });
  }

  get running(): boolean {
    return this.thread.running;
  }

  /** Works given and not answered yet. */
  get load(): number {
    return this.pending.size;
  }

  run(work: WorkAsk, hooks: WorkHooks): Promise<WorkAnswer> {
    if (!this.thread.running) return Promise.reject(new RetryableError("the model thread ended and is being started again"));
    const id = ++this.nextId;
    const { signal } = hooks;
    return new Promise<WorkAnswer>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const stop = (reason: unknown) => {
        if (!this.pending.delete(id)) return;
        signal?.removeEventListener("abort", onAbort);
        this.thread.post({ type: "cancel", id });
        reject(reason);
      };
      const onAbort = () => stop(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        onEvent: (event) => {
          try {
            hooks.onEvent?.(event);
          } catch (err) {
            stop(err);
          }
        },
        settle: (outcome) => {
          signal?.removeEventListener("abort", onAbort);
          if (outcome.ok) resolve(outcome.answer);
          else reject(outcome.error);
        },
      });
      this.thread.post({ type: "work", id, work });
    });
  }

  async stop(): Promise<void> {
    await this.thread.stop();
    this.failAll(new RetryableError("the model threads were stopped"));
  }

  private answered(message: FromModelThread): void {
    const pending = this.pending.get(message.id);
    if (!pending) return; // a work stopped here: what the thread still sends of it is dropped
    if (message.type === "event") return pending.onEvent(message.event);
    this.pending.delete(message.id);
    this.thread.progressed();
    pending.settle(message.type === "done" ? { ok: true, answer: message.answer } : { ok: false, error: errorFrom(message.error) });
  }

  private failAll(error: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.settle({ ok: false, error });
  }
}

export interface ModelThreadsOptions {
  /** Most threads started (MODEL_THREADS). */
  readonly count: number;
  /** Weights of loaded models each thread keeps (INFERENCE_MODEL_CACHE_BYTES). */
  readonly cacheBytes: number;
  readonly log: Logger;
}

const progressEvents = (progress: TrainingProgress) => (event: WorkEvent) => {
  if (event.kind === "started") progress.started(event.numSequences);
  else if (event.kind === "step") progress.step(event.metrics);
};

/** The process's model threads: the one way the service samples and trains the built-in models. */
export class ModelThreads {
  private readonly threads: ModelThread[] = [];
  /** A base model's weights never change while the process runs: read once per id. */
  private readonly baseWeightsById = new Map<string, Promise<Uint8Array | null>>();
  private stopped = false;

  constructor(private readonly options: ModelThreadsOptions) {}

  /** One assistant turn; `onToken` sees each token as it is settled (it may throw to stop the completion, which then fails with that error). */
  complete(model: ModelWeightsRef, turns: readonly ChatTurn[], options: SamplingOptions, hooks: { onToken?: (token: TokenLogprob) => void; signal?: AbortSignal | undefined } = {}): Promise<Completion> {
    const { onToken } = hooks;
    const work: WorkAsk = { kind: "complete", model: { key: model.key, weights: wholeBytes(model.weights) }, turns, options, streams: onToken !== undefined };
    const onEvent = (event: WorkEvent) => {
      if (event.kind === "token") onToken?.(event.token);
    };
    return this.run(work, { onEvent, signal: hooks.signal }) as Promise<Completion>;
  }

  trainSft(weights: Uint8Array, examples: readonly SftExample[], config: SftConfig, progress: TrainingProgress, signal?: AbortSignal): Promise<TrainingResult> {
    return this.run({ kind: "sft", weights: wholeBytes(weights), examples, config }, { onEvent: progressEvents(progress), signal }) as Promise<TrainingResult>;
  }

  trainRl(weights: Uint8Array, groups: readonly RlGroup[], config: RlConfig, progress: TrainingProgress, signal?: AbortSignal): Promise<TrainingResult> {
    return this.run({ kind: "rl", weights: wholeBytes(weights), groups, config }, { onEvent: progressEvents(progress), signal }) as Promise<TrainingResult>;
  }

  /** A shipped base model's weights (null for an unknown id): read from their cache here, built in a model thread when not cached. */
  baseWeights(id: string): Promise<Uint8Array | null> {
    const spec = baseModelSpec(id);
    if (!spec) return Promise.resolve(null);
    let weights = this.baseWeightsById.get(id);
    if (!weights) {
      const cached = readCachedWeights(cachedWeightsPath(spec));
      weights = cached ? Promise.resolve(cached) : (this.run({ kind: "baseWeights", modelId: id }, {}) as Promise<Uint8Array | null>);
      this.baseWeightsById.set(id, weights);
      weights.catch(() => this.baseWeightsById.delete(id));
    }
    return weights;
  }

  /** Ends every thread; works still running fail. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.threads.map((t) => t.stop()));
  }

  private run(work: WorkAsk, hooks: WorkHooks): Promise<WorkAnswer> {
    if (this.stopped) return Promise.reject(new RetryableError("the model threads were stopped"));
    return this.pick().run(work, hooks);
  }

  private pick(): ModelThread {
    const idle = this.threads.find((t) => t.running && t.load === 0);
    if (idle) return idle;
    if (this.threads.length < this.options.count) {
      const thread = new ModelThread({ cacheBytes: this.options.cacheBytes }, `model ${this.threads.length}`, this.options.log);
      this.threads.push(thread);
      return thread;
    }
    return this.threads.reduce((least, t) => (t.load < least.load ? t : least));
  }
}
