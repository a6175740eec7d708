/** What the chaos run records. All times are milliseconds on the shared clock (clock.ts). */

/** One critical section: a lock granted, work done under it, a commit to the register, a release. */
export interface SectionRecord {
  /** `${client}:${seq}`, also what the register logs. */
  id: string;
  phase: string;
  client: string;
  /** How the lock was taken: the `@Locked` provider or the `RedlockService.using` provider. */
  via: 'locked' | 'using';
  resource: string;
  hot: boolean;
  /** The lock's random value on the masters. */
  value: string;
  /** Whether this call asked for a fencing token (cold sections through `using` pass `fencing: false`). */
  fenced: boolean;
  fencingToken?: number;
  /** When the worker asked for the lock. */
  requestedAt: number;
  /** First instruction inside the lock. */
  start: number;
  /** After the commit (or after deciding not to commit): the section's last act under the lock. */
  end: number;
  /**
   * Each call to `lock.extend()` (the renewal's included), stamped by the harness BEFORE the call,
   * and whether the call resolved. The checker counts an extension only if the masters confirm it.
   */
  extensions: {
    at: number;
    ok: boolean;
    /** When the call resolved, and the deadline the holder then believed (now + `lock.validity`). */
    doneAt?: number;
    deadline?: number;
  }[];
  /**
   * The deadline the holder believed when the lock was handed to it: the shared clock read first,
   * then `lock.validity`, summed (a stall between the two reads can only make it err low).
   */
  claimedDeadline?: number;
  /** The lock's validity deadline as the library last knew it (updated after each extension). */
  deadline: number;
  /** When the lock's signal aborted, if it did. */
  abortedAt?: number;
  /**
   * The largest time by which a read of `signal.aborted` that returned false came after the deadline
   * (ms; undefined: none did). The read is stamped before it and the deadline is read after, so the
   * figure can only err low: a correct library never gives one.
   */
  heldReadAfterDeadlineMs?: number;
  /** The deadline known just before the signal aborted. */
  deadlineAtAbort?: number;
  abortReason?: string;
  /** The work loop stopped early because the signal aborted. */
  stoppedEarly: boolean;
  /** When the signal was checked before the commit, and whether it had aborted by then. */
  checkedAt: number;
  abortedAtCheck: boolean;
  /** When the commit was sent to the register (undefined: skipped because the signal had aborted). */
  wroteAt?: number;
  commit: 'accepted' | 'rejected' | 'unfenced' | 'skipped' | 'error';
  /** A targeted client pause (SIGSTOP) happened between the check and the write. */
  pausedBeforeWrite: boolean;
  /** How the `using()` / `@Locked` call settled. */
  outcome: 'ok' | 'lost' | 'error';
  /** When it settled (the release on the masters has been decided by then). */
  settledAt: number;
}

/** An acquisition that did not get the lock. */
export interface FailureRecord {
  phase: string;
  client: string;
  resource: string;
  hot: boolean;
  requestedAt: number;
  failedAt: number;
  /** `busy`: another holder kept it; `unavailable`: Redis trouble (not enough masters answered/counted); `other`. */
  kind: 'busy' | 'unavailable' | 'other';
  message: string;
}

/** A liveness probe after a fault healed: one fresh resource, acquired and released. */
export interface ProbeRecord {
  phase: string;
  client: string;
  round: number;
  startedAt: number;
  grantedAt?: number;
  error?: string;
  /** When the probe settled (granted or failed). */
  endedAt?: number;
}

/** A fault as injected: a shaded band on the timeline. */
export interface FaultBand {
  phase: string;
  round: number;
  /** e.g. 'kill-restart' */
  kind: string;
  /** The round's variant, e.g. 'majority', 'bare quorum', 'single', '3 down'. */
  variant: string;
  /** e.g. 'majority: m1 m2 m3' */
  label: string;
  start: number;
  end: number;
  masters: number[];
  clients: string[];
  /** When the nemesis declared everything healed (probes are timed from here). */
  healedAt: number;
  /**
   * Set when this fault goes beyond what the configuration can tolerate, so that a mutual-exclusion
   * violation is the expected, demonstrated outcome (the text says why). Unset: violations are failures.
   */
  beyond?: string;
  /** Masters that came back empty (restarted without persistence) in this fault, and when they were killed. */
  restarted: number[];
  killedAt?: number;
  /**
   * Restarted masters whose INFO said `uptime_in_seconds` ≥ 1 within the first 300 ms after they
   * answered again (`afterMs` since then): Redis truncates both ends of that difference to the second.
   */
  earlyUptime?: { master: number; afterMs: number }[];
  /**
   * How long after each restarted master answered again the library's restart guard (a Redlock with
   * default options in the harness, watching the same masters) counted its votes again; null when
   * it was never seen distrusting it.
   */
  guardTrustedAfter?: { master: number; ms: number | null }[];
  /** Proxy faults that delay links: the added latency each way, ms (the oracle allows for it). */
  delayMs?: number;
  /** For faults aimed at a fresh hot lock: on how many masters that lock's key was. */
  heldOn?: number;
}

/** A client process SIGSTOPped: [start, end] on the shared clock. */
export interface ClientPause {
  phase: string;
  client: string;
  start: number;
  end: number;
  targeted: boolean;
  /** 'sigstop' (the harness stopped the process) or 'stall' (the client blocked its own event loop). */
  kind?: 'sigstop' | 'stall';
}

/** Lock keys found on the masters after every client released and closed. */
export interface KeyLeft {
  phase: string;
  master: number;
  key: string;
  value: string | null;
  pttl: number;
  /** 'after-close': scanned just after the clients closed; 'after-ttl': still there one TTL later. */
  when: 'after-close' | 'after-ttl';
}

/** Everything one phase produced. */
export interface PhaseHistory {
  phase: string;
  sections: SectionRecord[];
  failures: FailureRecord[];
  probes: ProbeRecord[];
  bands: FaultBand[];
  pauses: ClientPause[];
  keysLeft: KeyLeft[];
  /** The register's logs for this phase's resources, in acceptance order. */
  registerLogs: Map<string, { fenced: { token: number; section: string }[]; unfenced: string[] }>;
  startedAt: number;
  endedAt: number;
  /** The masters' history of this phase's keys (history.ts). */
  masterEvents: import('./history.js').MasterEvent[];
  /** How many sections each client said it ran (to compare with the records received). */
  clientCycles: Record<string, number>;
  /** Each client's measured event-loop stalls (loop-lag.ts). */
  stalls: import('./loop-lag.js').LoopStall[];
}
