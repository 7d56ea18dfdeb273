// A small benchmark harness: warm-up, then interleaved samples of "ours" and "baseline" (so drift on a
// shared machine hits both alike), median and spread per side, ratio = ours / baseline.
import { performance } from 'node:perf_hooks';

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return s[lo] + (s[hi] - s[lo]) * (i - lo);
}

/** Spread as the interquartile range relative to the median (e.g. 0.08 = ±8 % band width). */
export function spread(xs) {
  const m = median(xs);
  return m === 0 ? 0 : (quantile(xs, 0.75) - quantile(xs, 0.25)) / m;
}

/** Interquartile range (q75 − q25), in the samples' unit. */
export function iqr(xs) {
  return quantile(xs, 0.75) - quantile(xs, 0.25);
}

/**
 * A planted regression, for showing that `pnpm bench:check` fails: HERMES_BENCH_PLANT=B2:50us (or `B1:200us,B4:20ms`)
 * makes the "ours" side of the named cases spin for that long per operation, inside the timed section. Only the
 * bench reads it; the packages never see it. Returns microseconds per operation for `id` (0 when not planted).
 */
export function plantedMicros(id, env = process.env) {
  const spec = env.HERMES_BENCH_PLANT;
  if (spec === undefined || spec === '' || id === undefined) return 0;
  for (const part of spec.split(',')) {
    const m = /^([\w-]+):(\d+(?:\.\d+)?)(us|ms)$/.exec(part.trim());
    if (m === null) throw new Error(`HERMES_BENCH_PLANT: cannot read "${part}" (expected CASE:NUMBERus or CASE:NUMBERms, e.g. B2:50us)`);
    if (m[1] === id) return Number(m[2]) * (m[3] === 'ms' ? 1000 : 1);
  }
  return 0;
}

/** Busy-waits `us` microseconds (real time spent on the CPU, as a slower code path would). */
function spin(us) {
  if (us <= 0) return;
  const end = performance.now() + us / 1000;
  while (performance.now() < end) {
    // spinning on purpose: a planted regression
  }
}

async function timeOnce(fn, setup, plantUs = 0) {
  const ctx = setup ? await setup() : undefined;
  const t0 = performance.now();
  await fn(ctx);
  spin(plantUs);
  const ms = performance.now() - t0;
  return ms;
}

/** The figures of one side: median and IQR per operation (ms), spread = IQR ÷ median. */
export function side(name, xs, extra = {}) {
  return { name, medianMs: median(xs), iqrMs: iqr(xs), spread: spread(xs), n: xs.length, ...extra };
}

/**
 * Runs one case. `ours` and `baseline` are { name, run(ctx), setup?() } where run does `ops` operations; `id`
 * names the case (a planted regression, HERMES_BENCH_PLANT, applies to the "ours" side of that id only).
 * Returns per-op medians (ms), IQRs, spreads, the samples and the ratio ours ÷ baseline.
 */
export async function compare({ id, ours, baseline, warmup = 2, samples = 9, ops = 1 }) {
  const plantUs = plantedMicros(id) * ops;
  for (let i = 0; i < warmup; i++) {
    await timeOnce(ours.run, ours.setup, plantUs);
    await timeOnce(baseline.run, baseline.setup);
  }
  const a = [];
  const b = [];
  for (let i = 0; i < samples; i++) {
    // Alternate which side goes first so neither always gets the warmer cache.
    if (i % 2 === 0) {
      a.push((await timeOnce(ours.run, ours.setup, plantUs)) / ops);
      b.push((await timeOnce(baseline.run, baseline.setup)) / ops);
    } else {
      b.push((await timeOnce(baseline.run, baseline.setup)) / ops);
      a.push((await timeOnce(ours.run, ours.setup, plantUs)) / ops);
    }
  }
  return {
    ours: side(ours.name, a, { samples: a }),
    baseline: side(baseline.name, b, { samples: b }),
    ratio: median(a) / median(b),
  };
}

/**
 * For operations dominated by device latency (fsync): time each operation alone, alternating ours and the
 * baseline op by op, so both see the same disk state; medians over all operations.
 */
export async function compareEachOp({ id, ours, baseline, warmup = 20, ops = 200 }) {
  const plantUs = plantedMicros(id);
  for (let i = 0; i < warmup; i++) {
    await ours.run();
    await baseline.run();
  }
  const a = [];
  const b = [];
  for (let i = 0; i < ops; i++) {
    const first = i % 2 === 0 ? [ours, a] : [baseline, b];
    const second = i % 2 === 0 ? [baseline, b] : [ours, a];
    for (const [which, into] of [first, second]) {
      const t0 = performance.now();
      await which.run();
      if (which === ours) spin(plantUs);
      into.push(performance.now() - t0);
    }
  }
  return {
    ours: side(ours.name, a),
    baseline: side(baseline.name, b),
    ratio: median(a) / median(b),
  };
}
