import { CallCreateBatchReq, CallCreateBatchRes, CallEndReq, CallsDeleteReq, CallsDeleteRes, CallStartReq, CallStartRes, CallUpdateReq } from "../contract/calls.js";
import { EmptyResponse } from "../contract/common.js";
import type { HttpApi } from "../http/app.js";
import { BODY_PROJECT, operation } from "../contract/operation.js";
import { type TraceEvent } from "../queue/events.js";
import type { EventPublisher } from "../queue/queue.js";
import type { CallsReadRepository } from "../store/calls/callsRead.js";
import { toEndEvent, toStartEvent } from "./callEvents.js";
import { nowMicros } from "../times.js";

const TAG = "Calls";

export const callStartOp = operation({ id: "call_start", method: "post", path: "/call/start", summary: "Start a call", tag: TAG, body: CallStartReq, scope: { kind: "projects", of: ({ body }) => [body.start.project_id] }, response: CallStartRes });
export const callEndOp = operation({ id: "call_end", method: "post", path: "/call/end", summary: "End a call", tag: TAG, body: CallEndReq, scope: { kind: "projects", of: ({ body }) => [body.end.project_id] }, response: EmptyResponse });
export const callUpsertBatchOp = operation({ id: "call_upsert_batch", method: "post", path: "/call/upsert_batch", summary: "Start and end calls in a batch", tag: TAG, body: CallCreateBatchReq, scope: { kind: "projects", of: ({ body }) => body.batch.map((item) => (item.mode === "start" ? item.req.start.project_id : item.req.end.project_id)) }, response: CallCreateBatchRes });
export const callUpdateOp = operation({ id: "call_update", method: "post", path: "/call/update", summary: "Update a call's display name", tag: TAG, body: CallUpdateReq, scope: BODY_PROJECT, response: EmptyResponse });
export const callsDeleteOp = operation({ id: "calls_delete", method: "post", path: "/calls/delete", summary: "Delete calls and all their descendants", tag: TAG, body: CallsDeleteReq, scope: BODY_PROJECT, response: CallsDeleteRes });

/** The write side of calls: validated requests become events on the queue. */
export function mountCallIngest(api: HttpApi, publisher: EventPublisher<TraceEvent>, reads: CallsReadRepository): void {
  api.mount(callStartOp, async ({ body: { start } }, ctx) => {
    const event = toStartEvent(start, ctx.principal.username);
    await publisher.publish([event], ctx.bodyBytes);
    return { id: event.id, trace_id: event.trace_id };
  });

  api.mount(callEndOp, async ({ body: { end } }, ctx) => {
    await publisher.publish([toEndEvent(end)], ctx.bodyBytes);
    return {};
  });

  api.mount(callUpsertBatchOp, async ({ body: { batch } }, ctx) => {
    const events: TraceEvent[] = [];
    const res: ({ id: string; trace_id: string } | Record<string, never>)[] = [];
    for (const item of batch) {
      if (item.mode === "start") {
        const event = toStartEvent(item.req.start, ctx.principal.username);
        events.push(event);
        res.push({ id: event.id, trace_id: event.trace_id });
      } else {
        events.push(toEndEvent(item.req.end));
        res.push({});
      }
    }
    await publisher.publish(events, ctx.bodyBytes);
    return { res };
  });

  api.mount(callUpdateOp, async ({ body: req }, ctx) => {
    await publisher.publish(
      [{ kind: "call_update", project_id: req.project_id, id: req.call_id, display_name: req.display_name, updated_at: nowMicros() }],
      ctx.bodyBytes,
    );
    return {};
  });

  api.mount(callsDeleteOp, async ({ body: req }, ctx) => {
    const ids = await reads.withDescendants(req.project_id, req.call_ids);
    if (ids.length > 0) {
      await publisher.publish(
        [{ kind: "calls_delete", project_id: req.project_id, ids, deleted_at: nowMicros(), wb_user_id: ctx.principal.username }],
        ctx.bodyBytes,
      );
    }
    return { num_deleted: ids.length };
  });
}
