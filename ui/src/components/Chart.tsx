import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface Series {
  readonly label: string;
  readonly values: (number | null)[];
  readonly color: string;
}

/** A uPlot time series chart over `times` (seconds since the epoch). */
/** `bars`: counts per bucket drawn as bars, later series over earlier ones (errors over calls); else lines. */
export function TimeChart({ title, times, series, unit, bars = false }: { title: string; times: number[]; series: Series[]; unit?: string; bars?: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      title,
      width: Math.max(300, el.clientWidth),
      height: 220,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: bars ? 1 : 2, spanGaps: false, ...(bars ? { fill: `${s.color}99`, paths: uPlot.paths.bars!({ size: [0.6, 60] }) } : {}), value: (_u: uPlot, v: number | null) => (v === null ? "—" : `${+v.toFixed(4)}${unit ?? ""}`) }))],
      axes: [{}, { size: 60 }],
    };
    const plot = new uPlot(opts, [times, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(300, el.clientWidth), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [title, times, series, unit, bars]);
  return <div className="chart" ref={box} />;
}

export const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];
