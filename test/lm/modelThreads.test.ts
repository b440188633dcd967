import { readdirSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { RetryableError } from "../../services/errors.js";
import { InvalidWeightsError, loadModel, trainRl, trainSft, TrainingInputError, type SamplingOptions, type TokenLogprob } from "../../services/lm/index.js";
import { ModelThreads } from "../../services/lm/modelThreads.js";
import { RL_DEFAULTS } from "../../services/lm/trainingDefaults.js";
import { recorder, SAY_IT, tinyWeights } from "./support.js";

/**
 * The model threads the service samples and trains with (services/lm/modelThreads.ts): a real
 * worker thread each, against the library called on this thread. What crosses the thread
 * boundary must come back as the library gives it: the same completion for the same seed, the
 * same training, the same progress, the library's errors by type, and a stop that fails cleanly.
 */
const threads = new ModelThreads({ count: 2, cacheBytes: 64 * 1024 * 1024, log: pino({ level: "silent" }) });
afterAll(async () => {
  await threads.stop();
});

const SAMPLING: SamplingOptions = { temperature: 1, topP: 0.9, maxTokens: 12, stop: [], topLogprobs: 2, seed: 5 };
const tiny = { key: "tiny", weights: tinyWeights() };
const SFT_EXAMPLES = Array.from({ length: 6 }, (_, i) => ({ messages: [...SAY_IT, { role: "assistant" as const, content: `It ${i}` }] }));

describe("completions in a model thread", () => {
  it("give the library's completion for the same seed, and stream exactly its tokens", async () => {
    const local = await loadModel(tiny.weights);
    const expected = await local.complete(SAY_IT, SAMPLING);
    local.dispose();
    const streamed: TokenLogprob[] = [];
    const completion = await threads.complete(tiny, SAY_IT, SAMPLING, { onToken: (token) => streamed.push(token) });
    expect(completion).toEqual(expected);
    expect(streamed).toEqual(expected.tokens);
    expect(await threads.complete(tiny, SAY_IT, SAMPLING)).toEqual(expected);
  });

  it("fail with the error the token handler throws, or the reason of an aborted signal", async () => {
    class Gone extends Error {}
    const options = { ...SAMPLING, maxTokens: 40 };
    await expect(threads.complete(tiny, SAY_IT, options, { onToken: () => { throw new Gone(); } })).rejects.toBeInstanceOf(Gone);
    const aborted = AbortSignal.abort(new Error("job interrupted"));
    await expect(threads.complete(tiny, SAY_IT, options, { signal: aborted })).rejects.toThrow("job interrupted");
    // The thread goes on serving.
    expect((await threads.complete(tiny, SAY_IT, SAMPLING)).completionTokens).toBeGreaterThan(0);
  });

  it("refuse weights that are no model with the library's InvalidWeightsError", async () => {
    await expect(threads.complete({ key: "broken", weights: new Uint8Array([1, 2, 3]) }, SAY_IT, SAMPLING)).rejects.toBeInstanceOf(InvalidWeightsError);
  });
});

/** The nice value of each thread of this process (Linux: field 19 of /proc/self/task/<tid>/stat). */
function threadNiceness(): number[] {
  return readdirSync("/proc/self/task").map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
  });
}

describe.runIf(process.platform === "linux")("a model thread's priority", () => {
  it("is lowered for that thread alone: the thread that answers requests keeps its own", async () => {
    await threads.complete(tiny, SAY_IT, SAMPLING);
    const own = getPriority();
    const niceness = threadNiceness();
    expect(niceness.filter((n) => n === own + 5).length).toBeGreaterThanOrEqual(1);
    expect(niceness.filter((n) => n === own).length).toBeGreaterThanOrEqual(1);
    expect(getPriority()).toBe(own);
  });
});

describe("training in a model thread", () => {
  it("gives the library's weights, metrics and progress for SFT and RL", async () => {
    const config = { learningRate: 1e-2, batchSize: 2, assistantTurns: "all" as const };
    const localProgress = recorder();
    const local = await trainSft(tinyWeights(), SFT_EXAMPLES, config, localProgress);
    const progress = recorder();
    const remote = await threads.trainSft(tinyWeights(), SFT_EXAMPLES, config, progress);
    expect(progress.sequences).toEqual(localProgress.sequences);
    expect(progress.steps).toEqual(localProgress.steps);
    expect(remote.metrics).toEqual(local.metrics);
    expect(Buffer.from(remote.weights).equals(Buffer.from(local.weights))).toBe(true);

    const choice = (content: string) => ({ kind: "choice" as const, choice: { content, sampled: null } });
    const groups = [{ trajectories: [{ reward: 1, items: [choice("yes")] }, { reward: 0, items: [choice("no")] }] }];
    const rlLocal = await trainRl(tinyWeights(), groups, RL_DEFAULTS, recorder());
    const rlRemote = await threads.trainRl(tinyWeights(), groups, RL_DEFAULTS, recorder());
    expect(rlRemote.metrics).toEqual(rlLocal.metrics);
  });

  it("fails with the library's TrainingInputError and its message", async () => {
    const groups = [{ trajectories: [{ reward: 1, items: [{ kind: "context" as const, turn: SAY_IT[0]! }] }] }];
    const failure = threads.trainRl(tinyWeights(), groups, RL_DEFAULTS, recorder());
    await expect(failure).rejects.toBeInstanceOf(TrainingInputError);
    await expect(failure).rejects.toThrow("no trajectory has a choice to train on");
  });
});

describe("stopped model threads", () => {
  it("fail the work they held and refuse new work with a RetryableError", async () => {
    const stopping = new ModelThreads({ count: 1, cacheBytes: 64 * 1024 * 1024, log: pino({ level: "silent" }) });
    const held = stopping.trainSft(tinyWeights(), Array.from({ length: 64 }, () => SFT_EXAMPLES[0]!), { learningRate: 1e-3, batchSize: 1, assistantTurns: "all" }, recorder());
    await stopping.stop();
    await expect(held).rejects.toBeInstanceOf(RetryableError);
    await expect(stopping.complete(tiny, SAY_IT, SAMPLING)).rejects.toBeInstanceOf(RetryableError);
  });
});
