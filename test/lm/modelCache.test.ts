import { beforeAll, describe, expect, it } from "vitest";
import { baseModels, baseModelWeights, loadModel, type LanguageModel } from "../../services/lm/index.js";
import { ModelCache } from "../../services/lm/modelCache.js";

/** The loaded-model cache on real models: bounded by weights, least recently used out, disposed when no request uses them. */
let weights: Uint8Array;
const loads: number[] = [];
const disposed: number[] = [];

/** loadModel, noting each load and each disposal by the load's number. */
async function countingLoad(w: Uint8Array): Promise<LanguageModel> {
  const n = loads.length;
  loads.push(n);
  const model = await loadModel(w);
  return {
    complete: (turns, options, onToken) => model.complete(turns, options, onToken),
    countPromptTokens: (turns) => model.countPromptTokens(turns),
    dispose: () => {
      disposed.push(n);
      model.dispose();
    },
  };
}

beforeAll(async () => {
  weights = (await baseModelWeights(baseModels()[0]!.id))!;
}, 1_200_000);

describe("ModelCache", () => {
  it("loads a model once, keeps the most recent within the bound, and disposes the others once released", async () => {
    loads.length = 0;
    disposed.length = 0;
    const cache = new ModelCache(Math.floor(weights.byteLength * 1.5), countingLoad);
    const a = await cache.acquire({ key: "a", weights });
    a.release();
    (await cache.acquire({ key: "a", weights })).release();
    expect(loads).toEqual([0]);

    const b = await cache.acquire({ key: "b", weights });
    expect(cache.loadedIds()).toEqual(["b"]);
    await Promise.resolve();
    expect(disposed).toEqual([0]);

    // b is pushed out while a request holds it: disposed only when released.
    const [c1, c2] = await Promise.all([cache.acquire({ key: "c", weights }), cache.acquire({ key: "c", weights })]);
    expect(loads).toEqual([0, 1, 2]);
    expect(cache.loadedIds()).toEqual(["c"]);
    expect(disposed).toEqual([0]);
    b.release();
    expect(disposed).toEqual([0, 1]);
    c1.release();
    c2.release();
    cache.clear();
    await Promise.resolve();
    expect(disposed).toEqual([0, 1, 2]);
  });

  it("forgets a load that failed, so the next request tries again", async () => {
    const cache = new ModelCache(weights.byteLength * 4, loadModel);
    await expect(cache.acquire({ key: "broken", weights: new Uint8Array([1, 2, 3]) })).rejects.toThrow();
    expect(cache.loadedIds()).toEqual([]);
    const lease = await cache.acquire({ key: "broken", weights });
    expect(cache.loadedIds()).toEqual(["broken"]);
    lease.release();
    cache.clear();
  });
});
