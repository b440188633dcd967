import { createHash, randomBytes, randomUUID } from "node:crypto";

/** A UUIDv7 (time-ordered) string, as the server generates ids for calls, feedback and prices. */
export function uuidv7(nowMs = Date.now()): string {
  return uuidv7Layout(randomBytes(16), nowMs);
}

/**
 * A UUIDv7 for `ms` whose other bits come from the SHA-256 of `seed`: the same seed and time
 * give the same id (the ids of a retried request, derived from its retry id).
 */
export function derivedUuidv7(ms: number, seed: string): string {
  return uuidv7Layout(createHash("sha256").update(seed).digest().subarray(0, 16), ms);
}

function uuidv7Layout(bytes: Buffer, ms: number): string {
  bytes.writeUIntBE(Math.max(0, Math.min(Math.floor(ms), 2 ** 48 - 1)), 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A random UUIDv4, for ids that need no order (query ids, claims). */
export function uuid4(): string {
  return randomUUID();
}
