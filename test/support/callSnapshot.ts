import type { CallSnapshot } from "../../services/store/calls/callRows.js";

/** A started, unfinished call with empty JSON parts and no optional field, with `fields` over it: what the worker's write path takes. */
export function callSnapshot(fields: Partial<CallSnapshot> & Pick<CallSnapshot, "project_id" | "id">): CallSnapshot {
  return {
    trace_id: "t",
    parent_id: null,
    thread_id: null,
    turn_id: null,
    op_name: "op",
    display_name: null,
    started_at: 1,
    ended_at: null,
    exception: null,
    attributes: {},
    inputs: {},
    output: null,
    summary: null,
    otel_dump: null,
    wb_user_id: null,
    wb_run_id: null,
    wb_run_step: null,
    wb_run_step_end: null,
    start_known: true,
    ...fields,
  };
}
