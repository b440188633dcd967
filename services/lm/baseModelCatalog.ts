import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { VOCAB_SIZE } from "./tokenizer.js";
import type { TransformerConfig } from "./transformer.js";
import type { BaseModelInfo } from "./types.js";
import { decodeWeights } from "./weightsFormat.js";

/**
 * The base models the project ships and where their built weights are cached: what the
 * thread that answers requests needs of them (names, cached weights) without loading tfjs.
 * Building them is baseModels.ts's (in a model thread, modelThread.ts).
 */

/** A base model this project ships: its architecture and how its weights are trained from the corpus. */
export interface BaseModelSpec {
  readonly info: BaseModelInfo;
  readonly config: TransformerConfig;
  readonly steps: number;
  readonly batchSize: number;
  readonly peakLearningRate: number;
  readonly seed: number;
  /** Bumped whenever anything above or the corpus changes: a cached build of another revision is not used. */
  readonly revision: number;
}

export const BASE_MODEL_SPECS: readonly BaseModelSpec[] = [{
  info: {
    id: "tracehouse/bytelm-small",
    created: Date.UTC(2026, 10, 24) / 1000,
    description: "A 2-layer byte-level transformer (d=64, 128-token context) trained by tracehouse on its own synthetic chat corpus (greetings, simple facts, counting facts and single-digit arithmetic answered with one digit).",
  },
  config: { vocabSize: VOCAB_SIZE, contextLength: 128, dModel: 64, layers: 2, heads: 4, ffDim: 256 },
  steps: 300,
  batchSize: 16,
  peakLearningRate: 4e-3,
  seed: 20261124,
  revision: 3,
}];

export function baseModels(): readonly BaseModelInfo[] {
  return BASE_MODEL_SPECS.map((s) => s.info);
}

export function baseModelSpec(id: string): BaseModelSpec | undefined {
  return BASE_MODEL_SPECS.find((s) => s.info.id === id);
}

/** LM_CACHE_DIR, else `.cache/lm` at the repository root. */
export function cacheDir(): string {
  return process.env.LM_CACHE_DIR ?? join(dirname(fileURLToPath(import.meta.url)), "..", "..", ".cache", "lm");
}

export function cachedWeightsPath(spec: BaseModelSpec): string {
  return join(cacheDir(), `${spec.info.id.replace(/[^A-Za-z0-9._-]/g, "--")}.r${spec.revision}.weights`);
}

/** The cached weights at `path`, or null when there are none or they are corrupt (then they are built again). */
export function readCachedWeights(path: string): Uint8Array | null {
  if (!existsSync(path)) return null;
  const bytes = new Uint8Array(readFileSync(path));
  try {
    decodeWeights(bytes);
    return bytes;
  } catch {
    return null; // a corrupt cache file is rebuilt
  }
}

/** Writes through a temporary file and a rename, so a reader never sees half a file. */
export function writeCached(path: string, weights: Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, weights);
  renameSync(temporary, path);
}

