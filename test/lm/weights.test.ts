import { describe, expect, it } from "vitest";
import { InvalidWeightsError, loadModel } from "../../services/lm/index.js";
import { decodeWeights, encodeWeights } from "../../services/lm/weightsFormat.js";
import { tinyWeights } from "./support.js";

const GREEDY = { temperature: 0, topP: 1, maxTokens: 8, stop: [], topLogprobs: 3 };
const TURNS = [{ role: "user" as const, content: "Hello" }];

describe("weight format", () => {
  it("save → load → save gives the same bytes, and the loaded model the same logprobs", async () => {
    const weights = tinyWeights(7);
    const again = encodeWeights(decodeWeights(weights));
    expect(Buffer.from(again).equals(Buffer.from(weights))).toBe(true);
    const [a, b] = [await loadModel(weights), await loadModel(again)];
    expect(await b.complete(TURNS, GREEDY)).toEqual(await a.complete(TURNS, GREEDY));
    a.dispose();
    b.dispose();
  });

  it("keeps the config and meta in its header", () => {
    const decoded = decodeWeights(tinyWeights());
    expect(decoded.config.dModel).toBe(32);
    expect(decoded.meta).toEqual({ test: "tiny" });
  });

  it("refuses a flipped byte, a truncated file and other bytes with a clear error", async () => {
    const weights = tinyWeights();
    const flipped = Uint8Array.from(weights);
    flipped[weights.length - 100] = (flipped[weights.length - 100] as number) ^ 0x01;
    await expect(loadModel(flipped)).rejects.toThrow(InvalidWeightsError);
    await expect(loadModel(flipped)).rejects.toThrow(/checksum mismatch/);
    await expect(loadModel(weights.subarray(0, weights.length - 10))).rejects.toThrow(/checksum mismatch|truncated/);
    await expect(loadModel(new TextEncoder().encode("not weights at all, just text that is long enough to read"))).rejects.toThrow(/no THLM signature/);
    await expect(loadModel(new Uint8Array(0))).rejects.toThrow(InvalidWeightsError);
  });
});
