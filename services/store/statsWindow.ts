import { MAX_STATS_BUCKETS, MAX_STATS_RANGE_DAYS } from "../contract/usage.js";
import { ValidationError } from "../errors.js";
import { isoToMicros } from "../times.js";

/**
 * The time buckets of every statistics answer (`/calls/stats`, `/feedback/stats`): the
 * range checked (end after start, at most 31 days), the granularity chosen (asked, or by
 * the range: ≤2 h → 300 s, ≤12 h → 3600, ≤3 d → 21600, ≤14 d → 43200, else 86400; raised
 * past 10,000 buckets), the buckets aligned in the requested timezone (daily buckets start
 * at local midnight). Pure; values in µs and seconds.
 */
export interface StatsWindow {
  /** Requested start and resolved end, µs; calls with startMicros ≤ started_at < endMicros count. */
  readonly startMicros: number;
  readonly endMicros: number;
  readonly granularitySeconds: number;
  /** Start of bucket 0 (≤ startMicros): bucket i covers [origin + i·g, origin + (i+1)·g). */
  readonly originMicros: number;
  readonly bucketCount: number;
  readonly timezone: string;
}

const HOUR = 3600;
const DAY = 86_400;

/** The default bucket width for a range (seconds). */
export function defaultGranularity(rangeSeconds: number): number {
  if (rangeSeconds <= 2 * HOUR) return 300;
  if (rangeSeconds <= 12 * HOUR) return HOUR;
  if (rangeSeconds <= 3 * DAY) return 6 * HOUR;
  if (rangeSeconds <= 14 * DAY) return 12 * HOUR;
  return DAY;
}

/** The zone's offset from UTC at an instant, in seconds (east positive); throws RangeError for an unknown zone. */
export function zoneOffsetSeconds(timezone: string, atMs: number): number {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: timezone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
  const parts = Object.fromEntries(format.formatToParts(new Date(atMs)).map((p) => [p.type, p.value]));
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return Math.round((wall - Math.floor(atMs / 1000) * 1000) / 1000);
}

export interface StatsWindowRequest {
  readonly start: string;
  readonly end?: string | null;
  readonly granularity?: number | null;
  readonly timezone?: string | null;
}

const invalid = (field: string, msg: string) => ValidationError.at(["body", field], msg);

export function resolveStatsWindow(req: StatsWindowRequest, nowMicros: number): StatsWindow {
  const timezone = req.timezone ?? "UTC";
  const startMicros = isoToMicros(req.start);
  if (startMicros === null) throw invalid("start", "must be an ISO 8601 timestamp");
  const endMicros = req.end ? isoToMicros(req.end) : nowMicros;
  if (endMicros === null) throw invalid("end", "must be an ISO 8601 timestamp");
  if (endMicros <= startMicros) throw invalid(req.end ? "end" : "start", "end must be after start");
  const rangeSeconds = (endMicros - startMicros) / 1e6;
  if (rangeSeconds > MAX_STATS_RANGE_DAYS * DAY) {
    throw invalid(req.end ? "end" : "start", `the range may span at most ${MAX_STATS_RANGE_DAYS} days, got ${(rangeSeconds / DAY).toFixed(2)}`);
  }
  let offset: number;
  try {
    offset = zoneOffsetSeconds(timezone, startMicros / 1000);
  } catch {
    throw invalid("timezone", `unknown timezone ${JSON.stringify(timezone)}`);
  }
  let g = req.granularity ?? defaultGranularity(rangeSeconds);
  for (;;) {
    const startSeconds = Math.floor(startMicros / 1e6);
    const alignedLocal = Math.floor((startSeconds + offset) / g) * g;
    const originMicros = (alignedLocal - offset) * 1e6;
    const bucketCount = Math.ceil((endMicros - originMicros) / (g * 1e6));
    if (bucketCount <= MAX_STATS_BUCKETS) {
      return { startMicros, endMicros, granularitySeconds: g, originMicros, bucketCount, timezone };
    }
    g = Math.ceil((endMicros - originMicros) / 1e6 / MAX_STATS_BUCKETS);
  }
}

/**
 * The whole range as one bucket, for a summary (the MCP tool usage_summary): with one bucket
 * there is no bucket count to bound, so no limit on the range.
 */
export function wholeRangeWindow(startMicros: number, endMicros: number): StatsWindow {
  const granularitySeconds = Math.max(1, Math.ceil((endMicros - startMicros) / 1e6));
  return { startMicros, endMicros, granularitySeconds, originMicros: startMicros, bucketCount: 1, timezone: "UTC" };
}
