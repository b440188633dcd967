import type { AnnotationQueueItemSchema, AnnotationQueueSchema, AnnotationState, QueueStats } from "../../contract/annotationQueues.js";
import { NotFoundError } from "../../errors.js";
import { uuidv7 } from "../../ids.js";
import { MonotonicClock, type Clock } from "../../times.js";
import type { CallsReadRepository } from "../calls/callsRead.js";
import type { ClickHouseStore } from "../clickhouse.js";
import type { ProjectRetention } from "../projects/retention.js";
import { idChunks } from "../sql.js";
import {
  idsAtPositionsQuery, itemByIdQuery, itemKeysQuery, itemRowsQuery, liveQueuesQuery, placesBeforeQuery, progressQuery, queueByIdQuery, queuedCallsQuery, queuesQuery,
  doneCountsQuery, itemCountsQuery, type ItemKey, type ItemsQuerySpec, type QueuesQuerySpec,
} from "./annotationQuery.js";
import {
  queueRowOf, toItemSchema, toQueueSchema, type ItemReadRow, type ItemRow, type ProgressRow, type QueueReadRow, type QueueRow,
} from "./annotationRows.js";
import { transition } from "./transitions.js";

/** Items named per query in a page's second step (server-generated ids: well within the SQL size limit). */
const KEYS_PER_QUERY = 1000;

/** What an item copies of its call. */
type CopiedCallFields = Pick<ItemRow, "call_started_at" | "call_ended_at" | "call_op_name" | "call_trace_id">;

export interface QueueFields {
  readonly name: string;
  readonly description: string;
  readonly scorer_refs: readonly string[];
}

export interface AddedCalls {
  added_count: number;
  duplicates: number;
}

/**
 * Annotation queues, their items and each annotator's progress. Writes go straight to
 * ClickHouse (low volume, read-your-writes): an INSERT returns once its part is written.
 * Read-then-write steps (update, delete, progress) are not atomic across processes: two
 * concurrent updates of one queue keep the later one whole; progress moves of one annotator on
 * one item are serialized within a process.
 */
export class AnnotationQueuesRepository {
  private readonly progressLocks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: ClickHouseStore,
    private readonly calls: CallsReadRepository,
    private readonly retention: ProjectRetention,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  async create(projectId: string, fields: QueueFields, createdBy: string): Promise<string> {
    const now = this.clock.nowMicros();
    const id = uuidv7(Math.floor(now / 1000));
    const row: QueueRow = {
      project_id: projectId, id, name: fields.name, description: fields.description, scorer_refs: [...fields.scorer_refs],
      created_at: now, created_by: createdBy, updated_at: now, deleted_at: null, version: now,
    };
    await this.store.insert("annotation_queue_create", "annotation_queues", [row]);
    return id;
  }

  async *query(spec: QueuesQuerySpec): AsyncGenerator<AnnotationQueueSchema> {
    for await (const row of this.store.stream<QueueReadRow>("annotation_queues_query", queuesQuery(spec))) yield toQueueSchema(queueRowOf(row));
  }

  /** The live queue, or NotFoundError (404). */
  async read(projectId: string, queueId: string): Promise<QueueRow> {
    const [row] = await this.store.rows<QueueReadRow>("annotation_queue_read", queueByIdQuery(projectId, queueId));
    if (!row) throw new NotFoundError(`Annotation queue ${queueId} not found`);
    return queueRowOf(row);
  }

  /** Changes only the fields given; with none, answers the queue as it is. */
  async update(projectId: string, queueId: string, changes: Partial<QueueFields>): Promise<AnnotationQueueSchema> {
    const current = await this.read(projectId, queueId);
    const { name, description, scorer_refs: scorerRefs } = changes;
    if (name === undefined && description === undefined && scorerRefs === undefined) return toQueueSchema(current);
    const now = this.nextVersion(current);
    const next: QueueRow = {
      ...current,
      name: name ?? current.name,
      description: description ?? current.description,
      scorer_refs: scorerRefs ? [...scorerRefs] : current.scorer_refs,
      updated_at: now,
      version: now,
    };
    await this.store.insert("annotation_queue_update", "annotation_queues", [next]);
    return toQueueSchema(next);
  }

