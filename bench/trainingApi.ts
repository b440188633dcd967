/**
 * The training API as the benches call it (lm, rlApi, requests): Bearer auth with the bench key,
 * models on the first built-in base model, RL jobs submitted and their events polled until the
 * end; and lm.bench's RL step: 4 counting questions × 8 answers sampled from the base model.
 */
import { BASE_MODEL_SPECS } from "../services/lm/baseModels.js";
import { countingQuestions, oneDigitPrompt } from "../services/lm/corpus.js";
import { baseModelWeights, loadModel, RL_DEFAULTS, type SamplingOptions } from "../services/lm/index.js";
import type { Completion } from "../services/lm/types.js";
import { BENCH_KEY } from "./support.js";

/** Longest wait for one job's end: an RL step under a heavy load took ~12 s, and jobs queue behind nothing here. */
const JOB_TIMEOUT_MS = 15 * 60_000;
/** How lm.bench samples from the model: the RL step's answers (8 tokens at most) and its generation figures. */
export const SAMPLING: SamplingOptions = { temperature: 1, topP: 1, maxTokens: 8, stop: [], topLogprobs: 0 };
/** The benches' models belong to this entity (the bench key may write any). */
export const BENCH_ENTITY = "bench";

export const user = (question: string) => [{ role: "user" as const, content: question }];

/** The training API with the bench key, as ART's backend calls it: JSON bodies, 200 or an error (thrown). */
export function trainingApi(baseUrl: string) {
  return async <T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${BENCH_KEY}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  };
}
export type TrainingApi = ReturnType<typeof trainingApi>;

/** A model of BENCH_ENTITY on the first built-in base model: its id. */
export async function createModel(api: TrainingApi, project: string, name: string): Promise<string> {
  return (await api<{ id: string }>("POST", "/v1/preview/models", { entity: BENCH_ENTITY, project, name, base_model: BASE_MODEL_SPECS[0]!.info.id })).id;
}

interface TrainingEvent {
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
}

/** Pages through a job's events with `after` = the last id seen, every `pollMs`, until it ends; a failed job throws. */
export async function jobEnded(api: TrainingApi, jobId: string, pollMs = 100): Promise<void> {
  const deadline = Date.now() + JOB_TIMEOUT_MS;
  let after = "";
  for (;;) {
    const page = await api<{ data: TrainingEvent[]; has_more: boolean }>("GET", `/v1/preview/training-jobs/${jobId}/events${after}`);
    const end = page.data.find((e) => e.type === "training_ended" || e.type === "training_failed");
    if (end?.type === "training_failed") throw new Error(`job ${jobId} failed: ${JSON.stringify(end.data)}`);
    if (end) return;
    if (page.data.length > 0) after = `?after=${page.data[page.data.length - 1]!.id}`;
    if (page.has_more) continue;
    if (Date.now() > deadline) throw new Error(`job ${jobId} did not end in time`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** A sampled answer to a question and its reward (every other one). */
export interface Sampled {
  readonly prompt: string;
  readonly completion: Completion;
  readonly reward: number;
}

/** 4 questions × 8 answers sampled from the base model (in this process): the 32 trajectories of one RL step. */
export async function sampleTrajectories(base: Uint8Array): Promise<Sampled[][]> {
  const model = await loadModel(base);
  const groups: Sampled[][] = [];
  for (const q of countingQuestions().slice(0, 4)) {
    const group: Sampled[] = [];
    for (let s = 0; s < 8; s++) group.push({ prompt: oneDigitPrompt(q), completion: await model.complete(user(oneDigitPrompt(q)), { ...SAMPLING, seed: s }), reward: s % 2 });
    groups.push(group);
  }
  model.dispose();
  return groups;
}

/** The first built-in base model's weights, from the cache `make base-model` fills. */
export async function benchBaseModel(): Promise<Uint8Array> {
  const base = await baseModelWeights(BASE_MODEL_SPECS[0]!.info.id);
  if (!base) throw new Error(`no base model ${BASE_MODEL_SPECS[0]!.info.id}: run make base-model`);
  return base;
}

/** The same trajectories as ART sends them (OpenAI choices with their logprobs). */
const apiGroups = (sampled: Sampled[][]) =>
  sampled.map((group) => ({
    trajectories: group.map(({ prompt, completion, reward }) => ({
      messages_and_choices: [
        { role: "user", content: prompt },
        {
          finish_reason: completion.finishReason,
          index: 0,
          logprobs: { content: completion.tokens.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes, top_logprobs: [] })) },
          message: { role: "assistant", content: completion.text, tool_calls: null },
        },
      ],
      reward,
    })),
  }));

/** One RL job on `sampled` (the library's default learning rate), submitted and polled until it ends. */
export async function rlJob(api: TrainingApi, modelId: string, sampled: Sampled[][]): Promise<void> {
  const { id } = await api<{ id: string }>("POST", "/v1/preview/training-jobs", { model_id: modelId, trajectory_groups: apiGroups(sampled), experimental_config: { learning_rate: RL_DEFAULTS.learningRate } });
  await jobEnded(api, id);
}
