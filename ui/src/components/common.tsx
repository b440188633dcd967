import type { ReactNode } from "react";
import type { CallStatus } from "../types";
import { STATUS_LABEL } from "../format";

export function ErrorBox({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      {error}
    </div>
  );
}

export function Loading({ when, children }: { when: boolean; children?: ReactNode }) {
  return when ? <div className="muted loading">{children ?? "Loading…"}</div> : null;
}

export function StatusBadge({ status }: { status: CallStatus }) {
  return <span className={`status status-${status}`}>{STATUS_LABEL[status]}</span>;
}

export function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="section">
      <h3>{title}</h3>
      {children}
    </section>
  );
}
