/**
 * Times. Stored and carried as integer microseconds since the epoch (UTC); written as ISO
 * 8601 with microseconds, as Weave writes them.
 */

export function nowMicros(): number {
  return Date.now() * 1000;
}

/** A source of "now" for code that writes versions or timestamps (tests pass their own). */
export interface Clock {
  nowMicros(): number;
}

/** The system clock, never answering the same microsecond twice (versions written in one ms stay ordered). */
export class MonotonicClock implements Clock {
  private last = 0;
  nowMicros(): number {
    this.last = Math.max(this.last + 1, nowMicros());
    return this.last;
  }
}

/** Microseconds since the epoch → ISO 8601 with microseconds (`2026-11-21T10:00:00.123456Z`). */
export function microsToIso(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const rest = String(Math.round(micros - millis * 1000)).padStart(3, "0");
  return new Date(millis).toISOString().replace("Z", `${rest}Z`);
}

/**
 * ISO 8601 → microseconds, or null when the text is not a valid ISO 8601 datetime. Accepts
 * a date alone, `T` or a space before the time, a fraction of any length (kept to the
 * microsecond), `Z`, `±hh`, `±hhmm` or `±hh:mm`; no zone means UTC (never the machine's).
 */
export function isoToMicros(text: string): number | null {
  return commonIsoToMicros(text) ?? generalIsoToMicros(text);
}

const ZERO = 48;

/** The digits of text[from, from + count) as a number; -1 if any is not a digit. */
function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const d = text.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The form every client sends (`2026-11-21T10:00:00.123456Z`, or with `±hh:mm`), read
 * character by character: ingest reads two of these per call. Null when the text is of
 * another form, or a date that needs the calendar's edge rules (day > 28).
 */
function commonIsoToMicros(text: string): number | null {
  if (text.length < 20 || text[4] !== "-" || text[7] !== "-" || text[10] !== "T" || text[13] !== ":" || text[16] !== ":") return null;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (year < 1000 || month < 1 || month > 12 || day < 1 || day > 28 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return null;
  let at = 19;
  let fraction = 0;
  if (text[at] === ".") {
    const first = ++at;
    while (at < text.length && text.charCodeAt(at) >= ZERO && text.charCodeAt(at) <= ZERO + 9) at++;
    const count = at - first;
    if (count === 0 || count > 9) return null;
    fraction = digits(text, first, Math.min(count, 6)) * 10 ** (6 - Math.min(count, 6));
  }
  let offsetMinutes = 0;
  if (text[at] === "Z" && at === text.length - 1) {
    offsetMinutes = 0;
  } else if ((text[at] === "+" || text[at] === "-") && at === text.length - 6 && text[at + 3] === ":") {
    const offsetHours = digits(text, at + 1, 2);
    const offsetMins = digits(text, at + 4, 2);
    if (offsetHours < 0 || offsetHours > 23 || offsetMins < 0 || offsetMins > 59) return null;
    offsetMinutes = (text[at] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  } else {
    return null;
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60;
  return seconds * 1_000_000 + fraction;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

/** Every other accepted form, each field checked against the calendar. */
function generalIsoToMicros(text: string): number | null {
  const m = ISO_8601.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = "0", mi = "0", s = "0", frac = "", zone = "Z"] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const monthDays = month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1];
  if (monthDays === undefined || day < 1 || day > monthDays || hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (zone !== "Z" && zone !== "z") {
    const sign = zone.startsWith("-") ? -1 : 1;
    const zoneDigits = zone.slice(1).replace(":", "");
    const zoneHours = Number(zoneDigits.slice(0, 2));
    const zoneMinutes = Number(zoneDigits.slice(2) || "0");
    if (zoneHours > 23 || zoneMinutes > 59) return null;
    offsetMinutes = sign * (zoneHours * 60 + zoneMinutes);
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60;
  return seconds * 1_000_000 + Number(frac.padEnd(6, "0").slice(0, 6));
}

/** Exposed for the test that holds the fast parser to the general one. */
export const isoParsers = { commonIsoToMicros, generalIsoToMicros };
