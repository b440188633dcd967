import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseModels, baseModelWeights, loadModel, type LanguageModel } from "../../services/lm/index.js";
import { client, KEY_ACME, serviceForFile } from "../support/service.js";
import { eventsUntilEnd, trainingClient, UUID, type TrainingClient, type TrainingEvent } from "./support.js";

/** Training on a busy CPU takes a while: each test waits up to this long. */
const JOB_TEST_MS = 300_000;

/**
 * Training jobs end to end through HTTP, on the built-in trainer (CPU): the RL loop as ART runs
 * it, SFT from a dataset table and from an http URL, the order of one model's jobs, failures.
 */
const BASE = baseModels()[0]!.id;
const MODELS = "/v1/preview/models";

const service = serviceForFile();
let api: TrainingClient;
let dataServer: Server;
let dataUrl: string;

const SFT_ROWS = [
  { messages: [{ role: "user", content: "What is the tracehouse colour?" }, { role: "assistant", content: "Teal, always teal." }] },
  { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Name the mascot." }, { role: "assistant", content: "Otto the otter." }] },
];
/** The same two examples twelve times: one epoch of batch 2 is twelve steps over data it learns. */
const REPEATED = Array.from({ length: 12 }, () => SFT_ROWS).flat();

beforeAll(async () => {
  api = trainingClient(service.url);
  dataServer = createServer((req, res) => {
    if (req.url === "/data.jsonl") {
      res.writeHead(200, { "content-type": "application/jsonl" });
      res.end(REPEATED.map((r) => JSON.stringify(r)).join("\n") + "\n");
    } else {
      res.writeHead(404).end("not here");
    }
  });
  await new Promise<void>((done) => dataServer.listen(0, "127.0.0.1", done));
  const address = dataServer.address();
  dataUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(async () => {
  await new Promise((done) => dataServer.close(done));
});

const createModel = async (name: string) => (await api.ok<{ id: string }>("POST", MODELS, { entity: "acme", project: "jobs", name, base_model: BASE })).id;
const latestCheckpoint = async (modelId: string) =>
  (await api.ok<{ data: { id: string; step: number; metrics: Record<string, number> }[] }>("GET", `${MODELS}/${modelId}/checkpoints?limit=1&order=desc`)).data[0]!;
const job = (id: string) => api.ok<Record<string, unknown>>("GET", `/v1/preview/training-jobs/${id}`);

function expectNumbers(data: Record<string, unknown>): void {
  expect(Object.keys(data).length).toBeGreaterThan(0);
  for (const value of Object.values(data)) expect(typeof value).toBe("number");
}

/** Events as ART needs them: training_started (num_sequences) first, gradient steps with numbers only, the end last. */
function checkEventOrder(events: TrainingEvent[], end: "training_ended" | "training_failed"): void {
  expect(events[0]).toMatchObject({ id: expect.stringMatching(UUID), type: "training_started", data: { num_sequences: expect.any(Number) } });
  const steps = events.filter((e) => e.type === "gradient_step");
  expect(steps.length).toBeGreaterThan(0);
  for (const step of steps) expectNumbers(step.data);
  expect(events[events.length - 1]!.type).toBe(end);
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
}

/** A sampled completion as an OpenAI choice, as ART sends it back inside a trajectory. */
function choiceOf(completion: Awaited<ReturnType<LanguageModel["complete"]>>) {
  return {
    finish_reason: completion.finishReason,
    index: 0,
    logprobs: { content: completion.tokens.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes, top_logprobs: [] })) },
    message: { role: "assistant", content: completion.text, tool_calls: null },
  };
}

