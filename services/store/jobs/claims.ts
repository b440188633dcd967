import { performance } from "node:perf_hooks";
import type { Job } from "./jobRows.js";
import type { JobsRepository } from "./jobsRepository.js";
import { stepOf } from "./jobTransitions.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Claiming a job without transactions or compare-and-set (ClickHouse has neither).
 *
 * Runner C claims a job in five moves: (1) at time r_C it starts reading the job's row
 * (FINAL); if that state is claimable, (2) it writes a claim row one step up (a version
 * `step * 65536 + random salt`), unless Δ/2 already passed since r_C; (3) if its INSERT
 * returned more than Δ after r_C, it withdraws (never runs); (4) it waits Δ; (5) it reads
 * the row again and runs the job only if the current row is its claim.
 * Δ is `settleMs`; durations are measured on each runner's monotonic clock.
 *
 * It rests on two properties of ClickHouse: a row whose INSERT returned is seen by every
 * SELECT started afterwards (one server, or replicas read with sequential consistency);
 * FINAL shows the row of highest version (equal versions, which need equal salts: the one
 * inserted last, the same for every reader once both are in).
 *
 * At most one runner runs a job per step. Take C and X that both claim on step s, i.e. both
 * read the state of step s - 1. X's read started before C's INSERT returned (a_C), or it
 * would have read C's claim, at step s. If X did not withdraw, its INSERT returned before
 * r_X + Δ < a_C + Δ, which is before C's second read: C sees X's claim, and X sees C's
 * likewise. So every claim not withdrawn is in every claimant's second read, each runs only
 * if its own claim is the highest there, and at most one is. A withdrawn claim never runs.
 *
 * A withdrawn claim can still land after the winner's second read and, with a higher salt,
 * become the job's current row on step s. It is harmless: the holder keeps the job while
 * the current row is on its step (every change by another runner moves the step up),
 * heartbeats are per job, so the job does not look abandoned, and the holder's next change
 * (step s + 1) replaces it.
 *
 * Taking over a running job: only when the last heartbeat is older than the lease, while a
 * holder stops by itself (aborts, writes nothing more) once its last successful heartbeat
 * was sent more than half a lease ago; so a job is only taken from a runner that stopped,
 * as long as the machines' clocks differ by less than half a lease. If the holder's last
 * write (its end) and a takeover still meet on one step, the rule above picks one: the end
 * (the claimant reads it and does not run), or the claim (the new holder finds the end
 * among the job's events, written before the state, and records it instead of running).
 */
export async function claimJob(jobs: JobsRepository, id: string, claimFrom: (current: Job) => Job | null, settleMs: number): Promise<Job | null> {
  const readStarted = performance.now();
  const current = await jobs.get(id);
  const claim = current ? claimFrom(current) : null;
  if (!claim?.claim || performance.now() - readStarted > settleMs / 2) return null;
  await jobs.write(claim);
  if (performance.now() - readStarted > settleMs) return null;
  await sleep(settleMs);
  const after = await jobs.get(id);
  return after?.version === claim.version && after.claim?.id === claim.claim.id ? claim : null;
}

/** Whether the holder of `claim` still holds the job whose current row is `current`. */
export function stillHeld(claim: Job, current: Job | null): boolean {
  return current !== null && stepOf(current.version) === stepOf(claim.version);
}