  async delete(projectId: string, queueId: string): Promise<AnnotationQueueSchema> {
    const current = await this.read(projectId, queueId);
    const now = this.nextVersion(current);
    const next: QueueRow = { ...current, deleted_at: now, version: now };
    await this.store.insert("annotation_queue_delete", "annotation_queues", [next]);
    return toQueueSchema(next);
  }

  /** Stats of the live queues among `queueIds`, in the order asked (each once); others are left out. */
  async stats(projectId: string, queueIds: readonly string[]): Promise<QueueStats[]> {
    const asked = [...new Set(queueIds)];
    if (asked.length === 0) return [];
    const live = new Set<string>();
    for (const chunk of idChunks(asked)) {
      for (const row of await this.store.rows<{ id: string }>("annotation_queues_live", liveQueuesQuery(projectId, chunk))) live.add(row.id);
    }
    const total = new Map<string, number>();
    const done = new Map<string, number>();
    const cutoff = await this.retention.cutoff(projectId);
    for (const chunk of idChunks([...live])) {
      const [items, completed] = await Promise.all([
        this.store.rows<{ queue_id: string; n: string }>("annotation_queues_item_counts", itemCountsQuery(projectId, chunk, cutoff)),
        this.store.rows<{ queue_id: string; n: string }>("annotation_queues_done_counts", doneCountsQuery(projectId, chunk, cutoff)),
      ]);
      for (const r of items) total.set(r.queue_id, Number(r.n));
      for (const r of completed) done.set(r.queue_id, Number(r.n));
    }
    return asked.filter((id) => live.has(id)).map((id) => ({ queue_id: id, total_items: total.get(id) ?? 0, completed_items: done.get(id) ?? 0 }));
  }

  /**
   * Adds the calls as items in the order given, copying each call's started_at, ended_at,
   * op_name and trace_id as the calls store has them now. Every id asked is either added, a
   * duplicate (already in the queue, or named earlier in the request) or unknown (no such live
   * call in the project: skipped, counted in neither).
   */
  async addCalls(projectId: string, queueId: string, callIds: readonly string[], displayFields: readonly string[], addedBy: string): Promise<AddedCalls> {
    await this.read(projectId, queueId);
    const distinct = [...new Set(callIds)];
    const queued = new Set<string>();
    for (const chunk of idChunks(distinct)) {
      for (const row of await this.store.rows<{ call_id: string }>("annotation_queue_queued_calls", queuedCallsQuery(projectId, queueId, chunk))) queued.add(row.call_id);
    }
    const fresh = distinct.filter((id) => !queued.has(id));
    const found = await this.callFields(projectId, fresh);
    const createdAt = this.clock.nowMicros();
    const rows: ItemRow[] = fresh.flatMap((callId) => {
      const call = found.get(callId);
      if (!call) return [];
      const position = this.clock.nowMicros();
      return [{
        project_id: projectId, queue_id: queueId, position, id: uuidv7(Math.floor(createdAt / 1000)), call_id: callId,
        ...call, display_fields: [...displayFields], added_by: addedBy, created_at: createdAt, created_by: addedBy,
      }];
    });
    await this.store.insert("annotation_queue_add_calls", "annotation_queue_items", rows);
    return { added_count: rows.length, duplicates: callIds.length - fresh.length };
  }

  /** The copied fields of each live call among `callIds`, read through the calls repository. */
  private async callFields(projectId: string, callIds: readonly string[]): Promise<Map<string, CopiedCallFields>> {
    const out = new Map<string, CopiedCallFields>();
    for (const chunk of idChunks(callIds)) {
      for await (const call of this.calls.stream({ projectId, filter: { call_ids: chunk }, columns: ["ended_at"] })) {
        out.set(call.id, {
          call_started_at: Number(call.started_at),
          call_ended_at: call.ended_at === null ? null : Number(call.ended_at),
          call_op_name: call.op_name,
          call_trace_id: call.trace_id,
        });
      }
    }
    return out;
  }

