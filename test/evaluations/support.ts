import { afterAll, beforeAll } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { storeOn } from "../support/database.js";
import { until } from "../support/polling.js";
import { serviceForFile, type Client } from "../support/service.js";

/** The built-in base model: the evaluated model and the judge. Greedy and a few tokens, so runs stay short. */
export const BASE_MODEL = "tracehouse/bytelm-small";
export const PARAMS = { temperature: 0, max_tokens: 3 };

/** Single-digit sums, which the base model answers with one digit (so the judge's answer often parses as JSON). */
export const QUESTIONS = [{ question: "1+1=" }, { question: "2+3=" }, { question: "4+4=" }, { question: "3+1=" }];

export interface EvalSetup {
  readonly evaluation: string;
  readonly model: string;
  readonly scorer: string;
  readonly datasetRef: string;
}

const ref = (project: string, name: string, digest: string) => `weave:///${project}/object/${name}:${digest}`;

export async function createObject(api: Client, project: string, objectId: string, val: Record<string, unknown>): Promise<string> {
  const { digest } = await api.json<{ digest: string }>("/obj/create", { obj: { project_id: project, object_id: objectId, val } });
  return ref(project, objectId, digest);
}

export function llmModel(llmModelId: string, template: { role: string; content: string }[]): Record<string, unknown> {
  return {
    _type: "LLMStructuredCompletionModel", _class_name: "LLMStructuredCompletionModel", _bases: ["Model", "Object", "BaseModel"],
    llm_model_id: llmModelId, default_params: { messages_template: template, ...PARAMS },
  };
}

export interface SetupOptions {
  readonly rows?: Record<string, unknown>[];
  readonly trials?: number;
  readonly modelId?: string;
}

/** An LLM judge scorer named "judge" on the base model, scoring `{question}{output}`: its object's ref. */
export function createJudge(api: Client, project: string): Promise<string> {
  return createObject(api, project, "judge", {
    _type: "LLMAsAJudgeScorer", _class_name: "LLMAsAJudgeScorer", _bases: ["Scorer", "Object", "BaseModel"], name: "judge",
    model: llmModel(BASE_MODEL, []), scoring_prompt: "{question}{output}",
  });
}

/** A dataset (through /v2/ datasets: a Dataset object over a table), an LLM judge, an evaluation and a model. */
export async function evaluationSetup(api: Client, project: string, options: SetupOptions = {}): Promise<EvalSetup> {
  const dataset = await api.json<{ digest: string; object_id: string }>(`/v2/${project}/datasets`, { name: "sums", rows: options.rows ?? QUESTIONS });
  const datasetRef = ref(project, dataset.object_id, dataset.digest);
  const scorer = await createJudge(api, project);
  const evaluation = await createObject(api, project, "sums-eval", {
    _type: "Evaluation", _class_name: "Evaluation", _bases: ["Object", "BaseModel"], name: "sums-eval", dataset: datasetRef, scorers: [scorer],
    trials: options.trials ?? 1,
  });
  const model = await createObject(api, project, "adder", llmModel(options.modelId ?? BASE_MODEL, [{ role: "user", content: "{question}" }]));
  return { evaluation, model, scorer, datasetRef };
}

/**
 * The calling test file's service (serviceForFile), the evaluation objects of `project` made on
 * it and a store on its database, all before the file's tests; `setup` may be taken at once (its
 * fields read the made objects). `jobCount` counts the jobs recorded.
 */
export function evaluationFile(project: string, options: SetupOptions = {}) {
  const service = serviceForFile();
  let store: ClickHouseStore | null = null;
  let made: EvalSetup | null = null;
  beforeAll(async () => {
    store = await storeOn(service.database);
    made = await evaluationSetup(service.api, project, options);
  });
  afterAll(async () => store?.close());
  const current = (): EvalSetup => {
    if (made === null) throw new Error("the file's evaluation objects are not made yet (use them inside tests or hooks)");
    return made;
  };
  const setup = new Proxy({} as EvalSetup, { get: (_target, field: keyof EvalSetup) => current()[field] });
  const jobCount = async (): Promise<number> =>
    Number((await store!.rows<{ n: string }>("test_jobs", { sql: "SELECT count() AS n FROM jobs FINAL", params: {} }))[0]!.n);
  return { service, api: service.api, setup, jobCount };
}

export type Status =
  | { code: "not_found" }
  | { code: "running"; completed_rows: number; total_rows: number }
  | { code: "failed"; error?: string | null }
  | { code: "complete"; output: Record<string, unknown> };

export const statusOf = async (api: Client, project: string, callId: string): Promise<Status> =>
  (await api.json<{ status: Status }>("/evaluations/status", { project_id: project, call_id: callId })).status;

/** Polls the status until it is no longer running. */
export async function settled(api: Client, project: string, callId: string, timeoutMs = 120_000): Promise<Status> {
  let last: Status | null = null;
  const notRunning = async () => {
    last = await statusOf(api, project, callId);
    return last.code === "running" ? null : last;
  };
  return until(notRunning, { timeoutMs, everyMs: 200, what: () => `evaluation ${callId} to settle; still running: ${JSON.stringify(last)}` });
}

export interface StoredCall {
  id: string;
  trace_id: string;
  parent_id: string | null;
  op_name: string;
  started_at: string;
  ended_at: string | null;
  exception: string | null;
  inputs: Record<string, unknown>;
  output: unknown;
  summary: Record<string, unknown> | null;
  attributes: Record<string, unknown>;
}

export const traceCalls = (api: Client, project: string, traceId: string) =>
  api.lines<StoredCall>("/calls/stream_query", { project_id: project, filter: { trace_ids: [traceId] }, sort_by: [{ field: "started_at", direction: "asc" }] });

/** µs since the epoch of an ISO timestamp with microseconds. */
export function isoMicros(iso: string): number {
  const m = /\.(\d+)Z$/.exec(iso);
  const whole = Date.parse(iso.replace(/\.\d+Z$/, "Z"));
  return whole * 1000 + (m ? Number(m[1]!.padEnd(6, "0").slice(0, 6)) : 0);
}
