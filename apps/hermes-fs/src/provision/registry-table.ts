/**
 * `hermes-fs provision registry` on a terminal: the fs-policy registry as a box table that fits the width it
 * is given (long cells wrap), followed by the managed install's layout. `--json` prints the data instead.
 */
import type { RegistryData } from '@hermes/fs-policy';
import { renderTable } from '../lib/table.js';
import { wrapLine } from '../lib/term.js';

/** The registry as lines of at most `width` columns (no trailing newline on the last). */
export function renderRegistry(data: RegistryData, width: number, header: (s: string) => string = (s) => s): string[] {
  const rows = data.kinds.map((k) => {
    const notes = [k.honoursHomeMode ? 'honours HERMES_HOME_MODE' : '', k.reconciledWhenUnmanaged ? 'reconciled when unmanaged' : ''].filter((n) => n !== '');
    return [
      k.name,
      k.dir === null ? '(caller)' : k.dir === '' ? '(home)' : `${k.dir}/`,
      k.dirMode,
      k.file.mode,
      `${k.file.managedMode} (max ${k.file.managedMaxMode})`,
      notes.length === 0 ? '-' : notes.join('; '),
    ];
  });
  const table = renderTable(
    [
      { header: 'kind', overflow: 'wrap', min: 8 },
      { header: 'directory', overflow: 'wrap', min: 8 },
      { header: 'dir' },
      { header: 'file' },
      { header: 'managed file', overflow: 'wrap', min: 8 },
      { header: 'notes', overflow: 'wrap', min: 8 },
    ],
    rows,
    { maxWidth: width, header },
  );
  return [
    ...table,
    ...wrapLine(`managed install: directories ${data.managed.dirMode}, service umask ${data.managed.umask}, marker ${data.managed.marker.name} ${data.managed.marker.mode}`, width, '  '),
    ...wrapLine(`standard subdirectories: ${data.standardSubdirs.join(', ')}; default directory mode ${data.defaultDirMode}`, width, '  '),
  ];
}