describe("RL", () => {
  it("samples, scores, trains on the groups and lists the new checkpoint when training_ended arrives", async () => {
    const modelId = await createModel("rl");
    const policy = await loadModel((await baseModelWeights(BASE))!);
    const questions = [{ a: 2, b: 3, answer: 5 }, { a: 4, b: 1, answer: 5 }, { a: 6, b: 2, answer: 8 }];
    const groups = [];
    try {
      for (const [i, q] of questions.entries()) {
        const prompt = `What is ${q.a}+${q.b}? Answer with one digit.`;
        const trajectories = [];
        for (let k = 0; k < 4; k++) {
          const completion = await policy.complete([{ role: "user", content: prompt }], { temperature: 1, topP: 1, maxTokens: 8, stop: ["\n"], seed: i * 10 + k, topLogprobs: 0 });
          const digit = /[0-9]/.exec(completion.text)?.[0];
          trajectories.push({
            messages_and_choices: [{ role: "user", content: prompt }, choiceOf(completion)],
            tools: null, additional_histories: [], reward: digit === String(q.answer) ? 1 : 0,
            initial_policy_version: 0, final_policy_version: 0, metrics: {}, metadata: {}, logs: [],
          });
        }
        groups.push({ trajectories, exceptions: [], metadata: {}, metrics: {}, logs: [] });
      }
    } finally {
      policy.dispose();
    }
    const config = { learning_rate: 1e-3, epsilon: null, epsilon_high: null, advantage_balance: null, normalize_advantages: true, loss_fn: "ppo", precalculate_logprobs: null };
    const { id } = await api.ok<{ id: string }>("POST", "/v1/preview/training-jobs", { model_id: modelId, trajectory_groups: groups, experimental_config: config });
    expect(id).toMatch(UUID);
    const events = await eventsUntilEnd(api, id);
    checkEventOrder(events, "training_ended");
    expect(events[0]!.data.num_sequences).toBe(12);
    // Right after training_ended, as ART does: the new checkpoint is there.
    const checkpoint = await latestCheckpoint(modelId);
    expect(checkpoint).toMatchObject({ step: 1, metrics: { loss: expect.any(Number), reward: expect.any(Number), learning_rate: 1e-3 } });
    expect(await job(id)).toEqual({
      id, status: "COMPLETED", model_id: modelId, kind: "rl",
      created_at: expect.any(String), training_start: expect.any(String), training_end: expect.any(String), error_message: null,
    });
    // Paging from the first event gives the rest, in order.
    const again = await api.ok<{ data: { type: string }[]; has_more: boolean }>("GET", `/v1/preview/training-jobs/${id}/events?after=${events[0]!.id}&limit=100`);
    expect(again.data.map((e) => e.type)).toEqual(events.slice(1).map((e) => e.type));
    expect(again.has_more).toBe(false);
  }, JOB_TEST_MS);
});

describe("SFT", () => {
  it("trains from a dataset table of our store and the loss falls", async () => {
    const modelId = await createModel("sft-dataset");
    const tracing = client(service.url);
    const table = await tracing.json<{ digest: string }>("/table/create", { table: { project_id: "acme/jobs", rows: REPEATED } });
    const dataset = { _type: "Dataset", _class_name: "Dataset", _bases: ["Object", "BaseModel"], name: "chat-sft", description: null, rows: `weave:///acme/jobs/table/${table.digest}` };
    const object = await tracing.json<{ digest: string }>("/obj/create", { obj: { project_id: "acme/jobs", object_id: "chat-sft", val: dataset } });
    const body = { model_id: modelId, training_data_url: `weave:///acme/jobs/object/chat-sft:${object.digest}`, config: { batch_size: 2, learning_rate: 1e-2 } };
    const { id } = await api.ok<{ id: string }>("POST", "/v1/preview/sft-training-jobs", body);
    const events = await eventsUntilEnd(api, id);
    checkEventOrder(events, "training_ended");
    expect(events[0]!.data.num_sequences).toBe(REPEATED.length);
    const losses = events.filter((e) => e.type === "gradient_step").map((e) => e.data.loss as number);
    expect(losses).toHaveLength(12);
    expect(losses[losses.length - 1]!).toBeLessThan(losses[0]! * 0.7);
    expect(await latestCheckpoint(modelId)).toMatchObject({ step: 1, metrics: { loss: losses[losses.length - 1] } });
    expect(await job(id)).toMatchObject({ status: "COMPLETED", kind: "sft" });
  }, JOB_TEST_MS);

  it("trains from an http URL (the older field name too), and fails a job whose data URL answers 404", async () => {
    const modelId = await createModel("sft-http");
    const good = await api.ok<{ id: string }>("POST", "/v1/preview/sft-training-jobs", { model_id: modelId, training_folder_url: `${dataUrl}/data.jsonl`, config: { batch_size: 4, learning_rate: [1e-2] } });
    const missing = await api.ok<{ id: string }>("POST", "/v1/preview/sft-training-jobs", { model_id: modelId, training_data_url: `${dataUrl}/gone.jsonl` });
    const goodEvents = await eventsUntilEnd(api, good.id);
    checkEventOrder(goodEvents, "training_ended");
    const failed = await eventsUntilEnd(api, missing.id);
    expect(failed).toEqual([{ id: expect.stringMatching(UUID), type: "training_failed", data: { error_message: expect.stringContaining("404") } }]);
    expect(await job(missing.id)).toMatchObject({ status: "FAILED", kind: "sft", error_message: expect.stringContaining("404"), training_end: expect.any(String) });
    // The failed job added no checkpoint.
    expect((await latestCheckpoint(modelId)).step).toBe(1);
  }, JOB_TEST_MS);
});

