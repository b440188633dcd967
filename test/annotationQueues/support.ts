import { basic, client, KEY_ACME, type Client } from "../support/service.js";

export type Queue = {
  id: string; project_id: string; name: string; description: string; scorer_refs: string[];
  created_at: string; created_by: string; updated_at: string; deleted_at: string | null;
};
export type Item = {
  id: string; project_id: string; queue_id: string; call_id: string; call_started_at: string; call_ended_at: string | null;
  call_op_name: string; call_trace_id: string; display_fields: string[]; added_by: string | null; annotation_state: string;
  annotator_user_id: string | null; created_at: string; created_by: string; updated_at: string; deleted_at: string | null;
  position_in_queue: number | null;
};
export type Detail = { detail: { loc: (string | number)[]; msg: string; type: string }[]; message: string };

export const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO_MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** Requests of one project through one key. */
export function annotationApi(url: string, project: string, key: string = KEY_ACME) {
  const api: Client = client(url, key);
  const send = (method: string, path: string, body?: unknown) =>
    fetch(`${url}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: basic(key) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return {
    api,
    send,
    create: (body: Record<string, unknown>) => api.json<{ id: string }>("/annotation_queues", { project_id: project, scorer_refs: [], ...body }).then((r) => r.id),
    read: (id: string) => api.get(`/annotation_queues/${id}?project_id=${project}`),
    query: (body: Record<string, unknown> = {}) => api.lines<Queue>("/annotation_queues/query", { project_id: project, ...body }),
    add: (queueId: string, callIds: string[], displayFields: string[] = []) =>
      api.json<{ added_count: number; duplicates: number }>(`/annotation_queues/${queueId}/items`, { project_id: project, call_ids: callIds, display_fields: displayFields }),
    items: (queueId: string, body: Record<string, unknown> = {}) =>
      api.json<{ items: Item[] }>(`/annotation_queues/${queueId}/items/query`, { project_id: project, ...body }).then((r) => r.items),
    progress: (queueId: string, itemId: string, state: string) =>
      api.post(`/annotation_queues/${queueId}/items/${itemId}/progress`, { project_id: project, annotation_state: state }),
    stats: (queueIds: string[]) => api.json<{ stats: { queue_id: string; total_items: number; completed_items: number }[] }>("/annotation_queues/stats", { project_id: project, queue_ids: queueIds }).then((r) => r.stats),
  };
}

export interface CallSpec {
  id: string;
  op?: string;
  trace?: string;
  startedAt: string;
  endedAt?: string;
}

/** Logs calls (start, and end when given) through /call/upsert_batch; answered once stored. */
export async function logCalls(api: Client, project: string, calls: readonly CallSpec[]): Promise<void> {
  const batch = calls.flatMap((c) => [
    { mode: "start", req: { start: { project_id: project, id: c.id, trace_id: c.trace ?? `t-${c.id}`, op_name: c.op ?? "op", started_at: c.startedAt, attributes: {}, inputs: { q: c.id } } } },
    ...(c.endedAt ? [{ mode: "end", req: { end: { project_id: project, id: c.id, ended_at: c.endedAt, started_at: c.startedAt, output: 1, summary: {} } } }] : []),
  ]);
  await api.json("/call/upsert_batch", { batch });
}
