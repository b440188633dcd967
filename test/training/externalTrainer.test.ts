import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { baseModels } from "../../services/lm/index.js";
import { KEY_ACME, KEY_OTHER, serviceForFile } from "../support/service.js";
import { eventsUntilEnd, trainingClient, type TrainingClient } from "./support.js";

/**
 * The relay to an external trainer (TRAINER=external): a separate Node process that speaks only
 * HTTP (externalTrainer.mjs) claims the job, sends its events, uploads weights and ends it;
 * real queue, real job runner, real ClickHouse. A trainer that goes silent fails the job after
 * TRAINER_LEASE_MS.
 */
const TEST_MS = 180_000;
/** Short for the test, long enough for a trainer process on a loaded 2-core machine (3 s was not). */
const LEASE_MS = 10_000;
const TRAINER = fileURLToPath(new URL("./externalTrainer.mjs", import.meta.url));
const MODELS = "/v1/preview/models";

const service = serviceForFile({ TRAINER: "external", TRAINER_LEASE_MS: String(LEASE_MS) });
let api: TrainingClient;

beforeAll(async () => {
  api = trainingClient(service.url);
});

/** Runs the external trainer to its exit; answers its exit code and the JSON line it printed. */
function runTrainer(trainerId: string, mode: "train" | "die" | "fail"): Promise<{ code: number | null; printed: Record<string, unknown> | null; stderr: string }> {
  const child = spawn(process.execPath, [TRAINER], {
    env: { PATH: process.env.PATH, TRACEHOUSE_URL: service.url, TRACEHOUSE_KEY: KEY_ACME, TRAINER_ID: trainerId, TRAINER_MODE: mode },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((done) => child.on("close", (code) => done({ code, printed: stdout.trim() ? (JSON.parse(stdout.trim()) as Record<string, unknown>) : null, stderr })));
}

const trajectory = (answer: string, reward: number) => ({ messages_and_choices: [{ role: "user", content: "2+2?" }, { message: { role: "assistant", content: answer }, finish_reason: "stop", index: 0 }], reward });

async function submitRlJob(name: string): Promise<{ modelId: string; jobId: string }> {
  const modelId = (await api.ok<{ id: string }>("POST", MODELS, { entity: "acme", project: "relay", name, base_model: baseModels()[0]!.id })).id;
  const groups = [{ trajectories: [trajectory("4", 1), trajectory("5", 0)] }, { trajectories: [trajectory("4", 1), trajectory("four", 0), trajectory("4", 1)] }];
  const { id } = await api.ok<{ id: string }>("POST", "/v1/preview/training-jobs", { model_id: modelId, trajectory_groups: groups });
  return { modelId, jobId: id };
}

describe("external trainer relay", () => {
  it("hands the job to a trainer process, relays its events in order and adds its weights as the next checkpoint", async () => {
    // Another entity's key is offered nothing of acme's.
    const { modelId, jobId } = await submitRlJob("m1");
    const other = trainingClient(service.url, KEY_OTHER);
    expect(await other.ok("POST", "/v1/trainer/claim", { trainer_id: "intruder" })).toEqual({ job: null });

    const run = await runTrainer("gpu-1", "train");
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
    expect(run.printed).toMatchObject({ job_id: jobId, attempt: 1, digest: expect.any(String) });

    const events = await eventsUntilEnd(api, jobId);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ["training_started", { num_sequences: 5 }],
      ["gradient_step", { loss: 0.5, learning_rate: 1e-4, grad_norm: 1.25 }],
      ["gradient_step", { loss: 0.25, learning_rate: 1e-4, grad_norm: 0.75 }],
      ["training_ended", {}],
    ]);
    const checkpoints = await api.ok<{ data: { step: number; metrics: Record<string, number> }[] }>("GET", `${MODELS}/${modelId}/checkpoints`);
    expect(checkpoints.data.map((c) => [c.step, c.metrics])).toEqual([[0, {}], [1, { loss: 0.25 }]]);
    expect(await api.ok("GET", `/v1/preview/training-jobs/${jobId}`)).toMatchObject({ status: "COMPLETED", error_message: null });

    // The job ended: a late message is refused (409), nothing is added.
    const late = await api.call("POST", `/v1/trainer/jobs/${jobId}/messages`, { trainer_id: "gpu-1", attempt: 1, seq: 9, type: "heartbeat", data: {} });
    expect(late.status).toBe(409);
    expect(late.body).toEqual({ detail: expect.stringContaining("completed"), message: expect.any(String) });
  }, TEST_MS);

  it("refuses malformed messages (422), unknown jobs (404) and trainers the attempt is not assigned to (409)", async () => {
    const { jobId } = await submitRlJob("m2");
    const bad = await api.call("POST", `/v1/trainer/jobs/${jobId}/messages`, { trainer_id: "t", attempt: 1, seq: 1, type: "gradient_step", data: { loss: "low" } });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ detail: expect.anything(), message: expect.any(String) });
    const unknown = await api.call("POST", "/v1/trainer/jobs/no-such-job/messages", { trainer_id: "t", attempt: 1, seq: 1, type: "heartbeat", data: {} });
    expect(unknown.status).toBe(404);
    // Claimed by gpu-2, which then goes silent: a message from anyone else is refused.
    const run = await runTrainer("gpu-2", "die");
    expect(run.code).toBe(0);
    const stranger = await api.call("POST", `/v1/trainer/jobs/${jobId}/messages`, { trainer_id: "gpu-3", attempt: 1, seq: 2, type: "heartbeat", data: {} });
    expect(stranger.status).toBe(409);
    // ... and after TRAINER_LEASE_MS of silence the job fails, saying why.
    const events = await eventsUntilEnd(api, jobId);
    expect(events.map((e) => e.type)).toEqual(["training_started", "training_failed"]);
    expect(events[1]!.data.error_message).toMatch(/^external trainer gpu-2 sent nothing for 10 s/);
    expect(await api.ok("GET", `/v1/preview/training-jobs/${jobId}`)).toMatchObject({ status: "FAILED", error_message: expect.stringContaining("gpu-2") });
  }, TEST_MS);

  it("says in the system check that jobs go to external trainers", async () => {
    const check = await api.ok<{ gpu_queue: { success: boolean; errors: string[] } }>("GET", "/v1/system-check");
    expect(check.gpu_queue).toEqual({ success: true, duration: 0, errors: [expect.stringContaining("TRAINER=external")] });
  });

  it("fails the job with the trainer's own message when it reports training_failed", async () => {
    const { modelId, jobId } = await submitRlJob("m3");
    expect((await runTrainer("gpu-4", "fail")).code).toBe(0);
    const events = await eventsUntilEnd(api, jobId);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ["training_started", { num_sequences: 5 }],
      ["training_failed", { error_message: "external trainer failed: CUDA out of memory" }],
    ]);
    const checkpoints = await api.ok<{ data: { step: number }[] }>("GET", `${MODELS}/${modelId}/checkpoints`);
    expect(checkpoints.data.map((c) => c.step)).toEqual([0]);
  }, TEST_MS);
});
