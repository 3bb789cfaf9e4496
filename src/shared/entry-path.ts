// Entry path rules: which ZIP entry paths are unsafe, which are OS junk to ignore.
// Nothing is ever extracted by name (pages are stored under generated keys), but a path
// that is absolute or climbs out is a sign of a hostile or broken archive, so it is refused.

export type EntryPathCheck = { safe: true; path: string } | { safe: false; reason: string };

/**
 * Checks a decoded entry name. Backslashes count as separators (old Windows tools write
 * them), so `..\evil.jpg`, `C:\evil.jpg` and `\\server\share\x.jpg` are caught like their
 * slash forms. The returned path uses `/` only.
 */
/** The longest entry path (characters) and the most folders above a file accepted. */
export const MAX_ENTRY_PATH_LENGTH = 1024;
export const MAX_ENTRY_PATH_DEPTH = 64;

export function checkEntryPath(name: string): EntryPathCheck {
  if (name.length === 0) return { safe: false, reason: 'has an empty name' };
  const path = name.replace(/\\/g, '/');
  if (path.startsWith('/')) return { safe: false, reason: 'is an absolute path' };
  if (/^[A-Za-z]:/.test(path)) return { safe: false, reason: 'is an absolute path (drive letter)' };
  if (path.split('/').includes('..')) return { safe: false, reason: 'climbs out of the archive (`..`)' };
  // No scan needs more; a longer path only makes every later step (page order above all) slower.
  if (path.length > MAX_ENTRY_PATH_LENGTH)
    return { safe: false, reason: `is ${path.length} characters long; at most ${MAX_ENTRY_PATH_LENGTH} are accepted` };
  const folders = path.split('/').length - 1;
  if (folders > MAX_ENTRY_PATH_DEPTH)
    return { safe: false, reason: `is ${folders} folders deep; at most ${MAX_ENTRY_PATH_DEPTH} are accepted` };
  return { safe: true, path };
}

/** Files and folders that operating systems add to archives; never pages. */
const JUNK_FOLDERS = new Set([
  '__MACOSX',
  '.Spotlight-V100',
  '.Trashes',
  '.fseventsd',
  '.TemporaryItems',
  '$RECYCLE.BIN',
  'System Volume Information',
]);
const JUNK_FILES = new Set(['.ds_store', 'thumbs.db', 'ehthumbs.db', 'ehthumbs_vista.db', 'desktop.ini', '.directory', 'icon\r']);

export function isJunkPath(path: string): boolean {
  const segments = path.split('/').filter((segment) => segment !== '');
  if (segments.length === 0) return false;
  if (segments.slice(0, -1).some((segment) => JUNK_FOLDERS.has(segment))) return true;
  const base = segments[segments.length - 1];
  if (JUNK_FOLDERS.has(base)) return true;
  // AppleDouble resource forks: `._photo.jpg` next to `photo.jpg`.
  if (base.startsWith('._')) return true;
  return JUNK_FILES.has(base.toLowerCase());
}

export function isDirectoryPath(path: string): boolean {
  return path.endsWith('/');
}
