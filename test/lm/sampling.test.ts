import { beforeAll, describe, expect, it } from "vitest";
import { loadModel, type LanguageModel, type SamplingOptions, type TokenLogprob } from "../../services/lm/index.js";
import { memorizedWeights, SAY_IT, SENTENCE, tinyWeights } from "./support.js";

const GREEDY: SamplingOptions = { temperature: 0, topP: 1, maxTokens: 40, stop: [], topLogprobs: 5 };
const SAMPLED: SamplingOptions = { temperature: 1, topP: 1, maxTokens: 24, stop: [], topLogprobs: 3, seed: 42 };

let memorized: LanguageModel;
let untrained: LanguageModel;
beforeAll(async () => {
  memorized = await loadModel(await memorizedWeights());
  untrained = await loadModel(tinyWeights(5));
});

describe("sampling", () => {
  it("greedy decoding takes the most likely token each time and ends the turn on <|end|>", async () => {
    const c = await memorized.complete(SAY_IT, GREEDY);
    expect(c).toMatchObject({ text: SENTENCE, finishReason: "stop", completionTokens: SENTENCE.length, promptTokens: 9 });
    for (const token of c.tokens) {
      expect(token.top_logprobs[0]).toEqual({ token: token.token, logprob: token.logprob, bytes: token.bytes });
    }
  });

  it("reports top_logprobs sorted, as many as asked, consistent with the token's own logprob", async () => {
    const c = await untrained.complete(SAY_IT, { ...SAMPLED, topLogprobs: 20 });
    for (const token of c.tokens) {
      expect(token.top_logprobs).toHaveLength(20);
      const values = token.top_logprobs.map((t) => t.logprob);
      expect(values).toEqual([...values].sort((a, b) => b - a));
      expect(values.reduce((p, l) => p + Math.exp(l), 0)).toBeLessThanOrEqual(1 + 1e-9);
      const self = token.top_logprobs.find((t) => t.token === token.token);
      if (self) expect(self.logprob).toBe(token.logprob);
      else expect(token.logprob).toBeLessThanOrEqual(values[19] as number);
    }
    expect((await untrained.complete(SAY_IT, { ...SAMPLED, topLogprobs: 0 })).tokens.every((t) => t.top_logprobs.length === 0)).toBe(true);
  });

  it("same seed → same completion; another seed → another one", async () => {
    const a = await untrained.complete(SAY_IT, SAMPLED);
    expect(await untrained.complete(SAY_IT, SAMPLED)).toEqual(a);
    expect((await untrained.complete(SAY_IT, { ...SAMPLED, seed: 43 })).tokens).not.toEqual(a.tokens);
  });

  it("reports logprobs of the distribution before temperature and top_p", async () => {
    const greedy = await memorized.complete(SAY_IT, GREEDY);
    const cooled = await memorized.complete(SAY_IT, { ...GREEDY, temperature: 0.3, topP: 0.9, seed: 1 });
    expect(cooled.text).toBe(SENTENCE);
    expect(cooled.tokens.map((t) => t.logprob)).toEqual(greedy.tokens.map((t) => t.logprob));
  });

  it("stops before the first stop string, which is neither in the text nor in the tokens", async () => {
    const c = await memorized.complete(SAY_IT, { ...GREEDY, stop: ["mat", "sat"] });
    expect(c).toMatchObject({ text: "The cat ", finishReason: "stop", completionTokens: 8 });
    expect(c.tokens.map((t) => t.token).join("")).toBe("The cat ");
  });

  it("stops at maxTokens with finish reason length", async () => {
    expect(await memorized.complete(SAY_IT, { ...GREEDY, maxTokens: 3 })).toMatchObject({ text: "The", finishReason: "length", completionTokens: 3 });
    expect(await memorized.complete(SAY_IT, { ...GREEDY, maxTokens: 0 })).toMatchObject({ text: "", finishReason: "length", completionTokens: 0 });
  });

  it("streams every token it returns to onToken, holding back what may start a stop string", async () => {
    const seen: TokenLogprob[] = [];
    const c = await memorized.complete(SAY_IT, { ...GREEDY, stop: ["sat on"] }, (t) => seen.push(t));
    expect(c.text).toBe("The cat ");
    expect(seen).toEqual(c.tokens);
  });

  it("counts prompt tokens as role token + bytes + end per turn, plus the assistant's opening", () => {
    expect(memorized.countPromptTokens([{ role: "user", content: "héllo" }])).toBe(1 + 6 + 1 + 1);
  });
});
