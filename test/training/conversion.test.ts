import { describe, expect, it } from "vitest";
import { RL_DEFAULTS, SFT_DEFAULTS } from "../../services/lm/index.js";
import { parseJsonl, sftDataSource } from "../../services/worker/jobs/trainingData.js";
import { rlConfigOf, rlGroupsOf, sftConfigOf, sftExamplesOf } from "../../services/worker/jobs/trainerJob.js";

describe("API JSON → lm's training types", () => {
  it("turns choices into trainable turns with their sampled logprobs and messages into context", () => {
    const choice = {
      finish_reason: "stop", index: 0,
      logprobs: { content: [{ token: "5", logprob: -0.1, bytes: [53], top_logprobs: [] }, { token: "!", logprob: -2, top_logprobs: [] }] },
      message: { role: "assistant", content: "5!", tool_calls: null }, extra: "kept",
    };
    const groups = rlGroupsOf([{
      trajectories: [
        { messages_and_choices: [{ role: "system", content: [{ type: "text", text: "Be " }, { type: "text", text: "brief." }] }, { role: "user", content: "2+3?" }, choice], reward: 1 },
        { messages_and_choices: [{ role: "user", content: "2+3?" }, { ...choice, logprobs: null }, { role: "assistant", content: "no" }], reward: 0 },
      ],
    }]);
    expect(groups).toEqual([{
      trajectories: [
        {
          reward: 1,
          items: [
            { kind: "context", turn: { role: "system", content: "Be brief." } },
            { kind: "context", turn: { role: "user", content: "2+3?" } },
            { kind: "choice", choice: { content: "5!", sampled: [{ bytes: [53], logprob: -0.1 }, { bytes: [33], logprob: -2 }] } },
          ],
        },
        {
          reward: 0,
          items: [
            { kind: "context", turn: { role: "user", content: "2+3?" } },
            { kind: "choice", choice: { content: "5!", sampled: null } },
            { kind: "context", turn: { role: "assistant", content: "no" } },
          ],
        },
      ],
    }]);
    expect(() => rlGroupsOf([{ trajectories: [{ messages_and_choices: [{ role: "wizard", content: "x" }], reward: 0 }] }])).toThrow(/unknown role/);
  });

  it("reads SFT rows and refuses a row without messages, naming it", () => {
    expect(sftExamplesOf([{ messages: [{ role: "user", content: "a" }, { role: "assistant", content: "b" }], tools: [] }])).toEqual([
      { messages: [{ role: "user", content: "a" }, { role: "assistant", content: "b" }] },
    ]);
    expect(() => sftExamplesOf([{ messages: [{ role: "user", content: "a" }] }, { text: "x" }])).toThrow("training data example 2");
    expect(() => sftExamplesOf([])).toThrow(/no examples/);
    expect(parseJsonl('{"a":1}\n\n{"b":2}\n')).toEqual([{ a: 1 }, { b: 2 }]);
    expect(() => parseJsonl('{"a":1}\nnot json')).toThrow("line 2");
  });

  it("fills configs from lm's defaults where the API sends null", () => {
    expect(rlConfigOf(null, RL_DEFAULTS)).toEqual(RL_DEFAULTS);
    expect(rlConfigOf({ learning_rate: 0.01, epsilon: 0.3, epsilon_high: null, normalize_advantages: false, loss_fn: "cispo" }, RL_DEFAULTS)).toEqual({
      learningRate: 0.01, epsilon: 0.3, epsilonHigh: 0.3, normalizeAdvantages: false, lossFn: "cispo",
    });
    expect(sftConfigOf({ batch_size: null, learning_rate: [0.1, 0.2] }, SFT_DEFAULTS)).toEqual({ ...SFT_DEFAULTS, learningRate: [0.1, 0.2] });
  });

  it("names the source of SFT data", () => {
    expect(sftDataSource("https://x.test/d.jsonl")).toEqual({ kind: "http", url: "https://x.test/d.jsonl" });
    expect(sftDataSource("weave:///acme/p/file/abc")).toEqual({ kind: "file", projectId: "acme/p", digest: "abc" });
    expect(sftDataSource("weave:///acme/p/table/t1")).toEqual({ kind: "table", projectId: "acme/p", digest: "t1" });
    expect(sftDataSource("weave:///acme/p/object/ds:d1")).toEqual({ kind: "object", projectId: "acme/p", name: "ds", digest: "d1" });
    expect(sftDataSource("wandb-artifact:///acme/p/ds:v0")).toEqual({ kind: "object", projectId: "acme/p", name: "ds", digest: "v0" });
    expect(sftDataSource("wandb-artifact:///acme/p/ds")).toEqual({ kind: "object", projectId: "acme/p", name: "ds", digest: "latest" });
    expect(() => sftDataSource("wandb-artifact:///acme/p/ds/extra:v0")).toThrow(/unsupported training data URL/);
    expect(() => sftDataSource("weave:///acme/p/call/c1")).toThrow(/unsupported training data URL/);
  });
});
