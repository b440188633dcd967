import { workerData } from "node:worker_threads";
import { lowerThreadPriority, serveThread } from "../supervisedThread.js";
import { ModelCache } from "./modelCache.js";
import { wholeBytes, type FromModelThread, type ModelThreadData, type ToModelThread, type WorkAnswer, type WorkAsk, type WorkEvent } from "./modelThreads.js";
import type { TrainingProgress, TrainingResult } from "./types.js";

/**
 * A model thread (modelThreads.ts): does the works it is given with the library, each until
 * it ends, fails or is cancelled, and answers each. Several run at once, interleaved where
 * the library yields (between tokens, between steps). tfjs is loaded at the first work.
 */
const { cacheBytes } = workerData as ModelThreadData;
/**
 * Training and sampling yield the cores to the threads that answer requests and store writes
 * (a training step holds a core for seconds); on an idle machine they run as fast as before.
 */
const MODEL_THREAD_NICENESS = 5;
lowerThreadPriority(MODEL_THREAD_NICENESS);
const library = () => import("./index.js");
let models: Promise<ModelCache> | null = null;
const modelCache = () => (models ??= library().then(({ loadModel }) => new ModelCache(cacheBytes, loadModel)));

interface Done {
  readonly answer: WorkAnswer;
  readonly transfer: ArrayBuffer[];
}

const errorOf = (err: unknown) => (err instanceof Error ? { name: err.name, message: err.message } : { name: "Error", message: String(err) });

const progressTo = (report: (event: WorkEvent) => void): TrainingProgress => ({
  started: (numSequences) => report({ kind: "started", numSequences }),
  step: (metrics) => report({ kind: "step", metrics }),
});

/** New weights move to the asking thread (nothing here keeps them). */
const trained = (result: TrainingResult): Done => {
  const weights = wholeBytes(result.weights);
  return { answer: { weights, metrics: result.metrics }, transfer: [weights.buffer as ArrayBuffer] };
};

async function perform(work: WorkAsk, signal: AbortSignal, report: (event: WorkEvent) => void): Promise<Done> {
  switch (work.kind) {
    case "complete": {
      const lease = await (await modelCache()).acquire(work.model);
      try {
        const answer = await lease.model.complete(work.turns, work.options, (token) => {
          signal.throwIfAborted();
          if (work.streams) report({ kind: "token", token });
        });
        return { answer, transfer: [] };
      } finally {
        lease.release();
      }
    }
    case "sft":
      return trained(await (await library()).trainSft(work.weights, work.examples, work.config, progressTo(report), signal));
    case "rl":
      return trained(await (await library()).trainRl(work.weights, work.groups, work.config, progressTo(report), signal));
    case "baseWeights": {
      // A copy: the library shares one build among its callers.
      const weights = await (await library()).baseModelWeights(work.modelId);
      const copy = weights?.slice() ?? null;
      return { answer: copy, transfer: copy ? [copy.buffer] : [] };
    }
  }
}

const running = new Map<number, AbortController>();
const { tell } = serveThread<ToModelThread, FromModelThread>((message) => {
  if (message.type === "cancel") return void running.get(message.id)?.abort();
  const { id, work } = message;
  const controller = new AbortController();
  running.set(id, controller);
  void perform(work, controller.signal, (event) => tell({ type: "event", id, event }))
    .then(({ answer, transfer }) => tell({ type: "done", id, answer }, transfer))
    .catch((err: unknown) => tell({ type: "failed", id, error: errorOf(err) }))
    .finally(() => running.delete(id));
});
