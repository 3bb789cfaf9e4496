// One OcrEngine per process and model configuration, created on first use: sessions
// are expensive to load (hundreds of milliseconds, tens of megabytes each) and
// onnxruntime sessions are safe to run concurrently. Each of its models loads when a page first
// needs it, once for all the pages in flight (OcrEngine.load, warm).
import type { Config } from '../platform/config.ts';
import { configuredModelSpec } from '../recognition/models/default-model.ts';
import { OcrEngine } from '../recognition/engine/ocr-engine.ts';

const engines = new Map<string, Promise<OcrEngine>>();

export function sharedEngine(recognition: Config['recognition']): Promise<OcrEngine> {
  const key = JSON.stringify([recognition.modelDir, recognition.threads, recognition.concurrency, recognition.decoder]);
  let engine = engines.get(key);
  if (!engine) {
    engine = loadEngine(recognition);
    engines.set(key, engine);
    // A failed load (bad MODEL_DIR) is not cached: fixing the directory must not need a restart.
    engine.catch(() => engines.delete(key));
  }
  return engine;
}

function loadEngine(recognition: Config['recognition']): Promise<OcrEngine> {
  return Promise.resolve().then(() => {
    const spec = configuredModelSpec(recognition.modelDir);
    return OcrEngine.load(spec, { threads: recognition.threads, concurrency: recognition.concurrency, decoder: recognition.decoder });
  });
}

/** Releases every shared engine (for orderly shutdown and tests). */
export async function closeSharedEngines(): Promise<void> {
  const loaded = [...engines.values()];
  engines.clear();
  await Promise.all(
    loaded.map((engine) =>
      engine.then(
        (value) => value.close(),
        () => undefined,
      ),
    ),
  );
}
