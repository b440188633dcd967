import { ClientError } from "../errors.js";

/** The image formats /image/create accepts, recognised by their first bytes (never by a declared type). */
export type ImageFormat = "png" | "jpeg" | "gif" | "webp";

/** Enough leading bytes to tell every accepted format (WebP needs 12). */
export const IMAGE_SIGNATURE_BYTES = 12;

const ascii = (head: Uint8Array, at: number, text: string): boolean =>
  head.length >= at + text.length && [...text].every((c, i) => head[at + i] === c.charCodeAt(0));

/** The format the leading bytes announce, or null when they announce none of the accepted ones. */
export function imageFormatOf(head: Uint8Array): ImageFormat | null {
  if (head.length >= 8 && head[0] === 0x89 && ascii(head, 1, "PNG\r\n\x1a\n")) return "png";
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "jpeg";
  if (ascii(head, 0, "GIF87a") || ascii(head, 0, "GIF89a")) return "gif";
  if (ascii(head, 0, "RIFF") && ascii(head, 8, "WEBP")) return "webp";
  return null;
}

/** The file name Weave's image serializer gives each format inside an image object's `files`. */
export const IMAGE_FILE_NAMES: Readonly<Record<ImageFormat, string>> = { png: "image.png", jpeg: "image.jpg", gif: "image.gif", webp: "image.webp" };

/**
 * Passes content through once its leading bytes show an accepted image format (told to
 * `found`); otherwise throws 415 before yielding anything, so nothing of it is stored.
 */
export async function* screenImage(content: AsyncIterable<Uint8Array>, found: (format: ImageFormat) => void): AsyncGenerator<Uint8Array> {
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let screened = false;
  for await (const piece of content) {
    if (screened) {
      yield piece;
      continue;
    }
    head.push(piece);
    headBytes += piece.length;
    if (headBytes < IMAGE_SIGNATURE_BYTES) continue;
    found(check(Buffer.concat(head)));
    screened = true;
    yield* head;
  }
  if (screened) return;
  found(check(Buffer.concat(head)));
  yield* head;
}

function check(head: Uint8Array): ImageFormat {
  const format = imageFormatOf(head);
  if (format) return format;
  throw new ClientError(415, "the uploaded file is not a PNG, JPEG, GIF or WebP image (judged by its first bytes); nothing was stored");
}
