import { describe, expect, it } from "vitest";
import { RL_DEFAULTS, trainRl, trainSft, type RlGroup, type RlTrajectory } from "../../services/lm/index.js";
import { groupAdvantages, recordedLogprobs } from "../../services/lm/rl.js";
import { completionLogprob } from "../../services/lm/scoring.js";
import { recorder, tinyWeights } from "./support.js";

const ASK = { role: "user" as const, content: "Pick a letter" };

function trajectory(content: string, reward: number): RlTrajectory {
  return { reward, items: [{ kind: "context", turn: ASK }, { kind: "choice", choice: { content, sampled: null } }] };
}

/** Two rewarded "yes" and two unrewarded "no" answers to the same prompt. */
const GROUP: RlGroup = { trajectories: [trajectory("yes", 1), trajectory("no", 0), trajectory("yes", 1), trajectory("no", 0)] };

describe("SFT", () => {
  it("lowers the loss over an epoch on a small dataset, reporting every step", async () => {
    const examples = Array.from({ length: 64 }, (_, i) => ({
      messages: [{ role: "user" as const, content: `What is ${i % 4}+1?` }, { role: "assistant" as const, content: String((i % 4) + 1) }],
    }));
    const progress = recorder();
    const result = await trainSft(tinyWeights(), examples, { learningRate: 5e-3, batchSize: 8, assistantTurns: "all" }, progress);
    expect(progress.sequences).toEqual([64]);
    expect(progress.steps).toHaveLength(8);
    const losses = progress.steps.map((s) => s.loss as number);
    expect(losses[7]).toBeLessThan((losses[0] as number) * 0.75);
    for (const s of progress.steps) expect(Object.keys(s).sort()).toEqual(["entropy", "grad_norm", "learning_rate", "loss", "num_trainable_tokens"]);
    expect(progress.steps[0]?.num_trainable_tokens).toBe(16); // one digit + <|end|> per example
    expect(result.metrics).toEqual(progress.steps[7]);
  });

  it("trains only the last assistant turn when asked, and takes a list of learning rates one per step", async () => {
    const messages = [ASK, { role: "assistant" as const, content: "abc" }, ASK, { role: "assistant" as const, content: "d" }];
    const progress = recorder();
    await trainSft(tinyWeights(), [{ messages }, { messages }], { learningRate: [1e-3, 2e-3], batchSize: 1, assistantTurns: "last" }, progress);
    expect(progress.steps.map((s) => [s.num_trainable_tokens, s.learning_rate])).toEqual([[2, 1e-3], [2, 2e-3]]);
  });
});

describe("RL", () => {
  it("advantages are reward − group mean, divided by the std when normalizing", () => {
    expect(groupAdvantages([1, 0, 1, 0], false)).toEqual([0.5, -0.5, 0.5, -0.5]);
    expect(groupAdvantages([1, 0, 1, 0], true)).toEqual([1, -1, 1, -1]);
    expect(groupAdvantages([2, 2], true)).toEqual([0, 0]);
  });

  it("uses the recorded logprobs only when they are one per byte of the content", () => {
    expect(recordedLogprobs({ content: "hé", sampled: [{ bytes: [0x68], logprob: -1 }, { bytes: [0xc3], logprob: -2 }, { bytes: [0xa9], logprob: -3 }] })).toEqual([-1, -2, -3]);
    expect(recordedLogprobs({ content: "hé", sampled: [{ bytes: [0x68], logprob: -1 }, { bytes: [0xc3, 0xa9], logprob: -2 }] })).toBeUndefined();
    expect(recordedLogprobs({ content: "hi", sampled: [{ bytes: [0x68], logprob: -1 }, { bytes: [0x6f], logprob: -2 }] })).toBeUndefined();
    expect(recordedLogprobs({ content: "hi", sampled: null })).toBeUndefined();
  });

  for (const lossFn of ["ppo", "cispo"] as const) {
    it(`a ${lossFn} step raises the probability of the rewarded completion and lowers the other`, async () => {
      const weights = tinyWeights(11);
      const progress = recorder();
      const result = await trainRl(weights, [GROUP], { ...RL_DEFAULTS, lossFn, learningRate: 1e-2 }, progress);
      expect(progress.sequences).toEqual([4]);
      expect(progress.steps).toHaveLength(1);
      expect(Object.keys(progress.steps[0] ?? {}).sort()).toEqual(
        ["clip_fraction", "entropy", "grad_norm", "learning_rate", "loss", "num_trainable_tokens", "policy_loss", "reward", "reward_std_dev"]);
      expect(progress.steps[0]).toMatchObject({ reward: 0.5, reward_std_dev: 0.5, num_trainable_tokens: 14, learning_rate: 1e-2 });
      expect(await completionLogprob(result.weights, [ASK], "yes")).toBeGreaterThan(await completionLogprob(weights, [ASK], "yes"));
      expect(await completionLogprob(result.weights, [ASK], "no")).toBeLessThan(await completionLogprob(weights, [ASK], "no"));
    });
  }

  it("clips the ratio against recorded logprobs: tokens sampled far more likely than now carry no PPO gradient", async () => {
    const weights = tinyWeights(11);
    const sure = (content: string) => Array.from(Buffer.from(content), (b) => ({ bytes: [b], logprob: -0.01 }));
    const recorded: RlGroup = {
      trajectories: GROUP.trajectories.map((t) => ({
        ...t, items: t.items.map((item) => (item.kind === "choice" ? { kind: "choice", choice: { ...item.choice, sampled: sure(item.choice.content) } } : item)),
      })),
    };
    const progress = recorder();
    await trainRl(weights, [recorded], { ...RL_DEFAULTS, learningRate: 1e-2 }, progress);
    // the bytes now have ratio ≈ e^-5 ≪ 1 − ε: clipped; only the <|end|> tokens (no record: ratio 1) are not.
    expect(progress.steps[0]?.clip_fraction).toBeCloseTo(10 / 14, 5);
  });

  it("stops between steps when its signal is aborted, with an AbortError", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(trainRl(tinyWeights(), [GROUP], RL_DEFAULTS, recorder(), controller.signal)).rejects.toMatchObject({ name: "AbortError" });
    const progress = recorder();
    const examples = Array.from({ length: 4 }, () => ({ messages: [ASK, { role: "assistant" as const, content: "x" }] }));
    const late = new AbortController();
    const run = trainSft(tinyWeights(), examples, { learningRate: 1e-3, batchSize: 1, assistantTurns: "all" }, { ...progress, step: (m) => { progress.step(m); late.abort(); } }, late.signal);
    await expect(run).rejects.toMatchObject({ name: "AbortError" });
    expect(progress.steps).toHaveLength(1);
  });
});
