import { EVALUATE_MODEL_JOB, EvaluateModelJobInput, SCORE_CALLS_JOB, ScoreCallsJobInput } from "../../contract/evaluations.js";
import { RetryableError, errorText } from "../../errors.js";
import { derivedUuidv7 } from "../../ids.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../../json.js";
import type { CallStartEvent, TraceEvent } from "../../queue/events.js";
import { serverCallComplete, serverCallEnd, serverCallStart, type ServerCallPlace as Place } from "../../queue/serverCalls.js";
import type { CallRow } from "../../store/calls/callRows.js";
import { CallsReadRepository } from "../../store/calls/callsRead.js";
import type { ClickHouseStore } from "../../store/clickhouse.js";
import { FeedbackRepository } from "../../store/feedback/feedbackRepository.js";
import { EVALUATE_OP, PREDICT_AND_SCORE_OP, PREDICTION_MARK, RUN_MARK, SCORE_MARK, SUMMARIZE_OP } from "../../store/v2/evalCalls.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { ChatCompleter } from "./chatCompleter.js";
import { CallScorer, parsedJson, type Timed } from "./callScoring.js";
import { EvalObjects, rowRef, type ChatMessage, type JudgeScorer, type LlmModel } from "./evalObjects.js";
import type { JobContext, JobHandler } from "./handler.js";
import type { ProjectRetention } from "../../store/projects/retention.js";

/**
 * The evaluation and scoring jobs (contract/evaluations.ts).
 *
 * `evaluation.evaluate_model` writes the calls a Weave client writes for an evaluation:
 *
 *   Evaluation.evaluate              the root, id = the call_id answered at submission
 *   ├─ Evaluation.predict_and_score  per row × trial: {self, model, example: row ref} → {output, scores, model_latency}
 *   │  ├─ <model>.predict            {self: model, ...row} → the model's output, summary.usage
 *   │  └─ <scorer>.score             {self: scorer, ...row, output} → the judge's answer
 *   └─ Evaluation.summarize          → per scorer its auto-summary, model_latency {mean}
 *
 * Restart safety: a row's calls are written together once the row is done, with ids derived
 * from the root's id, the row and the trial; a run resumed after its runner stopped skips the
 * rows whose predict_and_score call is stored and rewrites the root with the same start time, so
 * nothing is doubled. A run that fails for good (not retryable, or its last attempt) ends the
 * root with the error as its exception.
 */
export interface EvaluationJobDeps {
  readonly store: ClickHouseStore;
  /** Each project's retention (what its calls reads leave out). */
  readonly retention: ProjectRetention;
  /** The worker's merge path (worker/callWorker.ts callBatchHandler), synchronous. */
  readonly writeCalls: (events: readonly TraceEvent[]) => Promise<void>;
  readonly completer: ChatCompleter;
  readonly maxAttempts: number;
  readonly clock?: Clock;
}

export function evaluationJobs(deps: EvaluationJobDeps): Record<string, JobHandler> {
  const jobs = new EvaluationJobs(deps);
  return {
    [EVALUATE_MODEL_JOB]: (input, ctx) => jobs.evaluate(EvaluateModelJobInput.parse(input), ctx),
    [SCORE_CALLS_JOB]: (input, ctx) => jobs.scoreCalls(ScoreCallsJobInput.parse(input), ctx),
  };
}

/** The judge's answer (callScoring.ts), named here too for the readers of evaluation outputs. */
export { judgeOutput } from "./callScoring.js";

/** Weave's auto-summary of a column of values: numbers → {mean}, booleans → {true_count, true_fraction}, objects → per key; null when none summarizes. */
export function autoSummary(values: readonly JsonValue[]): JsonValue {
  const present = values.filter((v) => v !== null && v !== undefined);
  if (present.length === 0) return null;
  if (present.every((v) => typeof v === "boolean")) {
    const trues = present.filter((v) => v === true).length;
    return { true_count: trues, true_fraction: trues / present.length };
  }
  if (present.every((v) => typeof v === "number")) return { mean: (present as number[]).reduce((a, b) => a + b, 0) / present.length };
  if (present.every((v) => isJsonObject(v))) {
    const keys = [...new Set(present.flatMap((v) => Object.keys(v as JsonObject)))].sort();
    const out: JsonObject = {};
    for (const key of keys) {
      const summary = autoSummary(present.map((v) => (v as JsonObject)[key] ?? null));
      if (summary !== null) out[key] = summary;
    }
    return Object.keys(out).length > 0 ? out : null;
  }
  return null;
}

