import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isoParsers, isoToMicros, microsToIso } from "../../services/times.js";

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

const isoText = fc
  .record({
    year: fc.integer({ min: 0, max: 2250 }), // beyond 2255, microseconds exceed 2^53
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 31 }),
    hour: fc.integer({ min: 0, max: 24 }),
    minute: fc.integer({ min: 0, max: 60 }),
    second: fc.integer({ min: 0, max: 60 }),
    fraction: fc.option(fc.stringMatching(/^\d{1,9}$/), { nil: null }),
    offset: fc.oneof(fc.constant("Z"), fc.tuple(fc.constantFrom("+", "-"), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([s, h, m]) => `${s}${pad(h)}:${pad(m)}`)),
  })
  .map((t) => `${t.year}-${pad(t.month)}-${pad(t.day)}T${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}${t.fraction === null ? "" : `.${t.fraction}`}${t.offset}`);

describe("ISO timestamps → microseconds", () => {
  it("the fast parser agrees with the general one wherever it answers", () => {
    fc.assert(
      fc.property(isoText, (text) => {
        const fast = isoParsers.commonIsoToMicros(text);
        if (fast !== null) expect(fast).toBe(isoParsers.generalIsoToMicros(text));
      }),
      { numRuns: 5000 },
    );
  });

  it("the general parser agrees with Date.UTC on every valid date, whatever the offset", () => {
    const valid = fc.date({ min: new Date(Date.UTC(1700, 0, 1)), max: new Date(Date.UTC(2250, 0, 1)), noInvalidDate: true });
    fc.assert(
      fc.property(valid, fc.integer({ min: 0, max: 999 }), fc.integer({ min: -14 * 60, max: 14 * 60 }), (date, extraMicros, offset) => {
        const local = new Date(date.getTime() + offset * 60_000);
        const zone = `${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
        const text = `${local.toISOString().slice(0, 23)}${pad(extraMicros, 3)}${zone}`;
        expect(isoParsers.generalIsoToMicros(text)).toBe(date.getTime() * 1000 + extraMicros);
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps microseconds, applies offsets and refuses what is not a date", () => {
    expect(isoToMicros("2026-11-21T10:00:00.123456Z")).toBe(Date.UTC(2026, 10, 21, 10) * 1000 + 123_456);
    expect(isoToMicros("2026-11-21T10:00:00.1234567Z")).toBe(Date.UTC(2026, 10, 21, 10) * 1000 + 123_456);
    expect(isoToMicros("2026-11-21T12:30:00.5+02:30")).toBe(Date.UTC(2026, 10, 21, 10) * 1000 + 500_000);
    expect(isoToMicros("2026-02-29T00:00:00Z")).toBeNull();
    expect(isoToMicros("2026-11-21")).toBe(Date.UTC(2026, 10, 21) * 1000);
    expect(isoToMicros("2026-11-21 10:00:00")).toBe(Date.UTC(2026, 10, 21, 10) * 1000);
    expect(isoToMicros("2026-11-21T10:00:00+0100")).toBe(Date.UTC(2026, 10, 21, 9) * 1000);
    expect(isoToMicros("2024-02-29T23:59:59.999999Z")).toBe(Date.UTC(2024, 1, 29, 23, 59, 59) * 1000 + 999_999);
    expect(isoToMicros("2026-13-01T00:00:00Z")).toBeNull();
    expect(isoToMicros("yesterday")).toBeNull();
  });

  it("round-trips with microsToIso", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 7_000_000_000_000_000 }), (micros) => {
        expect(isoToMicros(microsToIso(micros))).toBe(micros);
      }),
    );
  });
});
