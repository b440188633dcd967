import { describe, expect, it } from "vitest";
import { ValidationError } from "../../services/errors.js";
import { defaultGranularity, resolveStatsWindow, zoneOffsetSeconds } from "../../services/store/statsWindow.js";

/** One test per rule of the stats window. */

const T = Date.UTC(2025, 0, 15, 10, 20, 30) * 1000;
const H = 3600e6;

describe("resolveStatsWindow", () => {
  it("picks the default granularity from the range", () => {
    expect([2 * 3600, 2 * 3600 + 1, 12 * 3600 + 1, 3 * 86400 + 1, 14 * 86400 + 1].map(defaultGranularity)).toEqual([300, 3600, 21600, 43200, 86400]);
  });

  it("aligns the first bucket to the granularity in UTC and counts buckets to the end", () => {
    const w = resolveStatsWindow({ start: "2025-01-15T10:20:30Z", end: "2025-01-15T13:00:00Z", granularity: 3600 }, 0);
    expect(w).toEqual({ startMicros: T, endMicros: T + 2 * H + 39.5 * 60e6, granularitySeconds: 3600, originMicros: Date.UTC(2025, 0, 15, 10) * 1000, bucketCount: 3, timezone: "UTC" });
  });

  it("aligns in the timezone's wall clock (India is UTC+5:30)", () => {
    const w = resolveStatsWindow({ start: "2025-01-15T10:20:30Z", end: "2025-01-15T12:00:00Z", granularity: 3600, timezone: "Asia/Kolkata" }, 0);
    expect(w.originMicros).toBe(Date.UTC(2025, 0, 15, 9, 30) * 1000);
    expect(zoneOffsetSeconds("America/New_York", Date.UTC(2025, 6, 1))).toBe(-4 * 3600);
    expect(zoneOffsetSeconds("UTC", Date.UTC(2025, 6, 1))).toBe(0);
  });

  it("defaults the end to now", () => {
    expect(resolveStatsWindow({ start: "2025-01-15T10:20:30Z" }, T + H).endMicros).toBe(T + H);
  });

  it("raises the granularity past 10,000 buckets", () => {
    const w = resolveStatsWindow({ start: "2025-01-01T00:00:00Z", end: "2025-01-31T00:00:00Z", granularity: 60 }, 0);
    expect(w.granularitySeconds).toBe(260);
    expect(w.bucketCount).toBeLessThanOrEqual(10_000);
  });

  it("refuses more than 31 days, an empty range and an unknown zone, naming the field", () => {
    const loc = (req: Parameters<typeof resolveStatsWindow>[0]) => {
      try {
        resolveStatsWindow(req, Date.UTC(2025, 5, 1) * 1000);
      } catch (err) {
        return (err as ValidationError).detail[0]!.loc;
      }
      return null;
    };
    expect(loc({ start: "2025-01-01T00:00:00Z", end: "2025-02-01T00:00:00Z" })).toBeNull();
    expect(loc({ start: "2025-01-01T00:00:00Z", end: "2025-02-01T00:00:00.000001Z" })).toEqual(["body", "end"]);
    expect(loc({ start: "2025-01-01T00:00:00Z" })).toEqual(["body", "start"]);
    expect(loc({ start: "2025-01-01T00:00:00Z", end: "2025-01-01T00:00:00Z" })).toEqual(["body", "end"]);
    expect(loc({ start: "2025-05-31T00:00:00Z", timezone: "Nowhere/City" })).toEqual(["body", "timezone"]);
  });
});
