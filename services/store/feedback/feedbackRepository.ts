import type { FeedbackSchema } from "../../contract/feedback.js";
import type { Query } from "../../contract/queryExpr.js";
import { uuidv7 } from "../../ids.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { feedbackByIdQuery, feedbackForCallsQuery, feedbackPurgeQuery, feedbackSelectQuery, triggerStatsQuery, type FeedbackQuerySpec } from "./feedbackQuery.js";
import { newFeedbackRow, tombstoneRow, toFeedbackSchema, type FeedbackReadRow, type FeedbackRow } from "./feedbackRows.js";
import type { Payload } from "./payload.js";
import type { ValidFeedback } from "./validate.js";
import { MonotonicClock, microsToIso, type Clock } from "../../times.js";

export interface CreatedFeedback {
  id: string;
  created_at: string;
  wb_user_id: string;
  payload: Payload;
}

/** At most this many feedback per call in `include_feedback` (the oldest ones). */
export const MAX_FEEDBACK_PER_CALL = 1000;

/**
 * The feedback table. Writes go straight to ClickHouse (not through the queue): feedback
 * is low-volume and its API promises read-your-writes. An INSERT returns once its part is
 * written, so the next read sees it.
 */
export class FeedbackRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  /** Writes validated feedback in one INSERT (one part: all of them appear at once). */
  async create(items: readonly ValidFeedback[], wbUserId: string): Promise<CreatedFeedback[]> {
    const rows = items.map((item) => this.row(item, wbUserId));
    await this.store.insert("feedback_create", "feedback", rows);
    return rows.map((row, i) => created(row, items[i]!.payload));
  }

  /**
   * Deletes `feedbackId` and creates `item` in one INSERT: the tombstone and the new row
   * become visible together. As in Weave, a missing `feedbackId` (never created, already
   * purged) does not stop the creation.
   */
  async replace(projectId: string, feedbackId: string, item: ValidFeedback, wbUserId: string): Promise<CreatedFeedback> {
    const [old] = await this.store.rows<{ id: string; version: string }>("feedback_replace_read", feedbackByIdQuery(projectId, feedbackId));
    const row = this.row(item, wbUserId);
    const rows: FeedbackRow[] = [];
    if (old) rows.push(tombstoneRow(projectId, feedbackId, Math.max(Number(old.version) + 1, this.clock.nowMicros())));
    // A new row that reuses the replaced id must outrank its own tombstone.
    if (old && row.id === feedbackId) row.version = rows[0]!.version + 1;
    rows.push(row);
    await this.store.insert("feedback_replace", "feedback", rows);
    return created(row, item.payload);
  }

  async query(spec: FeedbackQuerySpec): Promise<Partial<FeedbackSchema>[]> {
    const rows = await this.store.rows<Partial<FeedbackReadRow>>("feedback_query", feedbackSelectQuery(spec));
    return rows.map(toFeedbackSchema);
  }

  async purge(projectId: string, query: Query): Promise<void> {
    await this.store.command("feedback_purge", feedbackPurgeQuery(projectId, query, this.clock.nowMicros()));
  }

  /** The live feedback on each of `callIds`, oldest first. */
  async forCalls(projectId: string, callIds: readonly string[]): Promise<Map<string, FeedbackSchema[]>> {
    const out = new Map<string, FeedbackSchema[]>();
    if (callIds.length === 0) return out;
    const rows = await this.store.rows<FeedbackReadRow & { call_id: string }>(
      "feedback_for_calls",
      feedbackForCallsQuery(projectId, callIds, MAX_FEEDBACK_PER_CALL),
    );
    for (const { call_id, ...row } of rows) {
      const list = out.get(call_id) ?? [];
      list.push(toFeedbackSchema(row) as FeedbackSchema);
      out.set(call_id, list);
    }
    return out;
  }

  /** The live feedback triggered by `triggerRef` (a monitor version): how many, and when the newest was created (µs, null when none). */
  async triggerStats(projectId: string, triggerRef: string): Promise<{ count: number; lastAt: number | null }> {
    const [row] = await this.store.rows<{ n: string | number; last_at: string | number }>("feedback_trigger_stats", triggerStatsQuery(projectId, triggerRef));
    const count = Number(row?.n ?? 0);
    return { count, lastAt: count > 0 ? Number(row!.last_at) : null };
  }

  private row(item: ValidFeedback, wbUserId: string): FeedbackRow {
    const createdAt = this.clock.nowMicros();
    const id = item.req.id ?? uuidv7(Math.floor(createdAt / 1000));
    return newFeedbackRow({ req: item.req, id, payload: item.payload, wbUserId, createdAt });
  }
}

function created(row: FeedbackRow, payload: Payload): CreatedFeedback {
  return { id: row.id, created_at: microsToIso(row.created_at), wb_user_id: row.wb_user_id, payload };
}
