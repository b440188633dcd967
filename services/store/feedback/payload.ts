import type { ValidationIssue } from "../../errors.js";
import { flattenCallJson } from "../calls/flatten.js";

/**
 * Feedback payload rules.
 *
 * Builtin types (Weave's names):
 * - `wandb.reaction.1`: `{emoji}` is exactly one emoji: one grapheme cluster (Intl.Segmenter)
 *   that holds an Extended_Pictographic code point, or is a flag (two regional indicators)
 *   or a keycap (`1️⃣`). Other keys are kept. The server adds `detoned`: the emoji without
 *   skin-tone modifiers, so `payload.detoned` groups 👍🏽 with 👍.
 * - `wandb.note.1`: `{note}` is a string of 1 to MAX_NOTE_CHARS (1024) code points.
 * - `wandb.runnable.<name>` (scorer results) must carry `output`; `wandb.annotation.<name>`
 *   must carry `value`.
 * Every other type is free-form. Every payload, once processed, must serialize to at most
 * MAX_PAYLOAD_BYTES (64 KiB) of UTF-8 JSON.
 */

export const REACTION_TYPE = "wandb.reaction.1";
export const NOTE_TYPE = "wandb.note.1";
export const RUNNABLE_PREFIX = "wandb.runnable.";
export const ANNOTATION_PREFIX = "wandb.annotation.";
export const MAX_NOTE_CHARS = 1024;
export const MAX_PAYLOAD_BYTES = 64 * 1024;

/** A payload as the contract parses it: a JSON object. */
export type Payload = Record<string, unknown>;

/** A payload after validation: what is stored and answered. */
export type ProcessedPayload = { ok: true; payload: Payload } | { ok: false; issues: ValidationIssue[] };

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const PICTOGRAPHIC = /\p{Extended_Pictographic}/u;
const FLAG = /^\p{Regional_Indicator}{2}$/u;
const KEYCAP = /^[0-9#*]\uFE0F?\u20E3$/u;
const SKIN_TONE = /[\u{1F3FB}-\u{1F3FF}]/gu;

/** True when `text` is exactly one emoji. */
export function isSingleEmoji(text: string): boolean {
  const graphemes = [...segmenter.segment(text)];
  if (graphemes.length !== 1) return false;
  const g = graphemes[0]!.segment;
  return PICTOGRAPHIC.test(g) || FLAG.test(g) || KEYCAP.test(g);
}

export function detone(emoji: string): string {
  return emoji.replace(SKIN_TONE, "");
}

const issue = (loc: (string | number)[], msg: string, type = "value_error"): ValidationIssue => ({ loc, msg, type });

/** Validates a payload for its type; `loc` prefixes the location of each issue (e.g. ["body"]). */
export function processPayload(feedbackType: string, payload: Payload, loc: (string | number)[]): ProcessedPayload {
  const at = (...path: string[]) => [...loc, "payload", ...path];
  const issues: ValidationIssue[] = [];
  let out: Payload = payload;
  if (feedbackType === REACTION_TYPE) {
    const emoji = payload.emoji;
    if (typeof emoji !== "string") issues.push(issue(at("emoji"), "emoji must be a string", "missing"));
    else if (!isSingleEmoji(emoji)) issues.push(issue(at("emoji"), "emoji must be exactly one emoji"));
    else out = { ...payload, detoned: detone(emoji) };
  } else if (feedbackType === NOTE_TYPE) {
    const note = payload.note;
    if (typeof note !== "string") issues.push(issue(at("note"), "note must be a string", "missing"));
    else {
      const chars = [...note].length;
      if (chars === 0) issues.push(issue(at("note"), "note must not be empty"));
      if (chars > MAX_NOTE_CHARS) issues.push(issue(at("note"), `note is longer than ${MAX_NOTE_CHARS} characters (${chars})`));
    }
  } else if (feedbackType.startsWith(RUNNABLE_PREFIX) && !Object.hasOwn(payload, "output")) {
    issues.push(issue(at("output"), `${RUNNABLE_PREFIX}* feedback carries its result in payload.output`, "missing"));
  } else if (feedbackType.startsWith(ANNOTATION_PREFIX) && !Object.hasOwn(payload, "value")) {
    issues.push(issue(at("value"), `${ANNOTATION_PREFIX}* feedback carries its value in payload.value`, "missing"));
  }
  if (issues.length > 0) return { ok: false, issues };
  const bytes = Buffer.byteLength(JSON.stringify(out));
  if (bytes > MAX_PAYLOAD_BYTES) {
    return { ok: false, issues: [issue(at(), `payload is ${bytes} bytes of JSON, more than ${MAX_PAYLOAD_BYTES}`)] };
  }
  return { ok: true, payload: out };
}

/**
 * The payload's leaves for `payload_paths`/`payload_values`: the calls flattening (same
 * leaf encoding and bounds, see store/calls/flatten.ts) of the payload as one part, renamed from
 * that part's name to `payload`.
 */
export function flattenPayload(payload: Payload): { payload_paths: string[]; payload_values: string[] } {
  const flat = flattenCallJson({ summary: payload, attributes: undefined, inputs: undefined, output: undefined });
  return {
    payload_paths: flat.json_paths.map((p) => (p === "summary" ? "payload" : `payload${p.slice("summary".length)}`)),
    payload_values: flat.json_values,
  };
}
