import type { JsonObject, JsonValue } from "../../json.js";
import { isJsonObject } from "../../json.js";
import type { CallCompleteEvent, CallEndEvent, CallStartEvent } from "../../queue/events.js";
import { serverCallComplete, serverCallEnd, serverCallStart, type ServerCallContent, type ServerCallPlace } from "../../queue/serverCalls.js";

/**
 * The calls that the call-backed `/v2/` families are made of, as the Weave SDKs write an
 * evaluation (facts from the spec and from what the Weave TS SDK 0.11.1 sends):
 *
 *   Evaluation.evaluate                  the run: id = trace id = evaluation_run_id,
 *   │                                    inputs {self: evaluation, model},
 *   │                                    attributes.weave {evaluation_run: "true", evaluation, model}
 *   ├─ Evaluation.predict_and_score      one per prediction made inside the run,
 *   │  │                                 inputs {self: evaluation, model, example: <the prediction's inputs>},
 *   │  │                                 ended by the prediction's finish: {output, scores, model_latency}
 *   │  ├─ <model>.predict                the prediction: inputs {self: model, ...inputs}, ended at once,
 *   │  │                                 attributes.weave {prediction: "true", model, evaluation_run_id}
 *   │  └─ <scorer>.score                 a score: inputs {self: scorer, inputs, output}, output = value,
 *   │                                    attributes.weave {score: "true", prediction_id, scorer, evaluation_run_id}
 *   └─ Evaluation.summarize              written by the run's finish: output = the summary
 *
 * A prediction outside a run is a root call of its own trace; a score of such a prediction too.
 * Op names are plain names (no op object is created for them).
 */
export const EVALUATE_OP = "Evaluation.evaluate";
export const PREDICT_AND_SCORE_OP = "Evaluation.predict_and_score";
export const SUMMARIZE_OP = "Evaluation.summarize";

/** `attributes.weave.<key> = "true"` marks what a call is. */
export const RUN_MARK = "evaluation_run";
export const PREDICTION_MARK = "prediction";
export const SCORE_MARK = "score";

/** Where a call of these families sits, and when it starts (and, when complete, ends). */
export interface CallPlace extends ServerCallPlace {
  readonly at: number;
}

function start(place: CallPlace, content: ServerCallContent): CallStartEvent {
  return serverCallStart(place, place.at, content);
}

function complete(place: CallPlace, content: ServerCallContent, output: JsonValue): CallCompleteEvent {
  return serverCallComplete(place, content, { startedAt: place.at, endedAt: place.at, summary: {} }, output);
}

export function endCall(projectId: string, id: string, traceId: string, startedAt: number, endedAt: number, output: JsonValue): CallEndEvent {
  return serverCallEnd({ projectId, id, traceId }, startedAt, endedAt, { output, exception: null });
}

const weave = (fields: Record<string, string | null | undefined>): JsonObject => {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(fields)) if (v !== null && v !== undefined) out[k] = v;
  return { weave: out };
};

export function runStart(place: CallPlace, evaluation: string, model: string, sourceRunId: string | null): CallStartEvent {
  return start(place, {
    opName: EVALUATE_OP,
    inputs: { self: evaluation, model },
    attributes: weave({ [RUN_MARK]: "true", evaluation, model, source_evaluation_run_id: sourceRunId }),
  });
}

export function predictAndScoreStart(place: CallPlace, evaluation: string, model: string, example: JsonObject): CallStartEvent {
  return start(place, { opName: PREDICT_AND_SCORE_OP, inputs: { self: evaluation, model, example }, attributes: {} });
}

export function predictionCall(place: CallPlace, model: string, modelName: string, inputs: JsonObject, output: JsonValue, runId: string | null): CallCompleteEvent {
  return complete(
    place,
    { opName: `${modelName}.predict`, inputs: { self: model, ...inputs }, attributes: weave({ [PREDICTION_MARK]: "true", model, evaluation_run_id: runId }) },
    output,
  );
}

export interface ScoreOf {
  readonly scorer: string;
  readonly scorerName: string;
  readonly predictionId: string;
  readonly predictionInputs: JsonObject;
  readonly predictionOutput: JsonValue;
  readonly value: number;
  readonly runId: string | null;
}

export function scoreCall(place: CallPlace, s: ScoreOf): CallCompleteEvent {
  return complete(
    place,
    {
      opName: `${s.scorerName}.score`,
      inputs: { self: s.scorer, inputs: s.predictionInputs, output: s.predictionOutput },
      attributes: weave({ [SCORE_MARK]: "true", prediction_id: s.predictionId, scorer: s.scorer, evaluation_run_id: s.runId }),
    },
    s.value,
  );
}

export function summarizeCall(place: CallPlace, evaluation: string, summary: JsonObject): CallCompleteEvent {
  return complete(place, { opName: SUMMARIZE_OP, inputs: { self: evaluation }, attributes: {} }, summary);
}

/** The inputs a prediction was given: its call's inputs without `self` (the model). */
export function predictionInputs(callInputs: JsonObject): JsonObject {
  const { self: _model, ...inputs } = callInputs;
  return inputs;
}

/** `attributes.weave` of a stored call, or an empty object. */
export function weaveAttributes(attributes: JsonObject): JsonObject {
  return isJsonObject(attributes.weave) ? attributes.weave : {};
}

/** Each scorer's mean over the numeric scores given: `{<scorer name>: {mean}}`. */
export function scorerMeans(scores: readonly { scorerName: string; value: JsonValue }[]): JsonObject {
  const sums = new Map<string, { sum: number; n: number }>();
  for (const { scorerName, value } of scores) {
    if (typeof value !== "number" || !Number.isFinite(value)) continue;
    const s = sums.get(scorerName) ?? { sum: 0, n: 0 };
    s.sum += value;
    s.n += 1;
    sums.set(scorerName, s);
  }
  const out: JsonObject = {};
  for (const [name, { sum, n }] of [...sums].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out[name] = { mean: sum / n };
  return out;
}