const parsed = parsedJson;

class EvaluationJobs {
  private readonly reads: CallsReadRepository;
  private readonly objects: EvalObjects;
  private readonly scorer: CallScorer;
  private readonly clock: Clock;

  constructor(private readonly deps: EvaluationJobDeps) {
    this.reads = new CallsReadRepository(deps.store, deps.retention);
    this.objects = new EvalObjects(deps.store);
    this.clock = deps.clock ?? new MonotonicClock();
    this.scorer = new CallScorer({ reads: this.reads, feedback: new FeedbackRepository(deps.store), writeCalls: deps.writeCalls, completer: deps.completer, clock: this.clock });
  }

  async evaluate(input: EvaluateModelJobInput, ctx: JobContext): Promise<JsonValue> {
    const root: Place = { projectId: input.project_id, id: input.call_id, traceId: input.call_id, parentId: null, user: input.wb_user_id };
    const rootStart = serverCallStart(root, input.started_at, {
      opName: EVALUATE_OP,
      inputs: { self: input.evaluation_ref, model: input.model_ref },
      attributes: { weave: { [RUN_MARK]: "true", evaluation: input.evaluation_ref, model: input.model_ref } },
    });
    try {
      return await this.runEvaluation(input, root, rootStart, ctx);
    } catch (err) {
      if (!ctx.signal.aborted && this.isFinal(err, ctx)) {
        const message = errorText(err);
        await this.deps.writeCalls([rootStart, serverCallEnd(root, input.started_at, Math.max(this.clock.nowMicros(), input.started_at), { output: null, exception: message })]);
      }
      throw err;
    }
  }

  private isFinal(err: unknown, ctx: JobContext): boolean {
    return !(err instanceof RetryableError) || ctx.attempt >= this.deps.maxAttempts;
  }

  private async runEvaluation(input: EvaluateModelJobInput, root: Place, rootStart: CallStartEvent, ctx: JobContext): Promise<JsonValue> {
    const stored = await this.traceCalls(root.projectId, root.id);
    const storedRoot = stored.get(root.id);
    if (storedRoot?.ended_at !== null && storedRoot?.ended_at !== undefined) {
      if (storedRoot.exception !== null) throw new Error(storedRoot.exception);
      return parsed(storedRoot.output);
    }
    const evaluation = await this.objects.evaluation(root.projectId, input.evaluation_ref, ["input", "evaluation_ref"]);
    const model = await this.objects.model(root.projectId, input.model_ref, ["input", "model_ref"]);
    await this.deps.writeCalls([rootStart]);
    const outputs: JsonObject[] = [];
    let index = 0;
    for await (const { digest, row } of this.objects.rows(evaluation.table)) {
      for (let trial = 0; trial < evaluation.trials; trial++) {
        const pasId = derivedUuidv7(input.started_at / 1000, `${root.id}/row/${index}/trial/${trial}`);
        const done = stored.get(pasId);
        if (done && done.ended_at !== null) {
          outputs.push(isJsonObject(parsed(done.output)) ? (parsed(done.output) as JsonObject) : {});
          continue;
        }
        if (ctx.signal.aborted) throw ctx.signal.reason;
        const example = rowRef(evaluation.datasetRef, digest);
        outputs.push(await this.runRow({ ...root, id: pasId, parentId: root.id }, input, model, evaluation.scorers, row, example, ctx.signal));
      }
      index++;
    }
    const summary = this.summarize(outputs, evaluation.scorers);
    const now = this.clock.nowMicros();
    const summarizePlace: Place = { ...root, id: derivedUuidv7(input.started_at / 1000, `${root.id}/summarize`), parentId: root.id };
    await this.deps.writeCalls([
      serverCallComplete(summarizePlace, { opName: SUMMARIZE_OP, inputs: { self: input.evaluation_ref }, attributes: {} }, { startedAt: now, endedAt: now, summary: {} }, summary),
      serverCallEnd(root, input.started_at, now, { output: summary, exception: null }),
    ]);
    return summary;
  }

