import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../services/config.js";
import { EVALUATE_MODEL_JOB, type EvaluateModelJobInput } from "../../services/contract/evaluations.js";
import { uuidv7 } from "../../services/ids.js";
import { localChatCompleter } from "../../services/inference/evalCompleter.js";
import { baseModelResolver } from "../../services/inference/models.js";
import { ModelThreads } from "../../services/lm/modelThreads.js";
import type { JsonObject } from "../../services/json.js";
import type { CallRow } from "../../services/store/calls/callRows.js";
import { CallsReadRepository } from "../../services/store/calls/callsRead.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import { ObjectsRepository } from "../../services/store/objects/objectsRepository.js";
import { TablesRepository } from "../../services/store/tables/tablesRepository.js";
import { ProjectRetention } from "../../services/store/projects/retention.js";
import { ProjectSettingsRepository } from "../../services/store/projects/settingsRepository.js";
import { nowMicros } from "../../services/times.js";
import { callBatchHandler } from "../../services/worker/callWorker.js";
import { UpstreamChatCompleter, type ChatCompleter } from "../../services/worker/jobs/chatCompleter.js";
import { evaluationJobs } from "../../services/worker/jobs/evaluationJobs.js";
import { JobRunner } from "../../services/worker/jobs/runner.js";
import { ended, FAST, log, until } from "../jobs/support.js";
import { freshStore } from "../support/database.js";
import { BASE_MODEL, llmModel } from "./support.js";

/**
 * Restart safety of evaluation jobs, with runners in this process over a store of their own
 * (test/jobs/takeover.test.ts stops and restarts runners the same way).
 */
const P = "acme/resume";
const ROWS = ["1+1=", "2+1=", "3+1=", "4+1=", "1+2=", "2+2="].map((question) => ({ question }));

let store: ClickHouseStore;
let jobs: JobsRepository;
let refs: { evaluation: string; model: string };
const runners: JobRunner[] = [];

const ref = (name: string, digest: string) => `weave:///${P}/object/${name}:${digest}`;

beforeAll(async () => {
  store = await freshStore();
  jobs = new JobsRepository(store);
  const objects = new ObjectsRepository(store);
  const { digest: table } = await new TablesRepository(store).createFromRows(P, ROWS.map((row, i) => ({ text: JSON.stringify(row), loc: ["rows", i] })));
  const dataset = ref("sums", await objects.createValue(P, "sums", { _type: "Dataset", _class_name: "Dataset", name: "sums", rows: `weave:///${P}/table/${table}` }, "alice"));
  const scorer = ref("judge", await objects.createValue(P, "judge", {
    _type: "LLMAsAJudgeScorer", _class_name: "LLMAsAJudgeScorer", name: "judge", model: llmModel(BASE_MODEL, []) as never, scoring_prompt: "{question}{output}",
  }, "alice"));
  const evaluation = ref("sums-eval", await objects.createValue(P, "sums-eval", { _type: "Evaluation", _class_name: "Evaluation", dataset, scorers: [scorer], trials: 1 }, "alice"));
  const model = ref("adder", await objects.createValue(P, "adder", llmModel(BASE_MODEL, [{ role: "user", content: "{question}" }]) as never, "alice"));
  refs = { evaluation, model };
});
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
});
const config = loadConfig({});
const modelThreads = new ModelThreads({ count: 1, cacheBytes: config.INFERENCE_MODEL_CACHE_BYTES, log });
const builtIn = localChatCompleter({ resolvers: [baseModelResolver((id) => modelThreads.baseWeights(id))], modelThreads, maxTokens: config.CHAT_MAX_TOKENS });
afterAll(async () => {
  await modelThreads.stop();
  await store.close();
});

/** The built-in model, counting its completions and calling `after(n)` after each. */
function counting(after: (n: number) => void = () => {}): ChatCompleter & { count: number } {
  const completer = {
    count: 0,
    async complete(...args: Parameters<ChatCompleter["complete"]>) {
      const answer = await builtIn.complete(...args);
      completer.count++;
      after(completer.count);
      return answer;
    },
  };
  return completer;
}

