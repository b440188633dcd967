import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";

/**
 * Every tool answer is compact JSON of at most MAX_ANSWER_BYTES, so that an agent's context
 * is not flooded by one trace. A tool builds its answer through a `Fit`, which cuts what
 * comes from the user's data (inputs, outputs, attributes, exceptions) and the lists it
 * answers; `boundedAnswer` builds it again with ever tighter cuts until the text fits, and
 * says in `note` what was cut. Cut values carry their mark (`…[cut: …]`) where they were cut.
 * Docs: docs/clients.md#mcp-server.
 */
export const MAX_ANSWER_BYTES = 50 * 1024;

/** How far a user value is cut: characters of a string, entries of a list or object, levels of nesting. */
interface Cuts {
  readonly chars: number;
  readonly entries: number;
  readonly depth: number;
}

/** From generous (whole values, but for nesting no model reads) to tight; `null`: user values are left out. */
const LEVELS: readonly (Cuts | null)[] = [
  { chars: Infinity, entries: Infinity, depth: 64 },
  { chars: 4000, entries: 100, depth: 12 },
  { chars: 1000, entries: 30, depth: 8 },
  { chars: 250, entries: 10, depth: 5 },
  { chars: 80, entries: 4, depth: 3 },
  null,
];
/** Then the answer's own lists are shortened: at most this many items, halved until it fits. */
const FIRST_ITEMS_CAP = 512;
/** A preview of a value: its compact JSON text cut to this many characters. */
const PREVIEW_CHARS = 200;

export class Fit {
  private valuesCut = false;
  private readonly shortened: string[] = [];

  constructor(
    private readonly cuts: Cuts | null,
    /** The most items any list of the answer shows. */
    readonly items: number,
  ) {}

  /** A user value, cut to this fit. */
  value(value: JsonValue): JsonValue {
    if (this.cuts === null) return this.leftOut(value);
    return this.cut(value, this.cuts.depth);
  }

  /** A user text (an exception), cut to this fit's characters. */
  text(text: string): string {
    return this.cutString(text, this.cuts?.chars ?? PREVIEW_CHARS / 2);
  }

  /** A value's compact JSON text, cut short: what a list of calls shows of inputs and output. */
  preview(value: JsonValue): string | null {
    if (value === null || (isJsonObject(value) && Object.keys(value).length === 0)) return null;
    if (this.cuts === null) return this.leftOut(value);
    const chars = Math.min(PREVIEW_CHARS, this.cuts.chars);
    // A preview is short by design, marked where cut but not a cut of the answer's. Strings
    // inside are cut first only to spare writing out a huge value.
    const text = JSON.stringify(new Fit({ chars, entries: chars, depth: 4 }, this.items).value(value));
    return text.length <= chars ? text : `${text.slice(0, chars)}…[cut]`;
  }

  /** The first items of an answer's list that this fit shows; `what` names them in the note when some are left out. */
  list<T>(items: readonly T[], what: string): T[] {
    if (items.length <= this.items) return [...items];
    this.shortened.push(`${items.length - this.items} of ${items.length} ${what} left out`);
    return items.slice(0, this.items);
  }

  /** Records that a part of the answer was shortened (a tree cut below some calls). */
  shorten(note: string): void {
    this.shortened.push(note);
  }

  /** What was cut, for the answer's `note`; null when nothing was. */
  note(): string | null {
    const parts: string[] = [];
    if (this.cuts === null && this.valuesCut) parts.push("inputs, outputs and other values left out");
    else if (this.valuesCut) {
      const { chars, entries, depth } = this.cuts!;
      const past = [
        ...(Number.isFinite(chars) ? [`strings past ${chars} characters`] : []),
        ...(Number.isFinite(entries) ? [`lists and objects past ${entries} entries`] : []),
        `nesting past ${depth} levels`,
      ];
      parts.push(`values cut where marked …[cut: …] or [left out: …] (${past.join(", ")})`);
    }
    parts.push(...this.shortened);
    if (parts.length === 0) return null;
    return `Shortened to stay under ${MAX_ANSWER_BYTES / 1024} KB: ${parts.join("; ")}. Ask for less (one call with get_call, fewer calls, a narrower query) to see more.`;
  }

  private leftOut(value: JsonValue): string {
    this.valuesCut = true;
    return `[left out: ${sizeOf(value)}]`;
  }

  private cutString(text: string, chars: number): string {
    if (text.length <= chars) return text;
    this.valuesCut = true;
    return `${text.slice(0, chars)}…[cut: ${text.length} characters in all]`;
  }

  private cut(value: JsonValue, depth: number): JsonValue {
    if (typeof value === "string") return this.cutString(value, this.cuts!.chars);
    if (value === null || typeof value !== "object") return value;
    if (depth <= 0) return this.leftOut(value);
    const { entries } = this.cuts!;
    if (Array.isArray(value)) {
      const kept = value.slice(0, entries).map((v) => this.cut(v, depth - 1));
      if (value.length > entries) {
        this.valuesCut = true;
        kept.push(`…[cut: ${value.length - entries} more items]`);
      }
      return kept;
    }
    const keys = Object.keys(value);
    const out: JsonObject = {};
    for (const key of keys.slice(0, entries)) out[key] = this.cut(value[key] ?? null, depth - 1);
    if (keys.length > entries) {
      this.valuesCut = true;
      out["…"] = `[cut: ${keys.length - entries} more keys]`;
    }
    return out;
  }
}

const counted = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;

function sizeOf(value: JsonValue): string {
  if (Array.isArray(value)) return `a list of ${counted(value.length, "item")}`;
  if (isJsonObject(value)) return `an object of ${counted(Object.keys(value).length, "key")}`;
  if (typeof value === "string") return counted(value.length, "character");
  return "a value";
}

const fits = (text: string) => Buffer.byteLength(text, "utf8") <= MAX_ANSWER_BYTES;

/**
 * The answer `build` makes, as compact JSON under MAX_ANSWER_BYTES: built with the most
 * generous cuts that fit, then with ever fewer list items; a `note` says what was cut.
 */
export function boundedAnswer(build: (fit: Fit) => JsonObject): string {
  const attempt = (fit: Fit): string | null => {
    const answer = build(fit);
    const note = fit.note();
    const text = JSON.stringify(note === null ? answer : { ...answer, note });
    return fits(text) ? text : null;
  };
  for (const cuts of LEVELS) {
    const text = attempt(new Fit(cuts, Infinity));
    if (text !== null) return text;
  }
  for (let items = FIRST_ITEMS_CAP; items >= 1; items = Math.floor(items / 2)) {
    const text = attempt(new Fit(null, items));
    if (text !== null) return text;
  }
  return JSON.stringify({ note: `The answer does not fit in ${MAX_ANSWER_BYTES / 1024} KB even cut down; ask for less.` });
}
