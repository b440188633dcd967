import type { CallSnapshot, WrittenCall } from "../calls/callRows.js";
import { microsToIso } from "../../times.js";

/** One `thread_turns` row as the worker writes it. */
export interface TurnRow {
  readonly project_id: string;
  readonly thread_id: string;
  readonly turn_id: string;
  readonly started_at: number;
  /** 0 while the turn runs (then `finished` is 0). */
  readonly ended_at: number;
  readonly finished: 0 | 1;
  readonly deleted: 0 | 1;
  readonly version: number;
}

/** Ranks of a turn row's state: a higher rank always replaces a lower one. */
export const TurnRank = { running: 1, finished: 2, deleted: 3 } as const;
export type TurnRank = (typeof TurnRank)[keyof typeof TurnRank];

/** Write time in ms since 2024-01-01 takes the low 42 bits (139 years); the rank sits above. */
const RANK_STRIDE = 2 ** 42;
const VERSION_EPOCH_MS = Date.UTC(2024, 0, 1);

/**
 * Version of a turn row: the rank first, then the write time, so within a rank the later
 * write wins. Below 2^44, so a thread's version (the sum over its turn rows, see
 * threadsWrite.ts) stays exact in UInt64 up to 2^20 (1,048,576) turns.
 */
export function turnVersion(rank: TurnRank, nowMs: number): number {
  return rank * RANK_STRIDE + Math.max(0, Math.min(RANK_STRIDE - 1, nowMs - VERSION_EPOCH_MS));
}

/** A turn call: its id is its turn_id and it belongs to a thread. Nested calls never are. */
export function isTurn(call: Pick<CallSnapshot, "id" | "turn_id" | "thread_id">): boolean {
  return call.turn_id === call.id && !!call.thread_id;
}

/** The `thread_turns` row of a turn call's snapshot, or null for any other call. */
export function turnRowFromSnapshot(call: WrittenCall, nowMs: number): TurnRow | null {
  if (!isTurn(call)) return null;
  const finished = call.ended_at !== null;
  return {
    project_id: call.project_id,
    thread_id: call.thread_id!,
    turn_id: call.id,
    started_at: call.started_at,
    ended_at: call.ended_at ?? 0,
    finished: finished ? 1 : 0,
    deleted: 0,
    version: turnVersion(finished ? TurnRank.finished : TurnRank.running, nowMs),
  };
}

/** A `threads` row as the page query returns it (Int64 and UInt64 come back as strings). */
export interface ThreadRow {
  thread_id: string;
  turn_count: string | number;
  start_time: string | number;
  last_updated: string | number;
  first_turn_id: string;
  last_turn_id: string;
  p50_turn_duration_ms: number | null;
  p99_turn_duration_ms: number | null;
}

/** The API's ThreadSchema. */
export interface ThreadView {
  thread_id: string;
  turn_count: number;
  start_time: string;
  last_updated: string;
  first_turn_id: string | null;
  last_turn_id: string | null;
  p50_turn_duration_ms: number | null;
  p99_turn_duration_ms: number | null;
}

export function toThreadView(row: ThreadRow): ThreadView {
  return {
    thread_id: row.thread_id,
    turn_count: Number(row.turn_count),
    start_time: microsToIso(Number(row.start_time)),
    last_updated: microsToIso(Number(row.last_updated)),
    first_turn_id: row.first_turn_id === "" ? null : row.first_turn_id,
    last_turn_id: row.last_turn_id === "" ? null : row.last_turn_id,
    p50_turn_duration_ms: row.p50_turn_duration_ms === null ? null : Number(row.p50_turn_duration_ms),
    p99_turn_duration_ms: row.p99_turn_duration_ms === null ? null : Number(row.p99_turn_duration_ms),
  };
}
