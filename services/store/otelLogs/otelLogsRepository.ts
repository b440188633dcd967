import { createHash } from "node:crypto";
import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import type { OtlpLogRecord, OtlpLogRecordsEvent } from "../../queue/events.js";
import type { JsonObject, JsonValue } from "../../json.js";
import { andRetainedSince } from "../projects/retention.js";

/** One `otel_log_records` row as inserted and read (schema.ts). */
interface OtelLogRow {
  project_id: string;
  span_id: string;
  record_key: string;
  trace_id: string;
  time: number | string;
  position: number;
  event_name: string;
  severity_number: number;
  severity_text: string;
  body: string;
  attributes: string;
  scope_name: string;
}

/** Most records read per span: a span's records beyond it are not shown. */
export const MAX_RECORDS_PER_SPAN = 1000;

export class OtelLogsRepository {
  constructor(private readonly store: ClickHouseStore) {}

  /** Stores the events' records; storing one again (redelivery) leaves one row. */
  async insert(events: readonly OtlpLogRecordsEvent[]): Promise<void> {
    const rows = events.flatMap((e) => e.records.map((r) => toRow(e.project_id, r)));
    await this.store.insert("otel_logs_insert", "otel_log_records", rows);
  }

  /**
   * The records of each span, oldest first (at most MAX_RECORDS_PER_SPAN each); only GenAI events when `genAiOnly`;
   * none older than `retainedFrom`, the project's retention cutoff (null: all).
   */
  async forSpans(projectId: string, spanIds: readonly string[], genAiOnly: boolean, retainedFrom: number | null): Promise<Map<string, OtlpLogRecord[]>> {
    const out = new Map<string, OtlpLogRecord[]>();
    if (spanIds.length === 0) return out;
    const rows = await this.store.rows<OtelLogRow>("otel_logs_for_spans", forSpansQuery(projectId, spanIds, genAiOnly, retainedFrom));
    for (const row of rows) {
      const list = out.get(row.span_id) ?? [];
      list.push(fromRow(row));
      out.set(row.span_id, list);
    }
    return out;
  }
}

/** GenAI events are named `gen_ai.<…>` (`gen_ai.user.message`, `gen_ai.choice`, …). */
export const GEN_AI_EVENT_PREFIX = "gen_ai.";

export function forSpansQuery(projectId: string, spanIds: readonly string[], genAiOnly: boolean, retainedFrom: number | null): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT span_id, record_key, trace_id, time, position, event_name, severity_number, severity_text, body, attributes, scope_name
FROM otel_log_records FINAL
WHERE project_id = ${pb.str(projectId)} AND span_id IN ${pb.inStrings(spanIds)}
  AND (${pb.int(genAiOnly ? 1 : 0)} = 0 OR startsWith(event_name, ${pb.str(GEN_AI_EVENT_PREFIX)}))${andRetainedSince("time", retainedFrom, pb)}
ORDER BY span_id, time, position, record_key
LIMIT ${pb.count(MAX_RECORDS_PER_SPAN)} BY span_id`,
    params: pb.params,
  };
}

function toRow(projectId: string, r: OtlpLogRecord): OtelLogRow {
  const body = JSON.stringify(r.body);
  const attributes = JSON.stringify(r.attributes);
  const content = JSON.stringify([r.trace_id, r.span_id, r.time, r.position, r.event_name, r.severity_number, r.severity_text, body, attributes, r.scope_name]);
  return {
    project_id: projectId,
    span_id: r.span_id,
    record_key: createHash("sha256").update(content).digest("hex").slice(0, 32),
    trace_id: r.trace_id,
    time: r.time,
    position: r.position,
    event_name: r.event_name,
    severity_number: r.severity_number,
    severity_text: r.severity_text,
    body,
    attributes,
    scope_name: r.scope_name,
  };
}

function fromRow(row: OtelLogRow): OtlpLogRecord {
  return {
    trace_id: row.trace_id,
    span_id: row.span_id,
    time: Number(row.time),
    position: Number(row.position),
    event_name: row.event_name,
    severity_number: Number(row.severity_number),
    severity_text: row.severity_text,
    body: JSON.parse(row.body) as JsonValue,
    attributes: JSON.parse(row.attributes) as JsonObject,
    scope_name: row.scope_name,
  };
}
