import { describe, expect, it } from "vitest";
import { tensorflow } from "../../services/lm/backend.js";
import { loadModel, RL_DEFAULTS, trainRl, trainSft } from "../../services/lm/index.js";
import { recorder, tinyWeights } from "./support.js";

describe("tensor memory", () => {
  it("sampling, SFT and RL leave no tensors behind once the model is disposed", async () => {
    const tf = await tensorflow();
    const before = tf.memory().numTensors;
    const turns = [{ role: "user" as const, content: "Hi" }];
    const model = await loadModel(tinyWeights());
    await model.complete(turns, { temperature: 1, topP: 0.9, maxTokens: 5, stop: ["x"], topLogprobs: 2, seed: 1 });
    model.dispose();
    await trainSft(tinyWeights(), [{ messages: [...turns, { role: "assistant", content: "Hello" }] }], { learningRate: 1e-3, batchSize: "auto", assistantTurns: "all" }, recorder());
    const choice = (content: string) => ({ kind: "choice" as const, choice: { content, sampled: null } });
    await trainRl(tinyWeights(), [{ trajectories: [{ reward: 1, items: [choice("a")] }, { reward: 0, items: [choice("b")] }] }], { ...RL_DEFAULTS, lossFn: "cispo" }, recorder());
    expect(tf.memory().numTensors).toBe(before);
  });
});
