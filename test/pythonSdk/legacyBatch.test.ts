import { describe, expect, it } from "vitest";
import { serviceForFile } from "../support/service.js";
import { endJson, newRetryId, rawPost, remoteHttpHeaders, SDK_ATTRIBUTES, startJson, type ReadCall } from "./sdk.js";

/**
 * Legacy mode (calls_complete off): starts and ends go out separately in `/call/upsert_batch`
 * batches, an end possibly in an earlier batch than its start; ends carry `trace_id`,
 * `is_eval` and `started_at`; the batch has no `X-Weave-Trace-Id`. The server answers normally
 * (never `CALLS_COMPLETE_MODE_REQUIRED`), and ignores keys it does not know inside `start` and
 * `end`, as the SDK's own server does.
 */
const service = serviceForFile();

const P = "acme/sdk-legacy";
const TRACE = "019aa3d4-0000-7000-8000-0000000000a0";
const ROOT = "019aa3d4-0000-7000-8000-0000000000a1";
const CHILD = "019aa3d4-0000-7000-8000-0000000000a2";
const op = (name: string) => `weave:///${P}/op/${name}:mE8kR2tY6uI0oP4aS7dF1gH5jK9lZ3xC2vB6nM0qW4e`;
const read = async (id: string) => (await service.api.json<{ call: ReadCall | null }>("/call/read", { project_id: P, id })).call;

const startItem = (json: string) => `{"mode":"start","req":{"start":${json}}}`;
const endItem = (json: string) => `{"mode":"end","req":{"end":${json}}}`;
/** A key a newer SDK might add inside start or end: ignored, never refused. */
const withFutureKey = (json: string) => `${json.slice(0, -1)},"future_field":{"x":1}}`;

const rootStart = startJson({ project_id: P, id: ROOT, op_name: op("pipeline"), trace_id: TRACE, parent_id: null, started_at: "2026-11-21T13:00:00.000000Z", inputs: `{"n":3}` });
const childStart = startJson({ project_id: P, id: CHILD, op_name: op("step"), trace_id: TRACE, parent_id: ROOT, started_at: "2026-11-21T13:00:00.500000Z", inputs: `{"i":1}` });
const childEnd = endJson({
  project_id: P, id: CHILD, ended_at: "2026-11-21T13:00:00.900000Z", output: `{"ok":true}`, summary: "{}", trace_id: TRACE, is_eval: false,
  started_at: "2026-11-21T13:00:00.500000Z",
});
const rootEnd = endJson({
  project_id: P, id: ROOT, ended_at: "2026-11-21T13:00:01.000000Z", output: "3", summary: `{"status_counts":{"success":2,"error":0}}`,
  trace_id: TRACE, is_eval: null, started_at: null,
});

describe("/call/upsert_batch from the legacy AsyncBatchProcessor", () => {
  it("answers each batch normally, the child's end coming a batch before its start", async () => {
    const first = await rawPost(service.url, "/call/upsert_batch", `{"batch":[${startItem(withFutureKey(rootStart))},${endItem(withFutureKey(childEnd))}]}`, remoteHttpHeaders(newRetryId()));
    expect({ status: first.status, body: JSON.parse(first.text) }).toEqual({ status: 200, body: { res: [{ id: ROOT, trace_id: TRACE }, {}] } });
    expect(first.text).not.toContain("CALLS_COMPLETE_MODE_REQUIRED");
    // The end named its start time: the child shows finished before its start is in.
    expect(await read(CHILD)).toMatchObject({ op_name: "unknown", ended_at: "2026-11-21T13:00:00.900000Z", output: { ok: true } });

    const second = await rawPost(service.url, "/call/upsert_batch", `{"batch":[${startItem(childStart)},${endItem(rootEnd)}]}`, remoteHttpHeaders(newRetryId()));
    expect({ status: second.status, body: JSON.parse(second.text) }).toEqual({ status: 200, body: { res: [{ id: CHILD, trace_id: TRACE }, {}] } });

    const calls = await service.api.lines<ReadCall>("/calls/stream_query", { project_id: P, filter: { trace_ids: [TRACE] } });
    expect(calls).toEqual([
      {
        id: ROOT, project_id: P, op_name: op("pipeline"), display_name: null, trace_id: TRACE, parent_id: null, thread_id: null, turn_id: null,
        started_at: "2026-11-21T13:00:00.000000Z", ended_at: "2026-11-21T13:00:01.000000Z", exception: null, attributes: SDK_ATTRIBUTES,
        inputs: { n: 3 }, output: 3, summary: { status_counts: { success: 2, error: 0 }, weave: { status: "success", trace_name: "pipeline", latency_ms: 1000 } },
        wb_user_id: "alice", wb_run_id: null, wb_run_step: null, wb_run_step_end: null, deleted_at: null,
      },
      {
        id: CHILD, project_id: P, op_name: op("step"), display_name: null, trace_id: TRACE, parent_id: ROOT, thread_id: null, turn_id: null,
        started_at: "2026-11-21T13:00:00.500000Z", ended_at: "2026-11-21T13:00:00.900000Z", exception: null, attributes: SDK_ATTRIBUTES,
        inputs: { i: 1 }, output: { ok: true }, summary: { weave: { status: "success", trace_name: "step", latency_ms: 400 } },
        wb_user_id: "alice", wb_run_id: null, wb_run_step: null, wb_run_step_end: null, deleted_at: null,
      },
    ] satisfies ReadCall[]);
    expect(await read(CHILD)).toEqual(calls[1]);
  });

  it("takes the same new end fields on the single /call/end, for a start it already has", async () => {
    const id = "019aa3d4-0000-7000-8000-0000000000b1";
    const start = startJson({ project_id: P, id, op_name: op("single"), trace_id: id, parent_id: null, started_at: "2026-11-21T14:00:00.000000Z", inputs: "{}" });
    expect((await rawPost(service.url, "/call/start", `{"start":${start}}`, remoteHttpHeaders(newRetryId(), { "x-weave-trace-id": id }))).status).toBe(200);
    const end = endJson({ project_id: P, id, ended_at: "2026-11-21T14:00:00.250000Z", output: `"x"`, summary: "{}", trace_id: id, is_eval: true, started_at: "2026-11-21T14:00:00.000000Z" });
    const res = await rawPost(service.url, "/call/end", `{"end":${withFutureKey(end)}}`, remoteHttpHeaders(newRetryId(), { "x-weave-trace-id": id }));
    expect({ status: res.status, body: res.text, ignored: res.headers["x-ignored-fields"] }).toEqual({ status: 200, body: "{}", ignored: "end.future_field" });
    expect(await read(id)).toMatchObject({ op_name: op("single"), output: "x", ended_at: "2026-11-21T14:00:00.250000Z", summary: { weave: { latency_ms: 250 } } });
  });
});
