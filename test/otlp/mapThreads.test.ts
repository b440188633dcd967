import { describe, it, expect } from "vitest";
import { mapAttributes, PARENT_ID, SPAN_ID } from "./support.js";

const CHILD = { parentSpanId: PARENT_ID };

describe("mapSpans: threads and turns", () => {
  it.each(["wandb.thread_id", "gcp.vertex.agent.session_id", "session.id", "gen_ai.conversation.id", "ai.telemetry.metadata.sessionId"])("takes thread_id from %s", (key) => {
    expect(mapAttributes({ [key]: "thread-1" }, CHILD).start.thread_id).toBe("thread-1");
  });

  it("takes thread_id from the first present key", () => {
    const attrs = { "gen_ai.conversation.id": "c", "session.id": "s", "gcp.vertex.agent.session_id": "g", "wandb.thread_id": "w" };
    expect(mapAttributes(attrs).start.thread_id).toBe("w");
    expect(mapAttributes({ "gen_ai.conversation.id": "c", "session.id": "s" }).start.thread_id).toBe("s");
  });

  it("makes a root span with a session id a turn", () => {
    const { start } = mapAttributes({ "session.id": "s-1" });
    expect([start.thread_id, start.turn_id]).toEqual(["s-1", SPAN_ID]);
  });

  it("does not make a child span with a session id a turn", () => {
    const { start } = mapAttributes({ "session.id": "s-1" }, CHILD);
    expect([start.thread_id, start.turn_id]).toEqual(["s-1", null]);
  });

  it("makes any span with wandb.is_turn true a turn", () => {
    expect(mapAttributes({ "wandb.thread_id": "t", "wandb.is_turn": true }, CHILD).start.turn_id).toBe(SPAN_ID);
    expect(mapAttributes({ "wandb.thread_id": "t", "wandb.is_turn": "true" }, CHILD).start.turn_id).toBe(SPAN_ID);
    expect(mapAttributes({ "wandb.thread_id": "t", "wandb.is_turn": false }, CHILD).start.turn_id).toBeNull();
  });

  it("leaves thread_id and turn_id null on a root span without a session", () => {
    const { start } = mapAttributes({});
    expect([start.thread_id, start.turn_id]).toEqual([null, null]);
  });
});