  /**
   * A page of a live queue's items, in two steps: the page's ids and positions (narrow), then
   * the whole rows of those items with their progress (and places), KEYS_PER_QUERY at a time.
   */
  async items(asked: ItemsQuerySpec): Promise<AnnotationQueueItemSchema[]> {
    const spec = { ...asked, retainedFrom: await this.retention.cutoff(asked.projectId) };
    const [, keys] = await Promise.all([
      this.read(spec.projectId, spec.queueId),
      this.store.rows<ItemKey>("annotation_queue_item_keys", itemKeysQuery(spec)),
    ]);
    const rows = new Map<string, ItemReadRow>();
    const places = new Map<string, number>();
    for (let from = 0; from < keys.length; from += KEYS_PER_QUERY) {
      const chunk = keys.slice(from, from + KEYS_PER_QUERY);
      const [found, placed] = await Promise.all([
        this.store.rows<ItemReadRow>("annotation_queue_item_rows", itemRowsQuery(spec.projectId, spec.queueId, chunk)),
        spec.includePosition ? this.places(spec.projectId, spec.queueId, chunk, spec.retainedFrom) : new Map<string, number>(),
      ]);
      for (const row of found) rows.set(row.id, row);
      for (const [id, place] of placed) places.set(id, place);
    }
    return keys.flatMap((key) => {
      const row = rows.get(key.id);
      if (!row) return [];
      return [toItemSchema(spec.includePosition ? { ...row, position_in_queue: places.get(key.id) ?? 0 } : row)];
    });
  }

  /**
   * Each key's 1-based place in the whole queue, by (position, id): the items before its
   * position, plus its rank by id among the items at its position.
   */
  private async places(projectId: string, queueId: string, keys: readonly ItemKey[], retainedFrom: number | null): Promise<Map<string, number>> {
    const positions = [...new Set(keys.map((k) => Number(k.position)))];
    const [before, atPositions] = await Promise.all([
      this.store.rows<{ position: string; before: string }>("annotation_queue_places_before", placesBeforeQuery(projectId, queueId, positions, retainedFrom)),
      this.store.rows<{ position: string; ids: string[] }>("annotation_queue_ids_at_positions", idsAtPositionsQuery(projectId, queueId, positions, retainedFrom)),
    ]);
    const beforeOf = new Map(before.map((r) => [Number(r.position), Number(r.before)]));
    const out = new Map<string, number>();
    for (const row of atPositions) {
      // Ids compare as ClickHouse compares them (bytes), so ties are ranked as pages order them.
      const tied = [...row.ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      tied.forEach((id, k) => out.set(id, (beforeOf.get(Number(row.position)) ?? 0) + k + 1));
    }
    return out;
  }

  /**
   * Moves `annotator`'s state of the item to `target` (transitions.ts: 409 and nothing written
   * when the move is not allowed). Answers the item as this annotator sees it.
   */
  async setProgress(projectId: string, queueId: string, itemId: string, annotator: string, target: AnnotationState): Promise<AnnotationQueueItemSchema> {
    return this.serialized(JSON.stringify([projectId, queueId, itemId, annotator]), async () => {
      const cutoff = await this.retention.cutoff(projectId);
      const [, [item], [stored]] = await Promise.all([
        this.read(projectId, queueId),
        this.store.rows<ItemReadRow>("annotation_item_read", itemByIdQuery(projectId, queueId, itemId, cutoff)),
        this.store.rows<{ annotation_state: AnnotationState; created_at: string; version: string }>(
          "annotation_progress_read", progressQuery(projectId, queueId, itemId, annotator),
        ),
      ]);
      if (!item) throw new NotFoundError(`Item ${itemId} not found in annotation queue ${queueId}`);
      const current = stored?.annotation_state ?? null;
      if (transition(current, target) === "write") {
        const now = Math.max(this.clock.nowMicros(), stored ? Number(stored.version) + 1 : 0);
        const row: ProgressRow = {
          project_id: projectId, queue_id: queueId, item_id: itemId, annotator_id: annotator, annotation_state: target,
          created_at: stored ? Number(stored.created_at) : now, updated_at: now, version: now,
        };
        await this.store.insert("annotation_progress_write", "annotation_progress", [row]);
      }
      return { ...toItemSchema(item), annotation_state: target, annotator_user_id: annotator };
    });
  }

  private nextVersion(current: QueueRow): number {
    return Math.max(this.clock.nowMicros(), current.version + 1);
  }

  /** Runs `fn` after the previous call with the same key (in this process) has finished. */
  private async serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.progressLocks.get(key) ?? Promise.resolve();
    const run = previous.then(fn);
    const settled = run.catch(() => undefined);
    this.progressLocks.set(key, settled);
    try {
      return await run;
    } finally {
      if (this.progressLocks.get(key) === settled) this.progressLocks.delete(key);
    }
  }
}
