// `provision --help` states the default of --home; the generators must use exactly that default (they describe an
// install on the target machine, so neither $HERMES_HOME nor ~/.hermes of the machine running them applies).
import { describe, expect, it } from 'vitest';
import { cli } from './helpers.js';

/** The default the help text states for --home, read from the text as a user reads it (wrapping undone). */
function statedHomeDefault(args: readonly string[]): string {
  const help = cli([...args, '--help']);
  expect(help.status, help.stderr).toBe(0);
  const text = help.stdout.replace(/\n\s+/g, ' ');
  const m = /--home <dir> (.*?)(?= --json )/.exec(text);
  if (m?.[1] === undefined) throw new Error(`no --home line in the help of ${args.join(' ')}:\n${help.stdout}`);
  const stated = /\(default: ([^;)]+)/.exec(m[1]);
  if (stated?.[1] === undefined) throw new Error(`the --home line of ${args.join(' ')} states no default: ${m[1]}`);
  return stated[1].trim();
}

describe('provision --help states the --home default the generators use', () => {
  const env = { HERMES_HOME: '/srv/not-this-one/.hermes', HOME: '/nonexistent-home' };
  const seen: string[] = [];

  for (const sub of ['tmpfiles', 'systemd', 'nixos'] as const) {
    it(`provision ${sub}`, () => {
      const stated = statedHomeDefault(['provision', sub]);
      seen.push(`${sub}: ${stated}`);
      expect(stated).toBe('/var/lib/hermes');
      const out = cli(['provision', sub], { env });
      expect(out.status, out.stderr).toBe(0);
      // Every generator names the home it was generated for in its header line.
      expect(out.stdout).toContain(`# home ${stated}, owner hermes:hermes`);
      expect(out.stdout).not.toContain('/srv/not-this-one');
    });
  }

  it('the group itself, and the other commands keep the runtime default', () => {
    expect(statedHomeDefault(['provision'])).toBe('/var/lib/hermes');
    expect(statedHomeDefault(['doctor'])).toBe('$HERMES_HOME, else ~/.hermes');
    console.log(`provision --home defaults stated: ${seen.join(', ')}`);
  });
});
