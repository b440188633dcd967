/** Reads until `done` holds of the value read, or the time is up; answers the last value (the caller asserts on it). */
export async function untilRead<T>(read: () => Promise<T>, done: (value: T) => boolean, { timeoutMs = 30_000, everyMs = 250 } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
