import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseModels, baseModelWeights } from "../../services/lm/index.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { TrainingRepository } from "../../services/store/training/trainingRepository.js";
import { TrainedModels } from "../../services/training/trainedModels.js";
import { ForbiddenError } from "../../services/errors.js";
import { storeOn } from "../support/database.js";
import { KEY_ADMIN, KEY_OTHER, serviceForFile } from "../support/service.js";
import { trainingClient, UUID, type TrainingClient } from "./support.js";

const BASE = baseModels()[0]!.id;
const MODELS = "/v1/preview/models";

const service = serviceForFile();
let store: ClickHouseStore;
let api: TrainingClient;
let other: TrainingClient;

beforeAll(async () => {
  store = await storeOn(service.database);
  api = trainingClient(service.url);
  other = trainingClient(service.url, KEY_OTHER);
});

afterAll(async () => {
  await store.close();
});

const create = (name: string, extra: Record<string, unknown> = {}) => api.call("POST", MODELS, { entity: "acme", project: "cp", name, base_model: BASE, ...extra });

interface List<T> {
  object: string;
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}
type CheckpointView = { id: string; step: number; metrics: Record<string, number> };

describe("models", () => {
  it("creates a model with an untrained step-0 checkpoint, in exactly the spec's shape", async () => {
    const { status, body } = await create("m-shape", { return_existing: false, unknown_key: 1 });
    expect(status).toBe(200);
    expect(body).toEqual({ id: expect.stringMatching(UUID), entity: "acme", project: "cp", name: "m-shape", base_model: BASE, run_id: null });
    const list = await api.ok<List<CheckpointView>>("GET", `${MODELS}/${body.id as string}/checkpoints`);
    expect(list).toEqual({ object: "list", data: [{ id: expect.stringMatching(UUID), step: 0, metrics: {} }], first_id: list.data[0]!.id, last_id: list.data[0]!.id, has_more: false });
  });

  it("answers 409 for an existing name, and the existing model with return_existing", async () => {
    const first = await create("m-dup");
    const again = await create("m-dup");
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ detail: expect.stringContaining("return_existing") });
    const existing = await create("m-dup", { return_existing: true });
    expect(existing).toEqual(first);
  });

  it("takes the key's default entity for entity null, and refuses another entity's project", async () => {
    const { status, body } = await api.call("POST", MODELS, { entity: null, project: "cp", name: "m-default", base_model: BASE });
    expect(status).toBe(200);
    expect(body.entity).toBe("acme");
    expect((await other.call("POST", MODELS, { entity: "acme", project: "cp", name: "m-x", base_model: BASE })).status).toBe(403);
    expect((await create("m-x", { return_existing: true })).body.name).toBe("m-x");
  });

  it("refuses an unknown base model and bad bodies, writing nothing", async () => {
    const unknown = await create("m-bad", { base_model: "no/such-model" });
    expect(unknown.status).toBe(400);
    const missing = await api.call("POST", MODELS, { entity: "acme", project: "cp", name: "m-bad" });
    expect(missing).toEqual({ status: 422, body: { detail: [{ loc: ["body", "base_model"], msg: expect.any(String), type: "invalid_type" }], message: expect.any(String) } });
    expect(await new TrainingRepository(store).modelByName("acme", "cp", "m-bad")).toBeNull();
  });

  it("deletes a model with its checkpoints; it is gone afterwards and its name free again", async () => {
    const model = (await create("m-del")).body as { id: string };
    const answer = await api.ok("DELETE", `${MODELS}/${model.id}`);
    expect(answer).toEqual({ model_id: model.id, deleted_checkpoints: 1, deleted_run: false });
    expect((await api.call("GET", `${MODELS}/${model.id}/checkpoints`)).status).toBe(404);
    expect((await api.call("DELETE", `${MODELS}/${model.id}`)).status).toBe(404);
    const again = (await create("m-del")).body as { id: string };
    expect(again.id).not.toBe(model.id);
  });

  it("answers 404 for an unknown model and 403 for another entity's, on every model route", async () => {
    const model = (await create("m-scope")).body as { id: string };
    const routes: ["GET" | "POST" | "DELETE", string, unknown][] = [
      ["GET", `${MODELS}/{id}/checkpoints`, undefined],
      ["DELETE", `${MODELS}/{id}/checkpoints`, { steps: [0] }],
      ["POST", `${MODELS}/{id}/log`, { trajectory_groups: [] }],
      ["DELETE", `${MODELS}/{id}`, undefined],
    ];
    for (const [method, path, body] of routes) {
      expect((await api.call(method, path.replace("{id}", "00000000-0000-4000-8000-000000000000"), body)).status).toBe(404);
      expect((await other.call(method, path.replace("{id}", model.id), body)).status).toBe(403);
    }
    expect((await api.ok<List<CheckpointView>>("GET", `${MODELS}/${model.id}/checkpoints`)).data).toHaveLength(1);
  });
});

