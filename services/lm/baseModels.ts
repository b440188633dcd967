import { yieldToEventLoop } from "./backend.js";
import { baseModelSpec, cachedWeightsPath, readCachedWeights, writeCached, type BaseModelSpec } from "./baseModelCatalog.js";
import { corpusDialog } from "./corpus.js";
import { Random } from "./random.js";
import { crossEntropy } from "./sft.js";
import { Trainer } from "./trainer.js";
import { appendAssistantTurn, appendContextTurn, emptySequence, fitToContext, packBatch, type TrainingSequence } from "./trainingSequences.js";
import { initialParameters } from "./transformer.js";
import type { StepMetrics } from "./types.js";
import { encodeWeights } from "./weightsFormat.js";

// The catalogue is its own module (no tfjs); its names are read from here too.
export { BASE_MODEL_SPECS, baseModels, baseModelSpec, cacheDir, cachedWeightsPath, writeCached, type BaseModelSpec } from "./baseModelCatalog.js";

/** Warm-up over the first 5% of steps, then cosine decay to a tenth of the peak. */
function learningRate(spec: BaseModelSpec, step: number): number {
  const warmup = Math.max(1, Math.round(spec.steps * 0.05));
  if (step < warmup) return (spec.peakLearningRate * (step + 1)) / warmup;
  const progress = (step - warmup) / Math.max(1, spec.steps - warmup);
  return spec.peakLearningRate * (0.1 + 0.45 * (1 + Math.cos(Math.PI * progress)));
}

/** A corpus dialog with loss on its assistant turns only (all the model must learn to write). */
function dialogSequence(random: Random, spec: BaseModelSpec): TrainingSequence {
  const s = emptySequence();
  for (const turn of corpusDialog(random)) {
    if (turn.role === "assistant") appendAssistantTurn(s, turn.content, true);
    else appendContextTurn(s, turn);
  }
  return fitToContext(s, spec.config.contextLength);
}

/** Batches of dialogs of similar length (a pool of BUCKET_POOL batches sorted by length), so little is padding. */
const BUCKET_POOL = 8;
function* dialogBatches(random: Random, spec: BaseModelSpec): Generator<TrainingSequence[]> {
  for (;;) {
    const pool = Array.from({ length: spec.batchSize * BUCKET_POOL }, () => dialogSequence(random, spec));
    pool.sort((a, b) => a.tokens.length - b.tokens.length);
    const batches = Array.from({ length: BUCKET_POOL }, (_, i) => pool.slice(i * spec.batchSize, (i + 1) * spec.batchSize));
    yield* random.shuffle(batches);
  }
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

export interface BuildReport {
  readonly weights: Uint8Array;
  readonly seconds: number;
  readonly cpuSeconds: number;  // of this process (user + system): the build's cost on a busy machine
  readonly finalLoss: number;
}

/** Trains a base model from its seeded initialisation on its corpus, loss on the assistant turns (deterministic for a given machine). */
export async function buildBaseModel(spec: BaseModelSpec, log: (line: string) => void = () => {}): Promise<BuildReport> {
  const started = Date.now();
  const cpuStart = process.cpuUsage();
  const cpuSeconds = (): number => { const u = process.cpuUsage(cpuStart); return (u.user + u.system) / 1e6; };
  const meta = { base_model: spec.info.id, revision: spec.revision, corpus: "services/lm/corpus.ts", steps: spec.steps, batch_size: spec.batchSize };
  const initial = encodeWeights({ config: spec.config, tensors: initialParameters(spec.config, spec.seed), meta });
  const trainer = await Trainer.open(initial);
  try {
    const batches = dialogBatches(new Random(spec.seed), spec);
    let recent: number[] = [];
    let metrics: StepMetrics = {};
    for (let step = 0; step < spec.steps; step++) {
      metrics = trainer.step(packBatch(batches.next().value as TrainingSequence[]), crossEntropy, learningRate(spec, step));
      recent = [...recent.slice(-19), metrics.loss as number];
      if ((step + 1) % 25 === 0 || step + 1 === spec.steps) {
        log(`${spec.info.id}: step ${step + 1}/${spec.steps}, loss ${(recent.reduce((a, b) => a + b, 0) / recent.length).toFixed(3)} (mean of the last ${recent.length}), ${((Date.now() - started) / 1000).toFixed(0)} s (${cpuSeconds().toFixed(0)} s CPU)`);
      }
      await yieldToEventLoop();
    }
    const report = { seconds: (Date.now() - started) / 1000, cpuSeconds: cpuSeconds(), finalLoss: recent.reduce((a, b) => a + b, 0) / recent.length };
    const built = { build_seconds: round(report.seconds), build_cpu_seconds: round(report.cpuSeconds), final_loss: round(report.finalLoss) };
    return { ...report, weights: trainer.weights({ ...meta, ...built }) };
  } finally {
    trainer.dispose();
  }
}

const building = new Map<string, Promise<Uint8Array>>();

/** The weights of a shipped base model (built once by the base-model build, cached); null if unknown id. */
export async function baseModelWeights(id: string): Promise<Uint8Array | null> {
  const spec = baseModelSpec(id);
  if (!spec) return null;
  const path = cachedWeightsPath(spec);
  const cached = readCachedWeights(path);
  if (cached) return cached;
  let pending = building.get(id);
  if (!pending) {
    process.stderr.write(`lm: weights of ${id} not found at ${path}; training them now (about 3 minutes, once)\n`);
    pending = buildBaseModel(spec).then((report) => {
      writeCached(path, report.weights);
      return report.weights;
    }).finally(() => building.delete(id));
    building.set(id, pending);
  }
  return pending;
}
