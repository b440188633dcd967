import { deflateSync } from "node:zlib";
import { tableCrc32 } from "../services/queue/durableLog/storage/crc32.js";

/**
 * A tiny PNG writer for the benchmarks' charts (no image package): an RGB canvas, lines,
 * and an encoder of 8-bit truecolor PNG (scanlines with filter 0, one zlib IDAT chunk,
 * CRC-32 per chunk, as the PNG specification lays out).
 */
export type Rgb = readonly [number, number, number];

export class Canvas {
  readonly pixels: Uint8Array;

  constructor(readonly width: number, readonly height: number, background: Rgb = [255, 255, 255]) {
    this.pixels = new Uint8Array(width * height * 3);
    for (let i = 0; i < width * height; i++) this.pixels.set(background, i * 3);
  }

  set(x: number, y: number, color: Rgb): void {
    const px = Math.round(x);
    const py = Math.round(y);
    if (px < 0 || py < 0 || px >= this.width || py >= this.height) return;
    this.pixels.set(color, (py * this.width + px) * 3);
  }

  /** A line `thickness` pixels wide (a square brush stepped along it). */
  line(x0: number, y0: number, x1: number, y1: number, color: Rgb, thickness = 1): void {
    const steps = Math.max(1, Math.ceil(Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0))));
    const half = Math.floor(thickness / 2);
    for (let s = 0; s <= steps; s++) {
      const x = x0 + ((x1 - x0) * s) / steps;
      const y = y0 + ((y1 - y0) * s) / steps;
      for (let dx = -half; dx <= half; dx++) for (let dy = -half; dy <= half; dy++) this.set(x + dx, y + dy, color);
    }
  }

  png(): Buffer {
    return encodePng(this.width, this.height, this.pixels);
  }
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(tableCrc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/** 8-bit RGB pixels, row by row, as a PNG file. */
export function encodePng(width: number, height: number, rgb: Uint8Array): Buffer {
  if (rgb.length !== width * height * 3) throw new Error("pixel buffer does not match the size");
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolor
  // compression, filter and interlace methods: 0
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    rows[y * (width * 3 + 1)] = 0; // filter: none
    rows.set(rgb.subarray(y * width * 3, (y + 1) * width * 3), y * (width * 3 + 1) + 1);
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", header), chunk("IDAT", deflateSync(rows)), chunk("IEND", Buffer.alloc(0))]);
}

export interface Series {
  readonly color: Rgb;
  readonly points: readonly (readonly [number, number])[];
}

/**
 * A line chart of series over a shared x range, y from 0 to the largest value (rounded up
 * to `yStep`), with a light grid line every `yStep` and every `xStep`. No text: the
 * benchmark prints the numbers and says what the colors are.
 */
export function lineChart(series: readonly Series[], options: { width: number; height: number; xStep: number; yStep: number }): Buffer {
  const { width, height } = options;
  const margin = 10;
  const canvas = new Canvas(width, height);
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const xMax = Math.max(1, ...xs);
  const yMax = Math.max(options.yStep, Math.ceil(Math.max(0, ...ys) / options.yStep) * options.yStep);
  const px = (x: number) => margin + (x / xMax) * (width - 2 * margin);
  const py = (y: number) => height - margin - (y / yMax) * (height - 2 * margin);
  const grid: Rgb = [225, 225, 225];
  for (let y = 0; y <= yMax; y += options.yStep) canvas.line(px(0), py(y), px(xMax), py(y), grid);
  for (let x = 0; x <= xMax; x += options.xStep) canvas.line(px(x), py(0), px(x), py(yMax), grid);
  canvas.line(px(0), py(0), px(xMax), py(0), [0, 0, 0]);
  canvas.line(px(0), py(0), px(0), py(yMax), [0, 0, 0]);
  for (const s of series) {
    for (let i = 1; i < s.points.length; i++) {
      const [a, b] = [s.points[i - 1]!, s.points[i]!];
      canvas.line(px(a[0]), py(a[1]), px(b[0]), py(b[1]), s.color, 2);
    }
  }
  return canvas.png();
}
