// The model setup used without MODEL_DIR: our handwriting recognizer with PP-OCRv4 as
// the per-line fallback (models/default/manifest.json). Where models/default is absent (an
// install without the models folder) it is the built-in PP-OCRv4 alone, and the worker says so
// at start (modelSetupNotice). A models/default whose borrowed models are missing is
// model_invalid, not a quiet switch to the built-in model: a Docker image once shipped without
// them and read handwriting at 58 % CER instead of about 15 %.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MANIFEST_FILE, builtinModelSpec, loadModelSpec } from './model-manifest.ts';
import type { ModelSpec } from './model-spec.ts';

export const DEFAULT_MODEL_DIR = fileURLToPath(new URL('../../../models/default/', import.meta.url));
export function defaultModelSpec(): ModelSpec {
  if (existsSync(`${DEFAULT_MODEL_DIR}${MANIFEST_FILE}`)) return loadModelSpec(DEFAULT_MODEL_DIR);
  return builtinModelSpec();
}

/** The model setup a worker reads pages with (MODEL_DIR or the default); throws model_invalid for a broken one. */
export function configuredModelSpec(modelDir: string | null): ModelSpec {
  return modelDir ? loadModelSpec(modelDir) : defaultModelSpec();
}

/** What a worker logs at start about its models: a warning where handwriting is read by PP-OCRv4 alone. */
export function modelSetupNotice(spec: ModelSpec): { level: 'info' | 'warn'; message: string } {
  if (spec.directory === null)
    return {
      level: 'warn',
      message:
        'recognition uses the built-in PP-OCRv4 alone (no models/default in this install, and no MODEL_DIR): ' +
        'it reads print, not handwriting (docs/recognition.md)',
    };
  const printReader = spec.screening?.print?.source;
  return {
    level: 'info',
    message: `recognition models: ${spec.name} ${spec.version} (recognizer ${spec.recognitionSource.name} ${spec.recognitionSource.version}${printReader ? `, print reader ${printReader.name} ${printReader.version}` : ''})`,
  };
}
