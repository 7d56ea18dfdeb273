/** Counters and histograms of the service, rendered as Prometheus text (exposition format 0.0.4). */

const BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** A cumulative histogram in seconds, with an exact p50/p99 over the last 10,000 observations. */
export class Histogram {
  readonly counts = new Array<number>(BUCKETS_S.length).fill(0);
  count = 0;
  sum = 0;
  readonly #recent: number[] = [];

  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    for (let i = 0; i < BUCKETS_S.length; i++) if (seconds <= (BUCKETS_S[i] ?? Infinity)) this.counts[i] = (this.counts[i] ?? 0) + 1;
    this.#recent.push(seconds);
    if (this.#recent.length > 10_000) this.#recent.shift();
  }

  /** The q-quantile (0..1) of the recent observations in seconds; NaN when there is none. */
  quantile(q: number): number {
    if (this.#recent.length === 0) return NaN;
    const sorted = [...this.#recent].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  }

  render(name: string, help: string): string[] {
    const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`];
    BUCKETS_S.forEach((b, i) => lines.push(`${name}_bucket{le="${String(b)}"} ${String(this.counts[i] ?? 0)}`));
    lines.push(`${name}_bucket{le="+Inf"} ${String(this.count)}`, `${name}_sum ${String(this.sum)}`, `${name}_count ${String(this.count)}`);
    return lines;
  }
}

/** Everything /metrics reports; the service increments the fields directly. */
export class Metrics {
  /** 2xx acknowledgements by how the message was durable: committed (state.db), spooled, replayed (idempotent retry). */
  readonly acks = { committed: 0, spooled: 0, replayed: 0 };
  /** state.db group commits (one transaction, one fsync each) and the messages they carried. */
  commits = 0;
  committedMessages = 0;
  /** Spool flushes (one fsynced flush each) and the messages they carried. */
  flushes = 0;
  spooledMessages = 0;
  /** Messages recovered from the spool into state.db (start-up and drains). */
  recovered = 0;
  /** Requests refused with 4xx/5xx. */
  refused = 0;
  turns = 0;
  readonly commitSeconds = new Histogram();
  readonly flushSeconds = new Histogram();
  readonly ackSeconds = new Histogram();

  /** The Prometheus text; `spoolFiles` is read when rendered (a gauge), `queued` the messages awaiting a commit. */
  render(gauges: { spoolFiles: number; spoolBytes: number; queued: number; ready: boolean }): string {
    const counter = (name: string, help: string, value: number, labels = ''): string[] => [
      `# HELP ${name} ${help}`,
      `# TYPE ${name} counter`,
      `${name}${labels} ${String(value)}`,
    ];
    const gauge = (name: string, help: string, value: number): string[] => [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${String(value)}`];
    const lines = [
      '# HELP hermes_gateway_acks_total Messages acknowledged with a 2xx, by how they were durable when acknowledged.',
      '# TYPE hermes_gateway_acks_total counter',
      ...Object.entries(this.acks).map(([how, n]) => `hermes_gateway_acks_total{durable="${how}"} ${String(n)}`),
      ...counter('hermes_gateway_commits_total', 'state.db group commits (one write transaction and fsync each).', this.commits),
      ...counter('hermes_gateway_committed_messages_total', 'Messages written by the group commits.', this.committedMessages),
      ...counter('hermes_gateway_flushes_total', 'Spool flushes (fsynced) taken while state.db was unavailable.', this.flushes),
      ...counter('hermes_gateway_spooled_messages_total', 'Messages written to the spool.', this.spooledMessages),
      ...counter('hermes_gateway_recovered_total', 'Messages recovered from the spool into state.db.', this.recovered),
      ...counter('hermes_gateway_refused_total', 'Requests answered with a 4xx or 5xx.', this.refused),
      ...counter('hermes_gateway_turns_total', 'Agent turns run.', this.turns),
      ...gauge('hermes_gateway_spool_files', 'Payload files in pending_messages/.', gauges.spoolFiles),
      ...gauge('hermes_gateway_spool_bytes', 'Bytes of the payload files in pending_messages/.', gauges.spoolBytes),
      ...gauge('hermes_gateway_queued_messages', 'Messages received and not yet durable (awaiting a commit).', gauges.queued),
      ...gauge('hermes_gateway_ready', '1 when /readyz answers 200.', gauges.ready ? 1 : 0),
      ...this.commitSeconds.render('hermes_gateway_commit_fsync_seconds', 'Duration of a state.db group commit, its fsync included.'),
      ...this.flushSeconds.render('hermes_gateway_spool_flush_seconds', 'Duration of a spool flush, its fsyncs included.'),
      ...this.ackSeconds.render('hermes_gateway_ack_seconds', 'From a message request parsed to its durable acknowledgement.'),
    ];
    return `${lines.join('\n')}\n`;
  }
}