describe("checkpoints", () => {
  let modelId: string;
  let ids: string[];

  beforeAll(async () => {
    modelId = ((await create("m-pages")).body as { id: string }).id;
    const repo = new TrainingRepository(store);
    const zero = (await repo.latestCheckpoint(modelId))!;
    for (let step = 1; step <= 4; step++) await repo.addCheckpoint(modelId, { metrics: { loss: 1 / step }, weightsDigest: zero.weightsDigest, jobId: `job-${step}` });
    ids = (await api.ok<List<CheckpointView>>("GET", `${MODELS}/${modelId}/checkpoints?limit=100`)).data.map((c) => c.id);
  });

  it("pages with after, limit and order", async () => {
    const path = `${MODELS}/${modelId}/checkpoints`;
    expect(ids).toHaveLength(5);
    const first = await api.ok<List<CheckpointView>>("GET", `${path}?limit=2`);
    expect(first).toEqual({ object: "list", data: [{ id: ids[0], step: 0, metrics: {} }, { id: ids[1], step: 1, metrics: { loss: 1 } }], first_id: ids[0], last_id: ids[1], has_more: true });
    const second = await api.ok<List<CheckpointView>>("GET", `${path}?limit=2&after=${ids[1]}`);
    expect(second.data.map((c) => c.step)).toEqual([2, 3]);
    expect(second.has_more).toBe(true);
    const last = await api.ok<List<CheckpointView>>("GET", `${path}?limit=2&after=${ids[3]}`);
    expect(last).toMatchObject({ data: [{ step: 4, metrics: { loss: 0.25 } }], has_more: false });
    const latest = await api.ok<List<CheckpointView>>("GET", `${path}?limit=1&order=desc`);
    expect(latest).toMatchObject({ data: [{ id: ids[4], step: 4 }], has_more: true });
    const down = await api.ok<List<CheckpointView>>("GET", `${path}?order=desc&after=${ids[2]}`);
    expect(down.data.map((c) => c.step)).toEqual([1, 0]);
    expect(down.has_more).toBe(false);
    const defaults = await api.ok<List<CheckpointView>>("GET", path);
    expect(defaults.data.map((c) => c.step)).toEqual([0, 1, 2, 3, 4]);
  });

  it("refuses a bad limit, order or cursor with the detail shape", async () => {
    const path = `${MODELS}/${modelId}/checkpoints`;
    for (const query of ["limit=0", "limit=101", "limit=x", "order=up"]) {
      const answer = await api.call<{ detail: { loc: string[] }[] }>("GET", `${path}?${query}`);
      expect(answer.status).toBe(422);
      expect(answer.body.detail[0]!.loc[0]).toBe("query");
    }
    const cursor = await api.call<{ detail: { loc: string[] }[] }>("GET", `${path}?after=nope`);
    expect(cursor.status).toBe(422);
    expect(cursor.body.detail[0]!.loc).toEqual(["query", "after"]);
  });

  it("deletes checkpoints by step and names the steps it did not find", async () => {
    const path = `${MODELS}/${modelId}/checkpoints`;
    expect(await api.ok("DELETE", path, { steps: [1, 3, 9, 3] })).toEqual({ deleted_count: 2, not_found_steps: [9] });
    expect((await api.ok<List<CheckpointView>>("GET", path)).data.map((c) => c.step)).toEqual([0, 2, 4]);
    expect(await api.ok("DELETE", path, { steps: [] })).toEqual({ deleted_count: 0, not_found_steps: [] });
    expect((await api.call("DELETE", path, { steps: [-1] })).status).toBe(422);
  });
});

