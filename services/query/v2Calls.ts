import type { CallsFilter } from "../contract/calls.js";
import type { Query } from "../contract/queryExpr.js";
import type {
  EvaluationRunCreateBody, EvaluationRunReadRes, PredictionCreateBody, PredictionReadRes, ScoreCreateBody, ScoreReadRes,
} from "../contract/v2Calls.js";
import { NotFoundError } from "../errors.js";
import { uuidv7 } from "../ids.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";
import type { TraceEvent } from "../queue/events.js";
import { formatRef, parseRef } from "../refs.js";
import type { CallRow } from "../store/calls/callRows.js";
import type { CallsReadRepository } from "../store/calls/callsRead.js";
import type { FeedbackRepository } from "../store/feedback/feedbackRepository.js";
import { checkAll } from "../store/feedback/validate.js";
import {
  endCall, PREDICT_AND_SCORE_OP, PREDICTION_MARK, predictAndScoreStart, predictionCall, predictionInputs, RUN_MARK, runStart, SCORE_MARK, scoreCall,
  scorerMeans, summarizeCall, weaveAttributes, type CallPlace,
} from "../store/v2/evalCalls.js";
import { objectRefOf, type V2ObjectsRepository } from "../store/v2/v2Objects.js";
import { MonotonicClock, microsToIso, type Clock } from "../times.js";
import { opDisplayName } from "../store/calls/computedFields.js";

/** Writes call events through the worker's merge (worker/callBatchWriter.ts), synchronously. */
export type CallWriter = (events: readonly TraceEvent[]) => Promise<void>;

/** A stored call as these families read it (times in µs). */
interface StoredCall {
  readonly id: string;
  readonly traceId: string;
  readonly parentId: string | null;
  readonly opName: string;
  readonly startedAt: number;
  readonly endedAt: number | null;
  readonly exception: string | null;
  readonly attributes: JsonObject;
  readonly inputs: JsonObject;
  readonly output: JsonValue;
  readonly user: string | null;
}

function toStored(row: CallRow): StoredCall {
  return {
    id: row.id,
    traceId: row.trace_id,
    parentId: row.parent_id,
    opName: row.op_name,
    startedAt: Number(row.started_at),
    endedAt: row.ended_at === null ? null : Number(row.ended_at),
    exception: row.exception,
    attributes: row.attributes ? (JSON.parse(row.attributes) as JsonObject) : {},
    inputs: row.inputs ? (JSON.parse(row.inputs) as JsonObject) : {},
    output: row.output === null ? null : (JSON.parse(row.output) as JsonValue),
    user: row.wb_user_id,
  };
}

const marked = (mark: string): Query["$expr"] => ({ $eq: [{ $getField: `attributes.weave.${mark}` }, { $literal: "true" }] });
const fieldIn = (field: string, values: readonly string[]): Query["$expr"] => ({ $in: [{ $getField: field }, values.map((v) => ({ $literal: v }))] });
const isMarked = (call: StoredCall, mark: string): boolean => weaveAttributes(call.attributes)[mark] === "true";
const str = (v: JsonValue | undefined): string | null => (typeof v === "string" ? v : null);
const nameOf = (ref: string): string => {
  const parsed = parseRef(ref);
  return parsed.kind === "object" || parsed.kind === "op" ? parsed.name : ref;
};

export interface Page {
  readonly limit?: number | undefined;
  readonly offset?: number | undefined;
}

/**
 * evaluation_runs, predictions and scores (store/v2/evalCalls.ts: what calls they are). Writes
 * go through the worker's merge path synchronously, so each answer is visible to the next request.
 */
