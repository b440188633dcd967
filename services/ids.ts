import { randomBytes, randomUUID } from "node:crypto";

/** A UUIDv7 (time-ordered) string, as the server generates ids for calls, feedback and prices. */
export function uuidv7(nowMs = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(nowMs, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A random UUIDv4, for ids that need no order (query ids, claims). */
export function uuid4(): string {
  return randomUUID();
}
