// The engines a worker reads an account's trained models with (docs/models.md, "Jobs that read
// with it"): each model fetched once from the blob store into the worker's cache folder, its
// recognizer loaded beside the shared engine's other models (OcrEngine.withRecognizer), and kept
// while the memory it is estimated to take fits TRAINED_MODELS_MEMORY_MB; the least recently used
// engine is unloaded first, once no page reads with it.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { trainedModelPrefix } from '../blobs/blob-keys.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { OcrEngine } from '../recognition/engine/ocr-engine.ts';
import { loadModelSpec } from '../recognition/models/model-manifest.ts';
import { withTrainedRecognizer } from '../recognition/models/trained-recognizer.ts';
import { localModelDirectory } from './training/model-files.ts';

/**
 * A loaded model's memory, estimated from its files: onnxruntime holds the weights about twice
 * over (the initializers and the prepacked kernels), and the language model unpacks to several
 * times its gzip size. Measured (2026-11-28, docs/models.md): three fine-tunes of hwr-htr-v3 with
 * 17 MB of files each added 48, 48 and 129 MB of resident memory to a worker, read twice each.
 */
const MEMORY_PER_FILE_BYTE = 6;

interface Loaded {
  engine: OcrEngine;
  bytes: number;
  users: number;
  lastUsed: number;
}

export class TrainedEngines {
  private readonly loaded = new Map<string, Loaded>();
  private readonly loading = new Map<string, Promise<Loaded>>();
  /** Pages waiting for a model being loaded. */
  private readonly waiting = new Map<string, number>();
  private readonly cacheDir: string;
  private readonly memoryBytes: number;

  constructor(options: { cacheDir: string; memoryMb: number }) {
    this.cacheDir = options.cacheDir;
    this.memoryBytes = options.memoryMb * 1024 * 1024;
  }

  /** Runs `read` with the engine of `modelId` (its files in `blobs`, derived from `base`), held loaded until it settles. */
  async withEngine<T>(modelId: string, base: OcrEngine, blobs: BlobStore, read: (engine: OcrEngine) => Promise<T>): Promise<T> {
    const entry = await this.acquire(modelId, base, blobs);
    try {
      return await read(entry.engine);
    } finally {
      entry.users -= 1;
      entry.lastUsed = performance.now();
      await this.evict();
    }
  }

  /** Models loaded now (for tests and the log). */
  get models(): string[] {
    return [...this.loaded.keys()];
  }

  async close(): Promise<void> {
    const entries = [...this.loaded.values()];
    this.loaded.clear();
    await Promise.all(entries.map((entry) => entry.engine.close()));
  }

  private async acquire(modelId: string, base: OcrEngine, blobs: BlobStore): Promise<Loaded> {
    const present = this.loaded.get(modelId);
    if (present) {
      present.users += 1;
      return present;
    }
    // Every page waiting for the load counts as a user from the moment the engine is in the map.
    this.waiting.set(modelId, (this.waiting.get(modelId) ?? 0) + 1);
    let loading = this.loading.get(modelId);
    if (!loading) {
      loading = this.load(modelId, base, blobs).finally(() => {
        this.loading.delete(modelId);
        this.waiting.delete(modelId);
      });
      this.loading.set(modelId, loading);
    }
    const entry = await loading;
    await this.evict();
    return entry;
  }

  private async load(modelId: string, base: OcrEngine, blobs: BlobStore): Promise<Loaded> {
    const directory = await localModelDirectory(blobs, trainedModelPrefix(modelId), this.cacheDir, modelId);
    const engine = await base.withRecognizer(withTrainedRecognizer(base.spec, loadModelSpec(directory)));
    const bytes = readdirSync(directory).reduce((sum, file) => sum + statSync(path.join(directory, file)).size, 0) * MEMORY_PER_FILE_BYTE;
    const entry: Loaded = { engine, bytes, users: this.waiting.get(modelId) ?? 1, lastUsed: performance.now() };
    this.loaded.set(modelId, entry);
    return entry;
  }

  /** Unloads the least recently used idle engines while the loaded ones take more than the budget. */
  private async evict(): Promise<void> {
    let total = [...this.loaded.values()].reduce((sum, entry) => sum + entry.bytes, 0);
    const idle = [...this.loaded.entries()].filter(([, entry]) => entry.users === 0).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [modelId, entry] of idle) {
      if (total <= this.memoryBytes) break;
      this.loaded.delete(modelId);
      total -= entry.bytes;
      await entry.engine.close();
    }
  }
}
