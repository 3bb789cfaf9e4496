// The model setup used without MODEL_DIR: our handwriting recognizer with PP-OCRv4 as
// the per-line fallback (models/default/manifest.json), when the handwriting model is
// in the tree; else the built-in PP-OCRv4 alone (a checkout without models/hwr-htr-v3).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MANIFEST_FILE, builtinModelSpec, loadModelSpec } from './model-manifest.ts';
import type { ModelSpec } from './model-spec.ts';

export const DEFAULT_MODEL_DIR = fileURLToPath(new URL('../../../models/default/', import.meta.url));
/** The recognizer the default setup borrows; its absence means the built-in model is the default. */
export const HANDWRITING_MODEL_DIR = fileURLToPath(new URL('../../../models/hwr-htr-v3/', import.meta.url));

export function defaultModelSpec(): ModelSpec {
  if (existsSync(`${HANDWRITING_MODEL_DIR}${MANIFEST_FILE}`) && existsSync(`${DEFAULT_MODEL_DIR}${MANIFEST_FILE}`))
    return loadModelSpec(DEFAULT_MODEL_DIR);
  return builtinModelSpec();
}
