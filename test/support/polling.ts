/**
 * How long to poll and how often. `what` names the awaited condition in the error of `until`:
 * a text, or a function read once the time is up (to name what was last seen).
 */
export interface PollOptions {
  readonly timeoutMs?: number;
  readonly everyMs?: number;
  readonly what?: string | (() => string);
}

type Falsy = null | undefined | false;

/** What `until` calls: answers the awaited value, or nothing yet. */
export type Probe<T> = () => Promise<T | Falsy> | T | Falsy;

const TIMEOUT_MS = 30_000;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Reads until `done` holds of the value read, or the time is up; answers the last value (the caller asserts on it). */
export async function untilRead<T>(read: () => Promise<T> | T, done: (value: T) => boolean, { timeoutMs = TIMEOUT_MS, everyMs = 250 }: PollOptions = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(everyMs);
  }
}

/** Probes until the probe answers a truthy value, and answers that; throws, naming `what`, once the time is up. */
export async function until<T>(probe: Probe<T>, options: PollOptions = {}): Promise<T> {
  const value = await untilRead(probe, Boolean, options);
  if (value) return value;
  const what = typeof options.what === "function" ? options.what() : options.what;
  throw new Error(`timed out waiting for ${what ?? "the condition"} (${options.timeoutMs ?? TIMEOUT_MS} ms)`);
}
