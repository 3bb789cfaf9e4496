// Where uploads are written while they arrive and are checked: DATA_DIR/tmp/uploads/<instance>/<request>.
// A request removes its own directory on every path; a process that dies mid-upload (a crash, a
// SIGKILL, an OOM kill) leaves it behind. Each process writes under a directory named for its
// host, pid and a random token, so that an API start can tell whose leftovers it sees, even when
// several processes share DATA_DIR: `removeStaleTempUploads` runs at every API start.
import { randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { newestModification } from '../blobs/filesystem-blob-store.ts';
import type { Logger } from '../platform/logger.ts';
import { processAlive } from '../shared/process-alive.ts';

/** Leftovers whose owner cannot be checked (another host, the layout before this one) go after this long untouched. */
export const FOREIGN_TEMP_UPLOAD_AGE_MS = 3600_000;

const HOST = os.hostname().replace(/[^A-Za-z0-9.-]/g, '_') || 'host';
const TOKEN = randomBytes(4).toString('hex');
/** This process: `<host>~<pid>~<token>`. */
export const TEMP_UPLOAD_INSTANCE = `${HOST}~${process.pid}~${TOKEN}`;

export const tempUploadRoot = (dataDir: string): string => path.join(dataDir, 'tmp', 'uploads');
export const tempUploadDir = (dataDir: string): string => path.join(tempUploadRoot(dataDir), TEMP_UPLOAD_INSTANCE);

/**
 * Removes what dead processes left under DATA_DIR/tmp/uploads: directories of this host whose
 * process is gone (or whose pid is now this process's, a restarted container), and, when the
 * owner cannot be checked (another host sharing DATA_DIR, files of the earlier flat layout),
 * anything not modified for an hour. Returns the names removed.
 */
export async function removeStaleTempUploads(dataDir: string, log?: Logger, now = Date.now()): Promise<string[]> {
  const root = tempUploadRoot(dataDir);
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  for (const entry of entries) {
    if (entry === TEMP_UPLOAD_INSTANCE) continue;
    const [host, pidText, token] = entry.split('~');
    const pid = Number(pidText);
    let stale: boolean;
    if (host === HOST && token !== undefined && Number.isInteger(pid) && pid > 0) {
      stale = pid === process.pid || !processAlive(pid);
    } else {
      const modified = await newestModification(path.join(root, entry));
      stale = modified !== null && now - modified.getTime() >= FOREIGN_TEMP_UPLOAD_AGE_MS;
    }
    if (!stale) continue;
    await rm(path.join(root, entry), { recursive: true, force: true });
    removed.push(entry);
  }
  if (removed.length > 0) log?.warn({ removed }, 'temporary uploads left by a stopped process removed');
  return removed;
}