describe("SFT from a W&B artifact URL", () => {
  it("reads wandb-artifact:///<entity>/<project>/<name>:v0 as that object of our store, here one holding a train.jsonl file", async () => {
    const modelId = await createModel("sft-artifact");
    const form = new FormData();
    form.append("project_id", "acme/jobs");
    form.append("file", new Blob([REPEATED.map((r) => JSON.stringify(r)).join("\n") + "\n"]), "train.jsonl");
    const upload = await fetch(`${service.url}/file/create`, { method: "POST", headers: { authorization: `Bearer ${KEY_ACME}` }, body: form });
    const { digest } = (await upload.json()) as { digest: string };
    await client(service.url).json("/obj/create", { obj: { project_id: "acme/jobs", object_id: "chat-sft-data", val: { format: "jsonl", files: { "train.jsonl": digest } } } });
    const { id } = await api.ok<{ id: string }>("POST", "/v1/preview/sft-training-jobs", { model_id: modelId, training_data_url: "wandb-artifact:///acme/jobs/chat-sft-data:v0", config: { batch_size: 8 } });
    const events = await eventsUntilEnd(api, id);
    checkEventOrder(events, "training_ended");
    expect(events[0]!.data.num_sequences).toBe(REPEATED.length);
    // A version the object does not have fails the job, saying so.
    const missing = await api.ok<{ id: string }>("POST", "/v1/preview/sft-training-jobs", { model_id: modelId, training_data_url: "wandb-artifact:///acme/jobs/chat-sft-data:v7" });
    const failed = await eventsUntilEnd(api, missing.id);
    expect(failed.map((e) => e.type)).toEqual(["training_failed"]);
    expect(failed[0]!.data.error_message).toContain("no version");
  }, JOB_TEST_MS);
});

describe("order", () => {
  it("runs the jobs of one model one at a time, in submission order, each from the previous checkpoint", async () => {
    const modelId = await createModel("ordered");
    const body = { model_id: modelId, training_data_url: `${dataUrl}/data.jsonl`, config: { batch_size: 8 } };
    const first = await api.ok<{ id: string }>("POST", "/v1/preview/sft-training-jobs", body);
    const second = await api.ok<{ id: string }>("POST", "/v1/preview/sft-training-jobs", body);
    await eventsUntilEnd(api, second.id);
    const [a, b] = [await job(first.id), await job(second.id)];
    expect(a.status).toBe("COMPLETED");
    expect(b.status).toBe("COMPLETED");
    expect(Date.parse(a.training_end as string)).toBeLessThanOrEqual(Date.parse(b.training_start as string));
    const steps = (await api.ok<{ data: { step: number }[] }>("GET", `${MODELS}/${modelId}/checkpoints`)).data.map((c) => c.step);
    expect(steps).toEqual([0, 1, 2]);
  }, JOB_TEST_MS);
});
