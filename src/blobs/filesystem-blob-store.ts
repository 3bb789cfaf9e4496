import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import { assertSafeKey, BlobNotFoundError, type BlobEntry, type BlobInfo, type BlobStore } from './blob-store.ts';

/** Blobs as files under a root directory; writes go to a temp file and are renamed into place. */
export class FilesystemBlobStore implements BlobStore {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  /** Where the blob's file is (this store only: the interface has no paths; see withLocalFile). */
  localPath(key: string): string {
    assertSafeKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async withLocalFile<T>(key: string, use: (file: string) => Promise<T>): Promise<T> {
    const file = this.localPath(key);
    try {
      await stat(file);
    } catch (error) {
      throw notFound(error, key);
    }
    return use(file);
  }

  async put(key: string, body: Buffer | string | Readable): Promise<BlobInfo> {
    const target = this.localPath(key);
    await mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.${randomUUID()}.tmp`;
    try {
      if (body instanceof Readable) {
        await pipeline(body, createWriteStream(temp));
      } else {
        await writeFile(temp, body);
      }
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
    const info = await stat(target);
    return { bytes: info.size };
  }

  async moveIn(key: string, file: string): Promise<BlobInfo> {
    const target = this.localPath(key);
    await mkdir(path.dirname(target), { recursive: true });
    try {
      await rename(file, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      await this.put(key, createReadStream(file));
      await rm(file, { force: true });
    }
    const info = await stat(target);
    return { bytes: info.size };
  }

  async get(key: string): Promise<Buffer> {
    try {
      return await readFile(this.localPath(key));
    } catch (error) {
      throw notFound(error, key);
    }
  }

  async stream(key: string): Promise<Readable> {
    const file = this.localPath(key);
    try {
      await stat(file);
    } catch (error) {
      throw notFound(error, key);
    }
    return createReadStream(file);
  }

  async stat(key: string): Promise<BlobInfo | null> {
    try {
      const info = await stat(this.localPath(key));
      return info.isFile() ? { bytes: info.size } : null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async list(prefix: string): Promise<string[]> {
    try {
      return await readdir(this.localPath(prefix));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return [];
      throw error;
    }
  }

  async *walk(prefix: string): AsyncGenerator<BlobEntry> {
    const start = this.localPath(prefix);
    const info = await stat(start).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (!info) return;
    if (info.isFile()) {
      yield { key: prefix, bytes: info.size };
      return;
    }
    for (const entry of await readdir(start, { recursive: true, withFileTypes: true })) {
      // A write in progress (`<name>.<uuid>.tmp`, renamed into place when complete) is no blob yet.
      if (!entry.isFile() || TEMP_FILE.test(entry.name)) continue;
      const file = path.join(entry.parentPath, entry.name);
      const size = await stat(file).then(
        (found) => found.size,
        () => null,
      );
      if (size !== null) yield { key: path.relative(this.root, file).split(path.sep).join('/'), bytes: size };
    }
  }

  async lastModified(prefix: string): Promise<Date | null> {
    return newestModification(this.localPath(prefix));
  }

  async removeStalledWrites(prefix: string, before: Date): Promise<string[]> {
    const start = this.localPath(prefix);
    const entries = await readdir(start, { recursive: true, withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return [];
      throw error;
    });
    const removed: string[] = [];
    for (const entry of entries) {
      if (!entry.isFile() || !TEMP_FILE.test(entry.name)) continue;
      const file = path.join(entry.parentPath, entry.name);
      // A write still in progress keeps touching its file; one gone in the meantime was renamed into place.
      const modified = await stat(file).then(
        (found) => found.mtime,
        () => null,
      );
      if (modified === null || modified >= before) continue;
      await rm(file, { force: true });
      removed.push(path.relative(this.root, file).split(path.sep).join('/'));
    }
    return removed;
  }

  async deletePrefix(prefix: string): Promise<void> {
    await rm(this.localPath(prefix), { recursive: true, force: true });
  }
}

const TEMP_FILE = /\.[0-9a-f-]{36}\.tmp$/;

function notFound(error: unknown, key: string): unknown {
  return (error as NodeJS.ErrnoException).code === 'ENOENT' ? new BlobNotFoundError(key) : error;
}

/** The newest mtime of a file or directory and everything below it; null when it is gone. */
export async function newestModification(file: string): Promise<Date | null> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let newest = info.mtime;
  if (info.isDirectory()) {
    let entries: string[] = [];
    try {
      entries = await readdir(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    for (const entry of entries) {
      const below = await newestModification(path.join(file, entry));
      if (below && below > newest) newest = below;
    }
  }
  return newest;
}
