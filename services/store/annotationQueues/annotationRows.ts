import type { AnnotationQueueItemSchema, AnnotationQueueSchema, AnnotationState } from "../../contract/annotationQueues.js";
import { microsToIso } from "../../times.js";

/** A row of `annotation_queues` as written. */
export interface QueueRow {
  project_id: string;
  id: string;
  name: string;
  description: string;
  scorer_refs: string[];
  created_at: number;
  created_by: string;
  updated_at: number;
  deleted_at: number | null;
  version: number;
}

/** 64-bit integers come back from ClickHouse as strings. */
type Read<T> = { [K in keyof T]: T[K] extends number ? string | number : T[K] extends number | null ? string | number | null : T[K] };

export type QueueReadRow = Read<QueueRow>;

export function queueRowOf(row: QueueReadRow): QueueRow {
  return {
    ...row,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    deleted_at: row.deleted_at === null ? null : Number(row.deleted_at),
    version: Number(row.version),
  };
}

export function toQueueSchema(row: QueueRow): AnnotationQueueSchema {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    description: row.description,
    scorer_refs: row.scorer_refs,
    created_at: microsToIso(row.created_at),
    created_by: row.created_by,
    updated_at: microsToIso(row.updated_at),
    deleted_at: row.deleted_at === null ? null : microsToIso(row.deleted_at),
  };
}

/** A row of `annotation_queue_items` as written. */
export interface ItemRow {
  project_id: string;
  queue_id: string;
  position: number;
  id: string;
  call_id: string;
  call_started_at: number;
  call_ended_at: number | null;
  call_op_name: string;
  call_trace_id: string;
  display_fields: string[];
  added_by: string | null;
  created_at: number;
  created_by: string;
}

/** An item read with its latest progress ('' when nobody touched it) and, when asked, its place. */
export type ItemReadRow = Read<ItemRow> & {
  progress_state: string;
  progress_annotator: string;
  position_in_queue?: string | number;
};

const stateOf = (stored: string): AnnotationState => (stored === "" ? "unstarted" : (stored as AnnotationState));

export function toItemSchema(row: ItemReadRow): AnnotationQueueItemSchema {
  const createdAt = microsToIso(Number(row.created_at));
  return {
    id: row.id,
    project_id: row.project_id,
    queue_id: row.queue_id,
    call_id: row.call_id,
    call_started_at: microsToIso(Number(row.call_started_at)),
    call_ended_at: row.call_ended_at === null ? null : microsToIso(Number(row.call_ended_at)),
    call_op_name: row.call_op_name,
    call_trace_id: row.call_trace_id,
    display_fields: row.display_fields,
    added_by: row.added_by,
    annotation_state: stateOf(row.progress_state),
    annotator_user_id: row.progress_annotator === "" ? null : row.progress_annotator,
    created_at: createdAt,
    created_by: row.created_by,
    updated_at: createdAt,
    deleted_at: null,
    position_in_queue: row.position_in_queue === undefined ? null : Number(row.position_in_queue),
  };
}

/** A row of `annotation_progress` as written. */
export interface ProgressRow {
  project_id: string;
  queue_id: string;
  item_id: string;
  annotator_id: string;
  annotation_state: AnnotationState;
  created_at: number;
  updated_at: number;
  version: number;
}
