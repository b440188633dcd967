import type { Call, CallStatus } from "./types";

export const opName = (call: Pick<Call, "op_name" | "display_name">): string => {
  if (call.display_name) return call.display_name;
  const m = /^weave:\/\/\/[^/]+\/[^/]+\/op\/([^:]+):/.exec(call.op_name);
  return m?.[1] ? decodeURIComponent(m[1]) : call.op_name;
};

export const statusOf = (call: Call): CallStatus => {
  const s = call.summary?.weave?.status;
  if (s) return s;
  if (!call.ended_at) return "running";
  return call.exception ? "error" : "success";
};

export const STATUS_LABEL: Record<CallStatus, string> = {
  running: "running",
  success: "success",
  error: "error",
  descendant_error: "descendant error",
};

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export const latencyMs = (call: Call): number | null => {
  const l = call.summary?.weave?.latency_ms;
  if (typeof l === "number") return l;
  if (!call.ended_at) return null;
  return Date.parse(call.ended_at) - Date.parse(call.started_at);
};

export const formatCost = (usd: number | null | undefined): string => (usd === null || usd === undefined ? "" : usd === 0 ? "$0" : usd < 0.01 ? `$${usd.toPrecision(2)}` : `$${usd.toFixed(2)}`);
export const formatNumber = (n: number | null | undefined): string => (n === null || n === undefined ? "" : n.toLocaleString("en-US"));

const BYTE_UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes in binary units: `512 B`, `1.5 KiB`, `42 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${BYTE_UNITS[unit]}`;
}