  /** One row × trial: the model, then each scorer; its calls written together at the end. */
  private async runRow(
    pas: Place, input: EvaluateModelJobInput, model: LlmModel, scorers: readonly JudgeScorer[], row: JsonObject, example: string, signal: AbortSignal,
  ): Promise<JsonObject> {
    const startedAt = this.clock.nowMicros();
    const prediction = await this.predict(model, input.project_id, model.messagesTemplate, row, signal);
    const events: TraceEvent[] = [];
    const predictPlace: Place = { ...pas, id: derivedUuidv7(startedAt / 1000, `${pas.id}/predict`), parentId: pas.id };
    events.push(serverCallComplete(predictPlace, {
      opName: `${model.name}.predict`,
      inputs: { self: input.model_ref, ...row },
      attributes: { weave: { [PREDICTION_MARK]: "true", model: input.model_ref, evaluation_run_id: input.call_id } },
    }, prediction, prediction.value));
    const scores: JsonObject = {};
    for (const scorer of scorers) {
      const score = await this.score(scorer, input.project_id, row, prediction.value, signal);
      scores[scorer.name] = score.value;
      const place: Place = { ...pas, id: derivedUuidv7(startedAt / 1000, `${pas.id}/score/${scorer.ref}`), parentId: pas.id };
      events.push(serverCallComplete(place, {
        opName: `${scorer.name}.score`,
        inputs: { self: scorer.ref, ...row, output: prediction.value },
        attributes: { weave: { [SCORE_MARK]: "true", prediction_id: predictPlace.id, scorer: scorer.ref, evaluation_run_id: input.call_id } },
      }, score, score.value));
    }
    const output: JsonObject = { output: prediction.value, scores, model_latency: (prediction.endedAt - prediction.startedAt) / 1e6 };
    const pasTimes = { startedAt, endedAt: this.clock.nowMicros(), summary: {} };
    events.unshift(serverCallComplete(pas, { opName: PREDICT_AND_SCORE_OP, inputs: { self: input.evaluation_ref, model: input.model_ref, example }, attributes: {} }, pasTimes, output));
    await this.deps.writeCalls(events);
    return output;
  }

  private predict(model: LlmModel, projectId: string, template: readonly ChatMessage[], vars: JsonObject, signal: AbortSignal): Promise<Timed<JsonValue>> {
    return this.scorer.predict(model, projectId, template, vars, signal);
  }

  private score(scorer: JudgeScorer, projectId: string, vars: JsonObject, output: JsonValue, signal: AbortSignal): Promise<Timed<JsonValue>> {
    return this.scorer.judge(scorer, projectId, vars, output, signal);
  }

  private summarize(outputs: readonly JsonObject[], scorers: readonly JudgeScorer[]): JsonObject {
    const summary: JsonObject = {};
    for (const scorer of scorers) {
      const value = autoSummary(outputs.map((o) => (isJsonObject(o.scores) ? (o.scores[scorer.name] ?? null) : null)));
      if (value !== null) summary[scorer.name] = value;
    }
    const latency = autoSummary(outputs.map((o) => (typeof o.model_latency === "number" ? o.model_latency : null)));
    if (latency !== null) summary.model_latency = latency;
    return summary;
  }

  private async traceCalls(projectId: string, traceId: string): Promise<Map<string, CallRow>> {
    const out = new Map<string, CallRow>();
    for await (const row of this.reads.stream({ projectId, filter: { trace_ids: [traceId] } })) out.set(row.id, row);
    return out;
  }

  /**
   * Each scorer on each call (its inputs without `self` as the template's fields, its output as
   * `{output}`): a score call, a root of its own, then feedback `wandb.runnable.<scorer>` on the
   * scored call (callScoring.ts). Ids derive from the job, so a resumed job skips what it wrote.
   */
  async scoreCalls(input: ScoreCallsJobInput, ctx: JobContext): Promise<JsonValue> {
    const projectId = input.project_id;
    const scorers: JudgeScorer[] = [];
    for (const [i, ref] of input.scorer_refs.entries()) scorers.push(await this.objects.scorer(projectId, ref, ["input", "scorer_refs", i]));
    const pairs = input.call_ids.flatMap((callId) => scorers.map((scorer) => ({ callId, scorer, id: derivedUuidv7(input.requested_at / 1000, `${ctx.jobId}/${callId}/${scorer.ref}`) })));
    return { scored: await this.scorer.scorePairs(projectId, input.wb_user_id, pairs, ctx.signal) };
  }
}
