// A model's files in the blob store (docs/models.md, "Storage"), so that any trainer or worker on
// any machine can take them up: the trainer's checkpoints (`models/<id>/run/`), kept after each
// one the trainer writes, so a killed trainer's next attempt resumes from the last; the trained
// model directory (`models/<id>/model/`); and a worker's local copy of a trained model, fetched
// once into its cache folder.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { modelPrefix } from '../../blobs/blob-keys.ts';
import type { BlobStore } from '../../blobs/blob-store.ts';

export const checkpointPrefix = (modelId: string): string => `${modelPrefix(modelId)}/run`;

/** The files of the trainer's run directory worth keeping: its last checkpoint and its best. */
const CHECKPOINT_FILES = ['last.pt', 'best.pt'] as const;

/** Stores the run directory's checkpoints that changed since `since` (epoch ms, file times); returns the newest time stored. */
export async function storeCheckpoints(blobs: BlobStore, modelId: string, runDir: string, since: number): Promise<number> {
  let newest = since;
  for (const name of CHECKPOINT_FILES) {
    const file = path.join(runDir, name);
    if (!existsSync(file)) continue;
    const modified = statSync(file).mtimeMs;
    if (modified <= since) continue;
    // The trainer replaces the file whole (a rename): what is read here is one checkpoint.
    await blobs.put(`${checkpointPrefix(modelId)}/${name}`, readFileSync(file));
    newest = Math.max(newest, modified);
  }
  return newest;
}

/** Puts the stored checkpoints (where there are any) into the run directory; returns how many. */
export async function restoreCheckpoints(blobs: BlobStore, modelId: string, runDir: string): Promise<number> {
  mkdirSync(runDir, { recursive: true });
  let restored = 0;
  for (const name of CHECKPOINT_FILES) {
    const key = `${checkpointPrefix(modelId)}/${name}`;
    if (!(await blobs.stat(key))) continue;
    writeFileSync(path.join(runDir, name), await blobs.get(key));
    restored += 1;
  }
  return restored;
}

/** Stores a model directory (flat: rec.onnx, charset.txt, manifest.json, the language model) under `prefix`. */
export async function storeModelDirectory(blobs: BlobStore, directory: string, prefix: string): Promise<void> {
  for (const name of readdirSync(directory)) {
    const file = path.join(directory, name);
    if (statSync(file).isFile()) await blobs.moveIn(`${prefix}/${name}`, file);
  }
}

/**
 * A local copy of the model directory stored under `prefix`, in `cacheDir/<name>`: fetched once
 * (into a temporary folder, then renamed, so a half-fetched copy is never used), then reused.
 */
export async function localModelDirectory(blobs: BlobStore, prefix: string, cacheDir: string, name: string): Promise<string> {
  const directory = path.join(cacheDir, name);
  if (existsSync(path.join(directory, 'manifest.json'))) return directory;
  const partial = `${directory}.partial-${process.pid}-${Date.now()}`;
  mkdirSync(partial, { recursive: true });
  try {
    const files = await blobs.list(prefix);
    if (!files.includes('manifest.json')) throw new Error(`${prefix} holds no model (no manifest.json)`);
    for (const file of files) writeFileSync(path.join(partial, file), await blobs.get(`${prefix}/${file}`));
    rmSync(directory, { recursive: true, force: true });
    renameSync(partial, directory);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return directory;
}
