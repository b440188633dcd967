import type { LanguageModel } from "./types.js";

/** Weights to sample with, and what names them in the cache (the same key, the same weights). */
export interface ModelWeightsRef {
  readonly key: string;
  readonly weights: Uint8Array;
}

interface Entry {
  readonly model: Promise<LanguageModel>;
  readonly bytes: number;
  users: number;
  evicted: boolean;
}

/** A loaded model lent to one request; `release` it when the request is done with it. */
export interface ModelLease {
  readonly model: LanguageModel;
  release(): void;
}

/**
 * Loaded models, least recently used first, bounded by the size of their weights; each model
 * thread (modelThread.ts) has one, where its models live. A model pushed out while requests
 * still use it is disposed when the last of them releases it. The newest model is kept even
 * when it alone is over the bound (a request must be served). Two requests for a model not
 * loaded yet share one load.
 */
export class ModelCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly load: (weights: Uint8Array) => Promise<LanguageModel>,
  ) {}

  async acquire(ref: ModelWeightsRef): Promise<ModelLease> {
    const entry = this.entryFor(ref);
    entry.users++;
    let model: LanguageModel;
    try {
      model = await entry.model;
    } catch (err) {
      entry.users--;
      throw err;
    }
    let released = false;
    return {
      model,
      release: () => {
        if (released) return;
        released = true;
        entry.users--;
        if (entry.evicted && entry.users === 0) model.dispose();
      },
    };
  }

  /** Models loaded now (for tests and metrics). */
  loadedIds(): string[] {
    return [...this.entries.keys()];
  }

  private entryFor({ key: modelId, weights }: ModelWeightsRef): Entry {
    const known = this.entries.get(modelId);
    if (known) {
      this.entries.delete(modelId);
      this.entries.set(modelId, known);
      return known;
    }
    const entry: Entry = { model: this.load(weights), bytes: weights.byteLength, users: 0, evicted: false };
    // A failed load is forgotten, so that the next request tries again.
    entry.model.catch(() => this.remove(modelId, entry));
    this.entries.set(modelId, entry);
    this.bytes += entry.bytes;
    this.evictBeyondBound(modelId);
    return entry;
  }

  private evictBeyondBound(keep: string): void {
    for (const [id, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) return;
      if (id === keep) continue;
      this.remove(id, entry);
      entry.evicted = true;
      if (entry.users === 0) void entry.model.then((m) => m.dispose(), () => undefined);
    }
  }

  private remove(id: string, entry: Entry): void {
    if (this.entries.get(id) !== entry) return;
    this.entries.delete(id);
    this.bytes -= entry.bytes;
  }

  /** Disposes every model no request uses (shutdown). */
  clear(): void {
    for (const [id, entry] of [...this.entries]) {
      this.remove(id, entry);
      entry.evicted = true;
      if (entry.users === 0) void entry.model.then((m) => m.dispose(), () => undefined);
    }
  }
}