/** No retention: every call is read. */
const keepAll = () => new ProjectRetention(new ProjectSettingsRepository(store), null);

function runner(name: string, completer: ChatCompleter, maxAttempts = FAST.maxAttempts): JobRunner {
  const r = new JobRunner(jobs, { ...FAST, maxAttempts, log, runnerId: name });
  for (const [type, handler] of Object.entries(evaluationJobs({ store, retention: keepAll(), writeCalls: callBatchHandler({ store }), completer, maxAttempts }))) r.register(type, handler);
  runners.push(r);
  r.start();
  return r;
}

async function submit(): Promise<string> {
  const startedAt = nowMicros();
  const callId = uuidv7(Math.floor(startedAt / 1000));
  const input: EvaluateModelJobInput = {
    project_id: P, evaluation_ref: refs.evaluation, model_ref: refs.model, call_id: callId, started_at: startedAt, total_rows: ROWS.length, wb_user_id: "alice",
  };
  await jobs.record([{ id: callId, type: EVALUATE_MODEL_JOB, serial_key: callId, input: input as unknown as JsonObject, submitted_at: startedAt }]);
  return callId;
}

async function trace(callId: string): Promise<CallRow[]> {
  const out: CallRow[] = [];
  for await (const row of new CallsReadRepository(store, keepAll()).stream({ projectId: P, filter: { trace_ids: [callId] } })) out.push(row);
  return out;
}

describe("an evaluation job whose runner stops mid-run", () => {
  it("is completed by a new runner that skips the finished rows: no row is doubled", async () => {
    const callId = await submit();
    let stopping: Promise<void> | null = null;
    // Runner A stops after its fifth completion (two rows and a half: model and judge per row).
    const first = counting((n) => {
      if (n === 5) stopping = a.stop();
    });
    const a = runner("A", first);
    await until(() => stopping !== null, 120_000);
    await stopping;
    const job = (await jobs.get(callId))!;
    expect(job.status).toBe("queued");
    const finishedBefore = (await trace(callId)).filter((c) => c.op_name === "Evaluation.predict_and_score").length;
    expect(finishedBefore).toBeGreaterThanOrEqual(2);
    expect(finishedBefore).toBeLessThan(ROWS.length);

    const second = counting();
    runner("B", second);
    expect((await ended(jobs, callId, 120_000)).status).toBe("completed");
    expect(second.count).toBe((ROWS.length - finishedBefore) * 2);

    const calls = await trace(callId);
    expect(new Set(calls.map((c) => c.id)).size).toBe(calls.length);
    const trials = calls.filter((c) => c.op_name === "Evaluation.predict_and_score");
    expect(trials).toHaveLength(ROWS.length);
    expect(new Set(trials.map((t) => (JSON.parse(t.inputs!) as { example: string }).example)).size).toBe(ROWS.length);
    expect(calls.filter((c) => c.op_name === "adder.predict")).toHaveLength(ROWS.length);
    expect(calls.filter((c) => c.op_name === "judge.score")).toHaveLength(ROWS.length);
    expect(calls.filter((c) => c.op_name === "Evaluation.summarize")).toHaveLength(1);
    const roots = calls.filter((c) => c.id === callId);
    expect(roots).toHaveLength(1);
    expect(roots[0]!.ended_at).not.toBeNull();
    expect(roots[0]!.exception).toBeNull();
  });
});

describe("an evaluation job that exhausts its attempts", () => {
  it("fails, and its root call ends with the error", async () => {
    const callId = await submit();
    // Nothing listens there: every attempt fails retryably.
    runner("C", new UpstreamChatCompleter("http://127.0.0.1:9/v1", null), 2);
    const job = await ended(jobs, callId, 60_000);
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/^chat completion endpoint unreachable: .* \(gave up after 2 attempts\)$/);
    const [root] = (await trace(callId)).filter((c) => c.id === callId);
    expect(root!.exception).toMatch(/^chat completion endpoint unreachable: /);
    expect(root!.ended_at).not.toBeNull();
  });
});
