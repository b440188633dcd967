/**
 * An OTLP export on the queue as one event (`OtlpExportEvent`): ingest checks its spans and
 * logs the body (`loggedExport`); the worker decodes it again and maps the accepted spans to
 * call events. Decoding twice costs less than carrying every span's call JSON through the queue.
 */
import type { CallCompleteEvent, OtlpExportEvent } from "../queue/events.js";
import { decodeRequest, spansWithoutText, type OtlpFormat } from "./decode.js";
import type { OtlpSpanBatch } from "./batch.js";
import { checkEncodedSpans, checkSpans, mappedSpans, spanCount, type CheckedSpans } from "./mapSpan.js";
import { encodeSpanBatch } from "./protobufWriter.js";

export interface ExportSource {
  readonly project_id: string;
  readonly wb_user_id: string;
  readonly format: OtlpFormat;
  /** The body with its content encoding undone. */
  readonly body: Buffer;
  readonly maxSpanBytes: number;
}

/**
 * The export as it is logged, and its batch when that was decoded here. A protobuf body is
 * logged as received. An OTLP/JSON body is decoded once, here, and logged as protobuf
 * (protobufWriter.ts): the worker reads that several times faster than it parses the JSON
 * again, and it takes about half the bytes (docs/benchmarks.md, "OTLP/JSON exports logged as
 * protobuf"); as received when protobuf cannot carry its batch.
 */
export function loggedExport(source: ExportSource): { readonly logged: ExportSource; readonly batch: OtlpSpanBatch | null } {
  if (source.format === "protobuf") return { logged: source, batch: null };
  const batch = decodeRequest(source.format, source.body);
  const body = encodeSpanBatch(batch);
  return { logged: body ? { ...source, format: "protobuf", body } : source, batch };
}

/**
 * The export's spans checked (`checkSpans`), on its batch when it is given: a protobuf body is
 * first read without its text, which tells for most exports (`checkEncodedSpans`), and read
 * whole only when it does not.
 */
export function checkExport({ format, body, maxSpanBytes }: ExportSource, batch: OtlpSpanBatch | null = null): CheckedSpans {
  if (batch) return checkSpans(batch, maxSpanBytes);
  const quick = format === "protobuf" ? checkEncodedSpans(spansWithoutText(body), maxSpanBytes) : null;
  return quick ?? checkSpans(decodeRequest(format, body), maxSpanBytes);
}

/** The event of an export whose spans were checked; null when none was accepted (nothing to store). */
export function otlpExportEvent(source: ExportSource, checked: CheckedSpans): OtlpExportEvent | null {
  if (checked.firstAcceptedId === null) return null;
  return {
    kind: "otlp_export",
    project_id: source.project_id,
    id: checked.firstAcceptedId,
    wb_user_id: source.wb_user_id,
    format: source.format,
    body: source.body,
    max_span_bytes: source.maxSpanBytes,
    spans: checked.accepted,
  };
}

/** The call events of a logged export: the spans that were accepted when it was checked, mapped. */
export function exportedCalls(event: OtlpExportEvent): CallCompleteEvent[] {
  return [...exportCalls(event)];
}

/** The logged export's spans, decoded again. */
export function decodedExport(event: OtlpExportEvent): OtlpSpanBatch {
  const { body } = event;
  // A view, not a copy: a body handed over from another thread arrives as a Uint8Array.
  return decodeRequest(event.format, Buffer.from(body.buffer, body.byteOffset, body.byteLength));
}

/** The call events of the export's accepted spans (`batch`: `decodedExport` of it). */
export function mappedExport(event: OtlpExportEvent, batch: OtlpSpanBatch): CallCompleteEvent[] {
  return [...exportCalls(event, batch)];
}

/**
 * `mappedExport` one call at a time (mapSpan.ts, `mappedSpans`), the export decoded again. Throws
 * once they are all made if they are not as many as were accepted (a dead letter, not a silent
 * loss). When ingest accepted every span, none is checked again: the same rules would accept
 * the same spans.
 */
export function* exportCalls(event: OtlpExportEvent, batch = decodedExport(event)): Generator<CallCompleteEvent> {
  const maxSpanBytes = spanCount(batch) === event.spans ? null : event.max_span_bytes;
  let mapped = 0;
  for (const call of mappedSpans(batch, { project_id: event.project_id, wb_user_id: event.wb_user_id, maxSpanBytes })) {
    mapped++;
    yield call;
  }
  if (mapped !== event.spans) throw new Error(`OTLP export ${event.project_id}/${event.id}: ${mapped} spans mapped, ${event.spans} were accepted`);
}
