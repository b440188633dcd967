import { nowMicros } from "../../times.js";
import type { ParamBuilder } from "../sql.js";
import type { ProjectSettingsRepository } from "./settingsRepository.js";

const MICROS_PER_DAY = 86_400_000_000;
/** How old this process's copy of the projects' retentions may get (a change elsewhere shows within it). */
export const RETENTION_REFRESH_MS = 30_000;

/** The first `started_at` a project with this retention keeps, now. */
export const retentionCutoff = (days: number, now: number = nowMicros()): number => now - days * MICROS_PER_DAY;

/**
 * The one condition every read of a project's calls, and of what derives from them, adds:
 * rows from the cutoff on (none without a retention).
 */
export function retainedSince(column: string, cutoff: number | null | undefined, pb: ParamBuilder): string[] {
  return cutoff === null || cutoff === undefined ? [] : [`${column} >= ${pb.int(cutoff)}`];
}

/** `retainedSince` as a clause to append to a WHERE: ` AND <condition>`, or nothing. */
export const andRetainedSince = (column: string, cutoff: number | null | undefined, pb: ParamBuilder): string =>
  retainedSince(column, cutoff, pb).map((c) => ` AND ${c}`).join("");

/** The ids of the project's calls that started before the cutoff (placeholders given), from `call_index`. */
export const expiredCallIds = (project: string, cutoff: string, callIndex = "call_index"): string =>
  `(SELECT id FROM ${callIndex} WHERE project_id = ${project} AND started_at < ${cutoff})`;

/** The condition a read of a project's feedback adds: none on a call past the retention. */
export function retainedFeedback(project: string, cutoff: number | null | undefined, pb: ParamBuilder): string[] {
  return cutoff === null || cutoff === undefined ? [] : [`call_id NOT IN ${expiredCallIds(project, pb.int(cutoff))}`];
}

/**
 * Each project's retention: its own `retention_days`, else the server's default
 * (`RETENTION_DAYS`, null = keep everything). The projects' own settings are one small
 * table, read whole and kept for RETENTION_REFRESH_MS; `refresh` drops the copy at once (the
 * process that changed a setting).
 */
export class ProjectRetention {
  private loaded: { readonly at: number; readonly own: Promise<Map<string, number>> } | null = null;

  constructor(
    private readonly settings: ProjectSettingsRepository,
    readonly defaultDays: number | null,
  ) {}

  refresh(): void {
    this.loaded = null;
  }

  private ownRetentions(): Promise<Map<string, number>> {
    const now = Date.now();
    if (this.loaded && now - this.loaded.at < RETENTION_REFRESH_MS) return this.loaded.own;
    const own = this.settings.retentions();
    const loaded = { at: now, own };
    this.loaded = loaded;
    own.catch(() => {
      if (this.loaded === loaded) this.loaded = null;
    });
    return own;
  }

  async days(projectId: string): Promise<number | null> {
    return (await this.ownRetentions()).get(projectId) ?? this.defaultDays;
  }

  /** The first `started_at` the project keeps, or null when it keeps everything. */
  async cutoff(projectId: string): Promise<number | null> {
    const days = await this.days(projectId);
    return days === null ? null : retentionCutoff(days);
  }

  /** Every project with a retention of its own, and the default for the rest. */
  async all(): Promise<{ readonly own: ReadonlyMap<string, number>; readonly defaultDays: number | null }> {
    return { own: await this.ownRetentions(), defaultDays: this.defaultDays };
  }
}
