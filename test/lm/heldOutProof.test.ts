import { describe, expect, it } from "vitest";
import { bareDigitReward, digitQuestions, isHeldOutDigitQuestion } from "../../services/lm/corpus.js";
import { PROOF_DEFAULTS, proofSplit, runHeldOutProof } from "../../services/lm/heldOutProof.js";
import { baseModelWeights } from "../../services/lm/index.js";

describe("the RL held-out proof", () => {
  it("splits the 138 digit questions into 104 to train on and 34 held out, none in both", () => {
    const { train, heldOut } = proofSplit();
    expect([train.length, heldOut.length, digitQuestions().length]).toEqual([104, 34, 138]);
    const trained = new Set(train.map((q) => q.question));
    expect(heldOut.filter((q) => trained.has(q.question))).toEqual([]);
    expect(heldOut.every(isHeldOutDigitQuestion)).toBe(true);
  });

  it("rewards one bare digit that ends the turn, whatever the question", () => {
    const rewards = [["7", "stop"], ["Seven.", "stop"], ["3+4=7", "stop"], ["7", "length"], ["77", "stop"]].map(([text, finishReason]) => bareDigitReward({ text: text!, finishReason: finishReason! }));
    expect(rewards).toEqual([1, 0, 0, 0, 0]);
  });

  // About 25 s of CPU on an idle machine. The rise was 0.17–0.24 for seeds 1, 2, 3 and 7 (bench/lm.bench.ts prints them).
  it("raises the base model's mean reward on held-out prompts it never trained on", async () => {
    const base = (await baseModelWeights("tracehouse/bytelm-small"))!;
    const result = await runHeldOutProof(base, { ...PROOF_DEFAULTS, heldOutPrompts: 16 });
    expect(result.after.format).toBeGreaterThan(result.before.format + 0.1);
  }, 600_000);
});