describe("trajectory logs", () => {
  it("stores logged groups with their reward metrics, split defaulting to val", async () => {
    const model = (await create("m-log")).body as { id: string };
    const group = (rewards: number[]) => ({
      trajectories: rewards.map((reward) => ({ messages_and_choices: [{ role: "user", content: "hi" }], reward, metrics: {}, metadata: {}, logs: [] })),
      exceptions: [], metadata: {}, metrics: {}, logs: [],
    });
    expect(await api.ok("POST", `${MODELS}/${model.id}/log`, { model_id: model.id, trajectory_groups: [group([1, 0]), group([1, 1])] })).toEqual({});
    expect(await api.ok("POST", `${MODELS}/${model.id}/log`, { trajectory_groups: [group([0])], split: "train" })).toEqual({});
    expect((await api.call("POST", `${MODELS}/${model.id}/log`, { model_id: "another", trajectory_groups: [] })).status).toBe(400);
    const logs = await new TrainingRepository(store).trajectoryLogs(model.id);
    expect(logs.map((l) => ({ split: l.split, metrics: l.metrics }))).toEqual([
      { split: "val", metrics: { reward: 0.75, reward_std_dev: Math.sqrt(0.1875), num_trajectories: 4, num_groups: 2 } },
      { split: "train", metrics: { reward: 0, reward_std_dev: 0, num_trajectories: 1, num_groups: 1 } },
    ]);
    expect((logs[0]!.groups as unknown[]).length).toBe(2);
  });
});

describe("training job routes without running a job", () => {
  it("answers 404 for an unknown job, 404 for an unknown model and 422 for a bad body", async () => {
    expect((await api.call("GET", "/v1/preview/training-jobs/00000000-0000-4000-8000-000000000000")).status).toBe(404);
    expect((await api.call("GET", "/v1/preview/training-jobs/00000000-0000-4000-8000-000000000000/events")).status).toBe(404);
    const group = { trajectories: [{ messages_and_choices: [], reward: 1 }] };
    expect((await api.call("POST", "/v1/preview/training-jobs", { model_id: "00000000-0000-4000-8000-000000000000", trajectory_groups: [group] })).status).toBe(404);
    const model = (await create("m-jobs")).body as { id: string };
    const bad = await api.call<{ detail: { loc: string[] }[] }>("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: [] });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]!.loc).toEqual(["body", "trajectory_groups"]);
    const noData = await api.call<{ detail: { loc: string[] }[] }>("POST", "/v1/preview/sft-training-jobs", { model_id: model.id, config: {} });
    expect(noData.status).toBe(422);
    expect(noData.body.detail[0]!.loc).toEqual(["body", "training_data_url"]);
    const artifact = await api.call("POST", "/v1/preview/sft-training-jobs", { model_id: model.id, training_data_url: "s3://bucket/data.jsonl" });
    expect(artifact.status).toBe(422);
    const foreign = await api.call("POST", "/v1/preview/sft-training-jobs", { model_id: model.id, training_folder_url: "weave:///other/p/file/abc" });
    expect(foreign.status).toBe(403);
  });
});

describe("health", () => {
  it("answers /v1/health without a key and /v1/system-check with every check", async () => {
    const health = await fetch(`${service.url}/v1/health`);
    expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: "ok" } });
    const check = await api.call("GET", "/v1/system-check");
    const passed = { success: true, duration: expect.any(Number), errors: [] };
    expect(check).toEqual({
      status: 200,
      body: { api: passed, database: passed, cpu_queue: passed, gpu_queue: { success: true, duration: 0, errors: [expect.stringContaining("no GPU trainer")] } },
    });
  });
});

describe("trained model weights for chat completions", () => {
  it("finds a model's latest or named step, null for unknown ones, and checks reach first", async () => {
    const model = (await create("m-chat")).body as { id: string };
    const models = new TrainedModels(store);
    const reached: string[] = [];
    const reach = (projectId: string) => void reached.push(projectId);
    const latest = await models.weightsFor("wandb-artifact:///acme/cp/m-chat", reach);
    expect({ ...latest, weights: null }).toEqual({ modelId: model.id, step: 0, weights: null });
    expect(Buffer.from(latest!.weights).equals(Buffer.from((await baseModelWeights(BASE))!))).toBe(true);
    expect(reached).toEqual(["acme/cp"]);
    expect((await models.weightsFor("wandb-artifact:///acme/cp/m-chat:step0", reach))?.step).toBe(0);
    expect(await models.weightsFor("wandb-artifact:///acme/cp/m-chat:step7", reach)).toBeNull();
    expect(await models.weightsFor("wandb-artifact:///acme/cp/nothing", reach)).toBeNull();
    expect(await models.weightsFor(BASE, reach)).toBeNull();
    const refuse = (projectId: string) => {
      throw new ForbiddenError(`no ${projectId}`);
    };
    await expect(models.weightsFor("wandb-artifact:///acme/cp/m-chat", refuse)).rejects.toThrow(ForbiddenError);
  });
});

describe("admin keys", () => {
  it("an all-entities key creates under its username for entity null", async () => {
    const admin = trainingClient(service.url, KEY_ADMIN);
    const { body } = await admin.call("POST", MODELS, { entity: null, project: "cp", name: "m-admin", base_model: BASE });
    expect(body.entity).toBe("root");
  });
});
