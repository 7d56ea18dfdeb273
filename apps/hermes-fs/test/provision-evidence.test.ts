/**
 * How `doctor --tmpfiles` reads an installed configuration it did not necessarily generate: hand-written
 * rules (the reference NixOS module's, tabs, quoted paths, `~`/`:` prefixes), and files that are no evidence.
 */
import { describe, expect, it } from 'vitest';
import { tmpfilesEvidence } from '../src/provision/tmpfiles.js';

describe('tmpfilesEvidence', () => {
  it("the reference module's rule (2770, no prefixes, tabs) means managed; its marker names the manager", () => {
    const text = ['# hermes', 'd\t/var/lib/hermes/.hermes\t2770\thermes\thermes\t-\t-', 'f /var/lib/hermes/.hermes/.managed 0644 hermes hermes - home-manager', ''].join('\n');
    expect(tmpfilesEvidence(text, '/var/lib/hermes/.hermes/')).toEqual({
      managed: true,
      system: 'home-manager',
      rule: 'line 2: d /var/lib/hermes/.hermes 2770 hermes hermes',
    });
  });

  it('an owner-only rule means unmanaged; a quoted path and a : prefix are understood', () => {
    expect(tmpfilesEvidence('d "/srv/hermes" :0700 :hermes :hermes -\n', '/srv/hermes')).toEqual({ managed: false, system: null, rule: 'line 1: d /srv/hermes :0700 :hermes :hermes' });
    expect(tmpfilesEvidence('z /srv/hermes ~2770 - - -\n', '/srv/hermes')).toMatchObject({ managed: true, system: null });
  });

  it('no rule for the home, a rule without a mode, and contradicting rules are no evidence', () => {
    expect(tmpfilesEvidence('d /var/lib/other 2770 a a -\n', '/var/lib/hermes')).toEqual({ problem: 'it has no directory rule for /var/lib/hermes (its directories: /var/lib/other)' });
    expect(tmpfilesEvidence('d /var/lib/hermes - a a -\n', '/var/lib/hermes')).toEqual({ problem: 'its rules for /var/lib/hermes set no mode' });
    expect(tmpfilesEvidence('d /var/lib/hermes :2770 a a -\nz /var/lib/hermes 0700 - - -\n', '/var/lib/hermes')).toEqual({
      problem: 'its rules for /var/lib/hermes contradict each other (line 1: :2770, line 2: 0700)',
    });
    expect(tmpfilesEvidence('', '/var/lib/hermes')).toEqual({ problem: 'it has no directory rule for /var/lib/hermes' });
  });

  it('a rule for a directory below the home is not the home\'s', () => {
    expect(tmpfilesEvidence('d /var/lib/hermes/cron 2770 a a -\n', '/var/lib/hermes')).toEqual({ problem: 'it has no directory rule for /var/lib/hermes (its directories: /var/lib/hermes/cron)' });
  });
});
