// Bytes in the blob store by kind (`hwr storage stats`), from the key layout of blob-keys.ts.
import type { BlobStore } from './blob-store.ts';
import { JOBS_ROOT } from './blob-keys.ts';

export const STORAGE_KINDS = ['uploads', 'page_images', 'layouts', 'page_results', 'archives', 'other'] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];

export interface StorageStats {
  /** Jobs with at least one blob. */
  jobs: number;
  kinds: Record<StorageKind, { blobs: number; bytes: number }>;
  total: { blobs: number; bytes: number };
}

/** The kind of a key under jobs/<id>/ (anything else is `other`). */
export function storageKind(key: string): StorageKind {
  const parts = key.split('/');
  if (parts[0] !== JOBS_ROOT || parts.length < 3) return 'other';
  const rest = parts.slice(2).join('/');
  if (rest === 'upload.zip') return 'uploads';
  if (/^result(\.[^/]+)?\.zip$/.test(rest)) return 'archives';
  if (parts[2] === 'pages' && parts.length === 4) return rest.endsWith('.layout.xml') ? 'layouts' : 'page_images';
  if (parts[2] === 'results' && parts.length === 4) return 'page_results';
  return 'other';
}

/** Walks the whole store once (with S3: one LIST per 1,000 objects). */
export async function storageStats(blobs: BlobStore): Promise<StorageStats> {
  const kinds = Object.fromEntries(STORAGE_KINDS.map((kind) => [kind, { blobs: 0, bytes: 0 }])) as StorageStats['kinds'];
  const total = { blobs: 0, bytes: 0 };
  const jobs = new Set<string>();
  for await (const { key, bytes } of blobs.walk(JOBS_ROOT)) {
    const kind = storageKind(key);
    kinds[kind].blobs++;
    kinds[kind].bytes += bytes;
    total.blobs++;
    total.bytes += bytes;
    if (kind !== 'other') jobs.add(key.split('/')[1]);
  }
  return { jobs: jobs.size, kinds, total };
}
