import { createHash } from "node:crypto";
import { InvalidWeightsError } from "./errors.js";
import { parameterShapes, type TransformerConfig } from "./transformer.js";

/**
 * The weights file: a small self-describing binary.
 *
 *   "THLM" | u32 version (1) | u32 header length | header JSON (UTF-8, space-padded to 4 bytes)
 *   | float32 little-endian data of every tensor in header order | SHA-256 of all bytes before it
 *
 * The header holds the model config, the tensors' names and shapes, and free-form `meta`
 * (what the weights were trained on). Reading checks all of it and refuses anything else.
 */
const MAGIC = "THLM";
const VERSION = 1;
const PREFIX = 12;
const DIGEST = 32;

export interface WeightsHeader {
  readonly format: "tracehouse-bytelm";
  readonly config: TransformerConfig;
  readonly tensors: readonly { readonly name: string; readonly shape: readonly number[] }[];
  readonly meta: Readonly<Record<string, string | number>>;
}

export interface ModelWeights {
  readonly config: TransformerConfig;
  readonly tensors: ReadonlyMap<string, Float32Array>;
  readonly meta: Readonly<Record<string, string | number>>;
}

const size = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

export function encodeWeights(weights: ModelWeights): Uint8Array {
  const tensors = parameterShapes(weights.config).map(([name, shape]) => {
    const values = weights.tensors.get(name);
    if (!values || values.length !== size(shape)) throw new Error(`tensor ${name} is missing or has the wrong size`);
    return { name, shape, values };
  });
  const header: WeightsHeader = {
    format: "tracehouse-bytelm",
    config: weights.config,
    tensors: tensors.map(({ name, shape }) => ({ name, shape })),
    meta: weights.meta,
  };
  let json = Buffer.from(JSON.stringify(header), "utf8");
  if (json.length % 4 !== 0) json = Buffer.concat([json, Buffer.alloc(4 - (json.length % 4), " ")]);
  const dataBytes = tensors.reduce((n, t) => n + t.values.length * 4, 0);
  const out = Buffer.alloc(PREFIX + json.length + dataBytes + DIGEST);
  out.write(MAGIC, 0, "latin1");
  out.writeUInt32LE(VERSION, 4);
  out.writeUInt32LE(json.length, 8);
  json.copy(out, PREFIX);
  let offset = PREFIX + json.length;
  for (const { values } of tensors) {
    for (let i = 0; i < values.length; i++, offset += 4) out.writeFloatLE(values[i] as number, offset);
  }
  createHash("sha256").update(out.subarray(0, offset)).digest().copy(out, offset);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

function refuse(reason: string): never {
  throw new InvalidWeightsError(`not usable model weights: ${reason}`);
}

function readHeader(bytes: Buffer): WeightsHeader {
  if (bytes.length < PREFIX + DIGEST || bytes.toString("latin1", 0, 4) !== MAGIC) refuse("no THLM signature at the start");
  const version = bytes.readUInt32LE(4);
  if (version !== VERSION) refuse(`format version ${version}, this build reads version ${VERSION}`);
  const headerLength = bytes.readUInt32LE(8);
  if (PREFIX + headerLength + DIGEST > bytes.length) refuse("truncated header");
  const body = bytes.subarray(0, bytes.length - DIGEST);
  const digest = createHash("sha256").update(body).digest();
  if (!digest.equals(bytes.subarray(bytes.length - DIGEST))) refuse("checksum mismatch (corrupt or truncated)");
  try {
    return JSON.parse(bytes.toString("utf8", PREFIX, PREFIX + headerLength)) as WeightsHeader;
  } catch {
    return refuse("header is not JSON");
  }
}

function checkLayout(header: WeightsHeader, dataBytes: number): void {
  if (header.format !== "tracehouse-bytelm" || typeof header.config !== "object") refuse("unknown header format");
  const expected = parameterShapes(header.config);
  const same = expected.length === header.tensors.length &&
    expected.every(([name, shape], i) => header.tensors[i]?.name === name && JSON.stringify(header.tensors[i]?.shape) === JSON.stringify(shape));
  if (!same) refuse("tensor names or shapes do not match the config");
  if (expected.reduce((n, [, shape]) => n + size(shape) * 4, 0) !== dataBytes) refuse("data size does not match the tensors");
}

export function decodeWeights(weights: Uint8Array): ModelWeights {
  const bytes = Buffer.from(weights.buffer, weights.byteOffset, weights.byteLength);
  const header = readHeader(bytes);
  const dataStart = PREFIX + bytes.readUInt32LE(8);
  checkLayout(header, bytes.length - DIGEST - dataStart);
  const tensors = new Map<string, Float32Array>();
  let offset = dataStart;
  for (const { name, shape } of header.tensors) {
    const values = new Float32Array(size(shape));
    for (let i = 0; i < values.length; i++, offset += 4) values[i] = bytes.readFloatLE(offset);
    tensors.set(name, values);
  }
  return { config: header.config, tensors, meta: header.meta ?? {} };
}
