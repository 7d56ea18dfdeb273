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

async function timeOnce(fn, setup) {
  const ctx = setup ? await setup() : undefined;
  const t0 = performance.now();
  await fn(ctx);
  const ms = performance.now() - t0;
  return ms;
}

/**
 * Runs one case. `ours` and `baseline` are { name, run(ctx), setup?() } where run does `ops` operations.
 * Returns per-op medians (ms), spreads and the ratio.
 */
export async function compare({ ours, baseline, warmup = 2, samples = 9, ops = 1 }) {
  for (let i = 0; i < warmup; i++) {
    await timeOnce(ours.run, ours.setup);
    await timeOnce(baseline.run, baseline.setup);
  }
  const a = [];
  const b = [];
  for (let i = 0; i < samples; i++) {
    // Alternate which side goes first so neither always gets the warmer cache.
    if (i % 2 === 0) {
      a.push((await timeOnce(ours.run, ours.setup)) / ops);
      b.push((await timeOnce(baseline.run, baseline.setup)) / ops);
    } else {
      b.push((await timeOnce(baseline.run, baseline.setup)) / ops);
      a.push((await timeOnce(ours.run, ours.setup)) / ops);
    }
  }
  return {
    ours: { name: ours.name, medianMs: median(a), spread: spread(a), samples: a },
    baseline: { name: baseline.name, medianMs: median(b), spread: spread(b), samples: b },
    ratio: median(a) / median(b),
  };
}

/**
 * For operations dominated by device latency (fsync): time each operation alone, alternating ours and the
 * baseline op by op, so both see the same disk state; medians over all operations.
 */
export async function compareEachOp({ ours, baseline, warmup = 20, ops = 200 }) {
  for (let i = 0; i < warmup; i++) {
    await ours.run();
    await baseline.run();
  }
  const a = [];
  const b = [];
  for (let i = 0; i < ops; i++) {
    const first = i % 2 === 0 ? [ours, a] : [baseline, b];
    const second = i % 2 === 0 ? [baseline, b] : [ours, a];
    for (const [side, into] of [first, second]) {
      const t0 = performance.now();
      await side.run();
      into.push(performance.now() - t0);
    }
  }
  return {
    ours: { name: ours.name, medianMs: median(a), spread: spread(a), samples: a.length },
    baseline: { name: baseline.name, medianMs: median(b), spread: spread(b), samples: b.length },
    ratio: median(a) / median(b),
  };
}
