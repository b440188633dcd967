import { describe, expect, it } from "vitest";
import { serviceForFile } from "../support/service.js";
import { completeBatchJson, endJson, newRetryId, rawPost, remoteHttpHeaders, SDK_ATTRIBUTES, startJson, v2Path, type ReadCall } from "./sdk.js";

/**
 * The eager path: ops declared `eager_call_start=True` (`Evaluation.evaluate`) send their start
 * at once through `POST /v2/{e}/{p}/call/start` and their end later through `.../call/end`, one
 * request per item with `X-Weave-Trace-Id`; their children go through calls/complete. And what
 * is left unpaired at shutdown: an end whose start the server never saw (it carries
 * `started_at` and `trace_id`), a start that never gets an end.
 */
const service = serviceForFile();

const P = "acme/sdk-eager";
const TRACE = "019aa2c3-0000-7000-8000-0000000000e0";
const EVAL = "019aa2c3-0000-7000-8000-0000000000e1";
const op = (name: string) => `weave:///${P}/op/${name}:q7Yw3u1Zc0nH5bWm2LxTgF9eRkP4sVdJ6aNiO8yCtQE`;
const EVAL_INPUTS = `{"self":"weave:///${P}/object/Evaluation:aB3","model":"weave:///${P}/object/MyModel:cD4"}`;
const read = async (id: string) => (await service.api.json<{ call: ReadCall | null }>("/call/read", { project_id: P, id })).call;

describe("an eager evaluation call", () => {
  it("is running from its v2 start, gets its children, then finishes with its v2 end", async () => {
    const start = startJson({
      project_id: P, id: EVAL, op_name: op("Evaluation.evaluate"), display_name: "eval-2026-11-21", trace_id: TRACE, parent_id: null,
      started_at: "2026-11-21T11:00:00.000001Z", inputs: EVAL_INPUTS,
    });
    const started = await rawPost(service.url, v2Path(P, "call/start"), `{"start":${start}}`, remoteHttpHeaders(newRetryId(), { "x-weave-trace-id": TRACE }));
    expect({ status: started.status, type: started.headers["content-type"], body: JSON.parse(started.text) }).toEqual({
      status: 200, type: "application/json; charset=utf-8", body: { id: EVAL, trace_id: TRACE },
    });
    expect(await read(EVAL)).toEqual({
      id: EVAL, project_id: P, op_name: op("Evaluation.evaluate"), display_name: "eval-2026-11-21", trace_id: TRACE, parent_id: null,
      thread_id: null, turn_id: null, started_at: "2026-11-21T11:00:00.000001Z", ended_at: null, exception: null, attributes: SDK_ATTRIBUTES,
      inputs: JSON.parse(EVAL_INPUTS), output: null, summary: { weave: { status: "running", trace_name: "eval-2026-11-21", latency_ms: null } },
      wb_user_id: "alice", wb_run_id: null, wb_run_step: null, wb_run_step_end: null, deleted_at: null,
    } satisfies ReadCall);

    const children = [1, 2].map((i) => ({
      project_id: P, id: `019aa2c3-0000-7000-8000-00000000000${i}`, trace_id: TRACE, op_name: op("Evaluation.predict_and_score"), parent_id: EVAL,
      started_at: `2026-11-21T11:00:0${i}.000000Z`, ended_at: `2026-11-21T11:00:0${i}.500000Z`, inputs: `{"example":{"q":"${i}"}}`,
      output: `{"output":"a${i}","scores":{"exact":true}}`, summary: "{}",
    }));
    expect((await rawPost(service.url, v2Path(P, "calls/complete"), completeBatchJson(children), remoteHttpHeaders(newRetryId()))).status).toBe(200);

    const end = endJson({
      project_id: P, id: EVAL, ended_at: "2026-11-21T11:00:05.000001Z", output: `{"exact":{"true_count":2,"true_fraction":1.0}}`,
      summary: `{"status_counts":{"success":3,"error":0}}`, trace_id: TRACE, is_eval: true, started_at: "2026-11-21T11:00:00.000001Z",
    });
    const ended = await rawPost(service.url, v2Path(P, "call/end"), `{"end":${end}}`, remoteHttpHeaders(newRetryId(), { "x-weave-trace-id": TRACE }));
    expect({ status: ended.status, body: ended.text }).toEqual({ status: 200, body: "{}" });

    const calls = await service.api.lines<ReadCall>("/calls/stream_query", { project_id: P, filter: { trace_ids: [TRACE] } });
    expect(calls.map((c) => [c.id, c.parent_id])).toEqual([[EVAL, null], [children[0]!.id, EVAL], [children[1]!.id, EVAL]]);
    expect(calls[0]).toEqual({
      id: EVAL, project_id: P, op_name: op("Evaluation.evaluate"), display_name: "eval-2026-11-21", trace_id: TRACE, parent_id: null,
      thread_id: null, turn_id: null, started_at: "2026-11-21T11:00:00.000001Z", ended_at: "2026-11-21T11:00:05.000001Z", exception: null,
      attributes: SDK_ATTRIBUTES, inputs: JSON.parse(EVAL_INPUTS), output: { exact: { true_count: 2, true_fraction: 1 } },
      summary: { status_counts: { success: 3, error: 0 }, weave: { status: "success", trace_name: "eval-2026-11-21", latency_ms: 5000 } },
      wb_user_id: "alice", wb_run_id: null, wb_run_step: null, wb_run_step_end: null, deleted_at: null,
    } satisfies ReadCall);
    expect(await read(EVAL)).toEqual(calls[0]);
  });
});

