import * as zlib from "node:zlib";

/**
 * CRC-32 (IEEE 802.3, the polynomial of zlib and gzip) of `data`, continuing from `previous`
 * (the CRC of the bytes before it). Native through zlib.crc32 from Node 20.15 on; a
 * table-driven version of the same function for older releases.
 */
export type Crc32 = (data: Uint8Array, previous?: number) => number;

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export const tableCrc32: Crc32 = (data, previous = 0) => {
  let crc = (previous ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) crc = TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
};

const native = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

export const crc32: Crc32 = native ? (data, previous = 0) => native(data, previous) >>> 0 : tableCrc32;
