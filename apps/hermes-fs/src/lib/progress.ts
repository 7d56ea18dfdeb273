/**
 * Progress of a long operation on the operator's terminal (stderr): the scan phase at once, then a bar with the
 * rate and the time left. Nothing at all when stderr is not a terminal or the output is `--json`: a log or a
 * pipe gets the command's final lines only.
 */
import { SingleBar } from 'cli-progress';
import { count } from './output.js';

/** `75s` → `1m 15s`; `4000s` → `1h 07m`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${String(s)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${String(m)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${String(Math.floor(m / 60))}h ${String(m % 60).padStart(2, '0')}m`;
}

/** What the bar shows after `done` of `total` items, `elapsedMs` after its first update at `startDone`. */
export function progressFigures(done: number, total: number, startDone: number, elapsedMs: number): { rate: string; eta: string } {
  const since = done - startDone;
  if (since <= 0 || elapsedMs <= 0) return { rate: '…', eta: '…' };
  const perSecond = (since * 1000) / elapsedMs;
  return { rate: count(Math.round(perSecond)), eta: formatDuration((total - done) / perSecond) };
}

export interface ProgressOptions {
  /** Show anything at all: stderr is a terminal and the output is not `--json`. */
  readonly enabled: boolean;
  /** What is counted, plural: `files`. */
  readonly unit: string;
  /** The bar's label: `recovering`. */
  readonly label: string;
  /** The stream (default: stderr). */
  readonly stream?: NodeJS.WriteStream;
  /** The clock (default: `Date.now`), for tests. */
  readonly now?: () => number;
}

/**
 * A progress display: {@link scanning} prints the scan line immediately, {@link update} draws the bar
 * (`recovering [====    ] 1,200/20,000 files · 2,150 files/s · ETA 8s`), {@link stop} ends it. Every call is
 * a no-op when the display is not enabled.
 */
export class Progress {
  readonly #options: ProgressOptions;
  readonly #stream: NodeJS.WriteStream;
  readonly #now: () => number;
  #bar: SingleBar | null = null;
  #start = 0;
  #startDone = 0;

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#stream = options.stream ?? process.stderr;
    this.#now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.#options.enabled;
  }

  /** `scanning pending_messages/ … 20,000 files`, written at once (before a synchronous scan starts). */
  scanning(what: string, n: number): void {
    if (!this.#options.enabled) return;
    try {
      this.#stream.write(`scanning ${what} … ${count(n)} ${this.#options.unit}\n`);
    } catch {
      // stderr closed: nothing left to show
    }
  }

  /** Draws the bar at `done` of `total` (created on the first call). */
  update(done: number, total: number): void {
    if (!this.#options.enabled) return;
    const now = this.#now();
    if (this.#bar === null) {
      this.#start = now;
      this.#startDone = done;
      this.#bar = new SingleBar(
        {
          stream: this.#stream,
          format: `${this.#options.label} [{bar}] {done}/{all} ${this.#options.unit} · {rate} ${this.#options.unit}/s · ETA {left}`,
          hideCursor: true,
          clearOnComplete: false,
          barsize: 30,
        },
        undefined,
      );
      this.#bar.start(total, done, { done: count(done), all: count(total), rate: '…', left: '…' });
      return;
    }
    const { rate, eta } = progressFigures(done, total, this.#startDone, now - this.#start);
    this.#bar.setTotal(total);
    this.#bar.update(done, { done: count(done), all: count(total), rate, left: done >= total ? '0s' : eta });
  }

  /** Ends the bar (its last state stays on the screen). */
  stop(): void {
    this.#bar?.stop();
    this.#bar = null;
  }
}