export class EvalCallsService {
  constructor(
    private readonly reads: CallsReadRepository,
    private readonly objects: V2ObjectsRepository,
    private readonly feedback: FeedbackRepository,
    private readonly write: CallWriter,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  async createRun(projectId: string, body: EvaluationRunCreateBody, user: string): Promise<string> {
    await this.objects.requireObjects(projectId, [[body.evaluation, ["body", "evaluation"]], [body.model, ["body", "model"]]]);
    const id = uuidv7();
    await this.write([runStart(this.place(projectId, id, id, null, user), body.evaluation, body.model, body.source_evaluation_run_id ?? null)]);
    return id;
  }

  async readRun(projectId: string, id: string): Promise<EvaluationRunReadRes> {
    return runView(await this.requireMarked(projectId, id, RUN_MARK, "evaluation run"));
  }

  async listRuns(projectId: string, filter: { evaluations?: string[] | undefined; models?: string[] | undefined; evaluation_run_ids?: string[] | undefined }, page: Page): Promise<EvaluationRunReadRes[]> {
    const conditions = [marked(RUN_MARK)];
    if (filter.evaluations?.length) conditions.push(fieldIn("attributes.weave.evaluation", filter.evaluations));
    if (filter.models?.length) conditions.push(fieldIn("attributes.weave.model", filter.models));
    const calls = await this.query(projectId, conditions, filter.evaluation_run_ids?.length ? { call_ids: filter.evaluation_run_ids } : null, page);
    return calls.map(runView);
  }

  /** Deletes runs with every call under them; answers how many runs. */
  async deleteRuns(projectId: string, ids: readonly string[], user: string): Promise<number> {
    const runs = (await this.readMany(projectId, ids)).filter((c) => isMarked(c, RUN_MARK));
    await this.deleteWithDescendants(projectId, runs.map((r) => r.id), user);
    return runs.length;
  }

  /**
   * Each scorer's mean over the run's scores (`{<scorer>: {mean}}`, the body's summary
   * merged over it), written as an `Evaluation.summarize` child, and the run ended with it.
   */
  async finishRun(projectId: string, id: string, summary: JsonObject | null | undefined, user: string): Promise<void> {
    const run = await this.requireMarked(projectId, id, RUN_MARK, "evaluation run");
    const scores = await this.query(projectId, [marked(SCORE_MARK), fieldIn("attributes.weave.evaluation_run_id", [id])], null, {});
    const means = scorerMeans(scores.map((s) => ({ scorerName: nameOf(str(weaveAttributes(s.attributes).scorer) ?? s.opName), value: s.output })));
    const output: JsonObject = { ...means, ...(summary ?? {}) };
    const now = this.clock.nowMicros();
    const evaluation = str(run.inputs.self) ?? "";
    await this.write([
      summarizeCall(this.place(projectId, uuidv7(), run.traceId, run.id, user, now), evaluation, output),
      endCall(projectId, run.id, run.traceId, run.startedAt, now, output),
    ]);
  }

  async createPrediction(projectId: string, body: PredictionCreateBody, user: string): Promise<string> {
    await this.objects.requireObjects(projectId, [[body.model, ["body", "model"]]]);
    const run = body.evaluation_run_id ? await this.requireMarked(projectId, body.evaluation_run_id, RUN_MARK, "evaluation run") : null;
    const id = uuidv7();
    const now = this.clock.nowMicros();
    const output = (body.output ?? null) as JsonValue;
    const inputs = body.inputs as JsonObject;
    const modelName = objectRefOf(projectId, body.model, ["body", "model"]).name;
    if (!run) {
      await this.write([predictionCall(this.place(projectId, id, uuidv7(), null, user, now), body.model, modelName, inputs, output, null)]);
      return id;
    }
    const pas = this.place(projectId, uuidv7(), run.traceId, run.id, user, now);
    await this.write([
      predictAndScoreStart(pas, str(run.inputs.self) ?? "", body.model, inputs),
      predictionCall(this.place(projectId, id, run.traceId, pas.id, user, now), body.model, modelName, inputs, output, run.id),
    ]);
    return id;
  }

  async readPrediction(projectId: string, id: string): Promise<PredictionReadRes> {
    return predictionView(await this.requireMarked(projectId, id, PREDICTION_MARK, "prediction"));
  }

  async listPredictions(projectId: string, runId: string | undefined, page: Page): Promise<PredictionReadRes[]> {
    return (await this.listMarked(projectId, PREDICTION_MARK, runId, page)).map(predictionView);
  }

  /** Deletes predictions, their predict_and_score calls and the scores under them; answers how many predictions. */
  async deletePredictions(projectId: string, ids: readonly string[], user: string): Promise<number> {
    const predictions = (await this.readMany(projectId, ids)).filter((c) => isMarked(c, PREDICTION_MARK));
    const parents = await this.readMany(projectId, predictions.flatMap((p) => (p.parentId ? [p.parentId] : [])));
    const enclosing = parents.filter((p) => opDisplayName(p.opName) === PREDICT_AND_SCORE_OP).map((p) => p.id);
    const scores = await this.query(projectId, [marked(SCORE_MARK), fieldIn("attributes.weave.prediction_id", predictions.map((p) => p.id))], null, {});
    await this.deleteWithDescendants(projectId, [...predictions.map((p) => p.id), ...enclosing, ...scores.map((s) => s.id)], user);
    return predictions.length;
  }

  /** Ends the prediction's predict_and_score call with `{output, scores, model_latency}`; nothing to end outside a run. */
  async finishPrediction(projectId: string, id: string): Promise<void> {
    const prediction = await this.requireMarked(projectId, id, PREDICTION_MARK, "prediction");
    const [pas] = prediction.parentId ? await this.readMany(projectId, [prediction.parentId]) : [];
    if (!pas || opDisplayName(pas.opName) !== PREDICT_AND_SCORE_OP) return;
    const scoreCalls = await this.query(projectId, [marked(SCORE_MARK), fieldIn("attributes.weave.prediction_id", [id])], null, {});
    const scores: JsonObject = {};
    for (const s of scoreCalls) scores[nameOf(str(weaveAttributes(s.attributes).scorer) ?? s.opName)] = s.output;
    const latency = prediction.endedAt === null ? 0 : (prediction.endedAt - prediction.startedAt) / 1e6;
    const output: JsonObject = { output: prediction.output, scores, model_latency: latency };
    await this.write([endCall(projectId, pas.id, pas.traceId, pas.startedAt, this.clock.nowMicros(), output)]);
  }

  /** A score call (beside the prediction, under its predict_and_score inside a run) and feedback on the prediction. */
  async createScore(projectId: string, body: ScoreCreateBody, user: string): Promise<string> {
    await this.objects.requireObjects(projectId, [[body.scorer, ["body", "scorer"]]]);
    const prediction = await this.requireMarked(projectId, body.prediction_id, PREDICTION_MARK, "prediction");
    if (body.evaluation_run_id) await this.requireMarked(projectId, body.evaluation_run_id, RUN_MARK, "evaluation run");
    const runId = body.evaluation_run_id ?? str(weaveAttributes(prediction.attributes).evaluation_run_id);
    const inRun = runId !== null && prediction.parentId !== null;
    const id = uuidv7();
    const scorerName = objectRefOf(projectId, body.scorer, ["body", "scorer"]).name;
    const place = inRun ? this.place(projectId, id, prediction.traceId, prediction.parentId, user) : this.place(projectId, id, uuidv7(), null, user);
    await this.write([
      scoreCall(place, {
        scorer: body.scorer, scorerName, predictionId: prediction.id, predictionInputs: predictionInputs(prediction.inputs),
        predictionOutput: prediction.output, value: body.value, runId,
      }),
    ]);
    const [item] = checkAll(
      [{
        project_id: projectId,
        weave_ref: callRef(projectId, prediction.id),
        feedback_type: `wandb.runnable.${scorerName}`,
        payload: { output: body.value },
        runnable_ref: body.scorer,
        call_ref: callRef(projectId, id),
      }],
      () => ["body"],
    );
    await this.feedback.create([item!], user);
    return id;
  }

  async readScore(projectId: string, id: string): Promise<ScoreReadRes> {
    return scoreView(await this.requireMarked(projectId, id, SCORE_MARK, "score"));
  }

  async listScores(projectId: string, runId: string | undefined, page: Page): Promise<ScoreReadRes[]> {
    return (await this.listMarked(projectId, SCORE_MARK, runId, page)).map(scoreView);
  }

  /** Deletes score calls and the feedback they wrote; answers how many scores. */
  async deleteScores(projectId: string, ids: readonly string[], user: string): Promise<number> {
    const scores = (await this.readMany(projectId, ids)).filter((c) => isMarked(c, SCORE_MARK));
    if (scores.length === 0) return 0;
    await this.deleteWithDescendants(projectId, scores.map((s) => s.id), user);
    await this.feedback.purge(projectId, { $expr: fieldIn("call_ref", scores.map((s) => callRef(projectId, s.id))) });
    return scores.length;
  }

  private place(projectId: string, id: string, traceId: string, parentId: string | null, user: string, at = this.clock.nowMicros()): CallPlace {
    return { projectId, id, traceId, parentId, at, user };
  }

  /** The calls of one kind, of one run when `runId` is given. */
  private async listMarked(projectId: string, mark: string, runId: string | undefined, page: Page): Promise<StoredCall[]> {
    const conditions = [marked(mark), ...(runId ? [fieldIn("attributes.weave.evaluation_run_id", [runId])] : [])];
    return this.query(projectId, conditions, null, page);
  }

  private async readMany(projectId: string, ids: readonly string[]): Promise<StoredCall[]> {
    if (ids.length === 0) return [];
    return this.query(projectId, [], { call_ids: [...new Set(ids)] }, {});
  }

  private async requireMarked(projectId: string, id: string, mark: string, what: string): Promise<StoredCall> {
    const [call] = await this.readMany(projectId, [id]);
    if (!call || !isMarked(call, mark)) throw new NotFoundError(`${what} ${id} not found in project ${projectId}`);
    return call;
  }

  private async query(projectId: string, conditions: Query["$expr"][], filter: CallsFilter | null, page: Page): Promise<StoredCall[]> {
    const query: Query | null = conditions.length === 0 ? null : { $expr: conditions.length === 1 ? conditions[0]! : { $and: conditions } };
    const out: StoredCall[] = [];
    for await (const row of this.reads.stream({ projectId, filter, query, sortBy: [{ field: "started_at", direction: "asc" }], limit: page.limit ?? null, offset: page.offset ?? null })) {
      out.push(toStored(row));
    }
    return out;
  }

  /** The worker's merge deletes their descendants with them (worker/callDeletes.ts). */
  private async deleteWithDescendants(projectId: string, ids: readonly string[], user: string): Promise<void> {
    if (ids.length > 0) await this.write([{ kind: "calls_delete", project_id: projectId, ids, deleted_at: this.clock.nowMicros(), wb_user_id: user }]);
  }
}

function callRef(projectId: string, id: string): string {
  const [entity, project] = projectId.split("/") as [string, string];
  return formatRef({ kind: "call", entity, project, callId: id, extra: [] });
}

function runView(call: StoredCall): EvaluationRunReadRes {
  const w = weaveAttributes(call.attributes);
  return {
    evaluation_run_id: call.id,
    evaluation: str(w.evaluation) ?? str(call.inputs.self) ?? "",
    model: str(w.model) ?? str(call.inputs.model) ?? "",
    status: call.endedAt === null ? "running" : call.exception === null ? "finished" : "failed",
    started_at: microsToIso(call.startedAt),
    finished_at: call.endedAt === null ? null : microsToIso(call.endedAt),
    summary: isJsonObject(call.output) ? call.output : null,
    source_evaluation_run_id: str(w.source_evaluation_run_id),
  };
}

function predictionView(call: StoredCall): PredictionReadRes {
  const w = weaveAttributes(call.attributes);
  return {
    prediction_id: call.id,
    model: str(w.model) ?? str(call.inputs.self) ?? "",
    inputs: predictionInputs(call.inputs),
    output: call.output,
    evaluation_run_id: str(w.evaluation_run_id),
    wb_user_id: call.user,
  };
}

function scoreView(call: StoredCall): ScoreReadRes {
  const w = weaveAttributes(call.attributes);
  return {
    score_id: call.id,
    scorer: str(w.scorer) ?? str(call.inputs.self) ?? "",
    value: typeof call.output === "number" ? call.output : Number.NaN,
    evaluation_run_id: str(w.evaluation_run_id),
    wb_user_id: call.user,
  };
}
