import { crc32 } from "./crc32.js";

/**
 * The frame of one record in a segment file: a 4-byte length of the payload, a 4-byte
 * CRC-32 of the length bytes and the payload (both little-endian), then the payload. The
 * checksum covers the length too, so a length damaged into another plausible value is
 * caught. A crash mid-append leaves a record that is short of its length (torn) or whose
 * bytes do not match the checksum (the file grew but not all its pages reached the disk,
 * e.g. zeros): either way it is not a record, and nothing after it is read.
 */
export const HEADER_BYTES = 8;
/** Larger than any request can make (bodies are limited to tens of MiB); a length beyond it is damage. */
export const MAX_PAYLOAD_BYTES = 1 << 30;

function checksum(frame: Buffer, at: number, length: number): number {
  return crc32(frame.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length), crc32(frame.subarray(at, at + 4)));
}

/** The payloads framed one after another, as one buffer to write. */
export function frameAll(payloads: readonly Uint8Array[]): Buffer {
  const total = payloads.reduce((n, p) => n + HEADER_BYTES + p.length, 0);
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const payload of payloads) {
    if (payload.length === 0 || payload.length > MAX_PAYLOAD_BYTES) throw new RangeError(`record payload of ${payload.length} bytes`);
    out.writeUInt32LE(payload.length, at);
    out.set(payload, at + HEADER_BYTES);
    out.writeUInt32LE(checksum(out, at, payload.length), at + 4);
    at += HEADER_BYTES + payload.length;
  }
  return out;
}

export const framedSize = (payload: Uint8Array): number => HEADER_BYTES + payload.length;

/**
 * What lies at `at` in `chunk`, which holds the file's bytes from some offset on; `fileLeft`
 * is how many bytes the file has from `at` on (at least what the chunk holds).
 * - `record`: a whole, intact record of `length` payload bytes;
 * - `more`: the record goes on past the chunk but fits in the file: read further;
 * - `end`: nothing is left in the file;
 * - `torn`: the file ends inside the record;
 * - `damaged`: an impossible length, or bytes that do not match the checksum.
 */
export type Framing =
  | { readonly kind: "record"; readonly length: number }
  | { readonly kind: "more"; readonly need: number }
  | { readonly kind: "end" }
  | { readonly kind: "torn" }
  | { readonly kind: "damaged" };

export function framingAt(chunk: Buffer, at: number, fileLeft: number): Framing {
  if (fileLeft === 0) return { kind: "end" };
  if (fileLeft < HEADER_BYTES) return { kind: "torn" };
  if (chunk.length - at < HEADER_BYTES) return { kind: "more", need: HEADER_BYTES };
  const length = chunk.readUInt32LE(at);
  if (length === 0 || length > MAX_PAYLOAD_BYTES) return { kind: "damaged" };
  if (fileLeft < HEADER_BYTES + length) return { kind: "torn" };
  if (chunk.length - at < HEADER_BYTES + length) return { kind: "more", need: HEADER_BYTES + length };
  return checksum(chunk, at, length) === chunk.readUInt32LE(at + 4) ? { kind: "record", length } : { kind: "damaged" };
}