describe("calls left unpaired when the SDK shuts down", () => {
  const LONE = "019aa2c3-0000-7000-8000-0000000000f1";
  const LONE_TRACE = "019aa2c3-0000-7000-8000-0000000000f0";
  const loneEnd = endJson({
    project_id: P, id: LONE, ended_at: "2026-11-21T12:00:03.250000Z", exception: "KeyboardInterrupt", output: "null",
    summary: `{"usage":{"claude-sonnet-4":{"requests":1,"input_tokens":10,"output_tokens":3}}}`, trace_id: LONE_TRACE, is_eval: false,
    started_at: "2026-11-21T12:00:01.000000Z",
  });

  it("shows an end whose start never came as a finished call at once", async () => {
    const res = await rawPost(service.url, v2Path(P, "call/end"), `{"end":${loneEnd}}`, remoteHttpHeaders(newRetryId(), { "x-weave-trace-id": LONE_TRACE }));
    expect({ status: res.status, body: res.text }).toEqual({ status: 200, body: "{}" });
    expect(await read(LONE)).toEqual({
      id: LONE, project_id: P, op_name: "unknown", display_name: null, trace_id: LONE_TRACE, parent_id: null, thread_id: null, turn_id: null,
      started_at: "2026-11-21T12:00:01.000000Z", ended_at: "2026-11-21T12:00:03.250000Z", exception: "KeyboardInterrupt", attributes: {},
      inputs: {}, output: null,
      summary: { usage: { "claude-sonnet-4": { requests: 1, input_tokens: 10, output_tokens: 3 } }, weave: { status: "error", trace_name: "unknown", latency_ms: 2250 } },
      wb_user_id: null, wb_run_id: null, wb_run_step: null, wb_run_step_end: null, deleted_at: null,
    } satisfies ReadCall);
    expect(await service.api.lines<ReadCall>("/calls/stream_query", { project_id: P, filter: { trace_ids: [LONE_TRACE] } })).toHaveLength(1);
  });

  it("fills the start's fields in when the start arrives after all, the end kept", async () => {
    const start = startJson({
      project_id: P, id: LONE, op_name: op("agent.run"), trace_id: LONE_TRACE, parent_id: null, started_at: "2026-11-21T12:00:01.000000Z",
      inputs: `{"task":"plan"}`,
    });
    expect((await rawPost(service.url, v2Path(P, "call/start"), `{"start":${start}}`, remoteHttpHeaders(newRetryId()))).status).toBe(200);
    expect(await read(LONE)).toMatchObject({
      op_name: op("agent.run"), attributes: SDK_ATTRIBUTES, inputs: { task: "plan" }, wb_user_id: "alice", ended_at: "2026-11-21T12:00:03.250000Z",
      exception: "KeyboardInterrupt", summary: { weave: { status: "error", trace_name: "agent.run", latency_ms: 2250 } },
    });
    // The end again (the SDK's retry, or the other order of a flush): nothing changes.
    expect((await rawPost(service.url, v2Path(P, "call/end"), `{"end":${loneEnd}}`, remoteHttpHeaders(newRetryId()))).status).toBe(200);
    expect(await read(LONE)).toMatchObject({ op_name: op("agent.run"), inputs: { task: "plan" }, ended_at: "2026-11-21T12:00:03.250000Z" });
    expect(await service.api.lines<ReadCall>("/calls/stream_query", { project_id: P, filter: { call_ids: [LONE] } })).toHaveLength(1);
  });

  it("shows a start that never gets an end as running", async () => {
    const id = "019aa2c3-0000-7000-8000-0000000000f2";
    const start = startJson({ project_id: P, id, op_name: op("stream_tokens"), trace_id: id, parent_id: null, started_at: "2026-11-21T12:30:00.000000Z", inputs: "{}" });
    expect((await rawPost(service.url, v2Path(P, "call/start"), `{"start":${start}}`, remoteHttpHeaders(newRetryId()))).status).toBe(200);
    expect(await read(id)).toMatchObject({ ended_at: null, output: null, summary: { weave: { status: "running", latency_ms: null } } });
  });

  it("refuses a v2 start or end for another project than the path's with 422 at the item", async () => {
    const start = startJson({ project_id: "acme/other", id: "x1", op_name: "op", trace_id: "x1", parent_id: null, started_at: "2026-11-21T12:30:00Z", inputs: "{}" });
    const s = await rawPost(service.url, v2Path(P, "call/start"), `{"start":${start}}`, remoteHttpHeaders(newRetryId()));
    expect({ status: s.status, loc: JSON.parse(s.text).detail[0].loc }).toEqual({ status: 422, loc: ["body", "start", "project_id"] });
    const e = await rawPost(service.url, v2Path(P, "call/end"), `{"end":${loneEnd.replace(`"project_id":"${P}"`, '"project_id":"acme/other"')}}`, remoteHttpHeaders(newRetryId()));
    expect({ status: e.status, loc: JSON.parse(e.text).detail[0].loc }).toEqual({ status: 422, loc: ["body", "end", "project_id"] });
  });
});
