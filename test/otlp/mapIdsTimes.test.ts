import { describe, it, expect } from "vitest";
import { mapSpans } from "../../services/otlp/mapSpan.js";
import { batchOf, CTX, makeSpan, mapAttributes, mapOne, PARENT_ID, SPAN_ID, START_NS, TRACE_ID } from "./support.js";

describe("mapSpans: ids, times and the fixed fields", () => {
  it("maps a bare root span to exactly one complete-call event", () => {
    const { call } = mapOne(makeSpan());
    expect(call).toEqual({
      kind: "call_complete",
      project_id: "acme/chat",
      id: SPAN_ID,
      trace_id: TRACE_ID,
      parent_id: null,
      thread_id: null,
      turn_id: null,
      op_name: "chat gpt-4o",
      display_name: null,
      started_at: 1_700_000_000_123_456,
      attributes: {
        otel: { attributes: {}, resource: {}, scope: { name: "openinference.instrumentation.openai", version: "0.1.2" } },
      },
      inputs: {},
      otel_dump: expect.any(Object),
      wb_user_id: "user-7",
      wb_run_id: null,
      wb_run_step: null,
      ended_at: 1_700_000_001_987_654,
      exception: null,
      output: null,
      summary: {},
      wb_run_step_end: null,
    });
  });

  it("converts nanoseconds to microseconds by truncation, keeping every microsecond", () => {
    const { start, end } = mapOne(makeSpan({ startTimeUnixNano: 1_767_225_600_000_000_999n, endTimeUnixNano: 1_767_225_600_000_001_000n }));
    expect(start.started_at).toBe(1_767_225_600_000_000);
    expect(end.ended_at).toBe(1_767_225_600_000_001);
  });

  it("accepts a span that ends when it starts", () => {
    const { start, end } = mapOne(makeSpan({ startTimeUnixNano: START_NS, endTimeUnixNano: START_NS }));
    expect(end.ended_at).toBe(start.started_at);
  });

  it("takes parent_id from the parent span id; an all-zero parent id means a root span", () => {
    expect(mapOne(makeSpan({ parentSpanId: PARENT_ID })).start.parent_id).toBe(PARENT_ID);
    expect(mapOne(makeSpan({ parentSpanId: "0000000000000000" })).start.parent_id).toBeNull();
    expect(mapOne(makeSpan({ parentSpanId: "" })).start.parent_id).toBeNull();
  });

  it("takes project_id and wb_user_id from the context, never from attributes", () => {
    const { start, end } = mapOne(makeSpan({ attributes: { wb_user_id: "mallory", project_id: "x/y" } }), {
      ...CTX,
      project_id: "team/proj",
      wb_user_id: "alice",
    });
    expect([start.project_id, start.wb_user_id, end.project_id]).toEqual(["team/proj", "alice", "team/proj"]);
  });

  it("takes display_name, wb_run_id and wb_run_step from the wandb.* attributes", () => {
    const { start, end } = mapAttributes({ "wandb.display_name": "My call", "wandb.run_id": "run-1", "wandb.run_step": 12 });
    expect([start.display_name, start.wb_run_id, start.wb_run_step, end.wb_run_step_end]).toEqual(["My call", "run-1", 12, null]);
    expect(mapAttributes({ "wandb.run_step": "7" }).start.wb_run_step).toBe(7);
    expect(mapAttributes({ "wandb.run_step": 1.5 }).start.wb_run_step).toBeNull();
    expect(mapAttributes({ "wandb.display_name": 3 }).start.display_name).toBe("3");
  });

  it("keeps batch order: one event per span", () => {
    const spans = ["1111111111111111", "2222222222222222"].map((spanId) => makeSpan({ spanId }));
    const result = mapSpans(batchOf(spans), CTX);
    expect(result.events.map((e) => [e.kind, e.id])).toEqual([
      ["call_complete", "1111111111111111"],
      ["call_complete", "2222222222222222"],
    ]);
  });
});
