import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ReceiptIndex } from '../src/receipt-index.js';

const receipt = (n: number): string => createHash('sha256').update(`r${String(n)}`).digest('hex');

describe('ReceiptIndex: the first file of each receipt, compact', () => {
  it('keeps the first path of each receipt across table growth, for spool files, batch members and other paths', () => {
    const ix = new ReceiptIndex('/h/pending_messages/');
    for (let i = 0; i < 30_000; i++) {
      const p = i % 5 === 0 ? `/h/pending_messages/batch-${String(i)}.json/m-${String(i)}.json` : i % 9 === 0 ? `/elsewhere/${String(i)}.json` : `/h/pending_messages/pending-${String(i)}.json`;
      ix.add(receipt(i % 20_000), p); // files 20,000.. repeat the receipts of files 0..: not remembered
    }
    expect(ix.size).toBe(20_000);
    expect(ix.get(receipt(1))).toBe('/h/pending_messages/pending-1.json');
    expect(ix.get(receipt(5))).toBe('/h/pending_messages/batch-5.json/m-5.json');
    expect(ix.get(receipt(9))).toBe('/elsewhere/9.json');
    expect(ix.get(receipt(19_999))).toBe('/h/pending_messages/pending-19999.json');
    expect(ix.get(receipt(20_000))).toBeUndefined();
  });

  it('a receipt that is not a SHA-256 hex digest, and a name outside printable ASCII, are kept exactly', () => {
    const ix = new ReceiptIndex('/s/');
    ix.add('legacy:1', '/s/a.json');
    ix.add('legacy:1', '/s/b.json');
    ix.add(receipt(1), '/s/é-名.json');
    expect([ix.get('legacy:1'), ix.get(receipt(1)), ix.get('legacy:2'), ix.size]).toEqual(['/s/a.json', '/s/é-名.json', undefined, 2]);
  });
});
