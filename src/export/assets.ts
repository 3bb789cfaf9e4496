// The font and ICC profile embedded into every PDF (see assets/README.md), read once.
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export const ASSET_DIR = path.resolve(import.meta.dirname, '../../assets');
export const TEXT_LAYER_FONT_PATH = path.join(ASSET_DIR, 'fonts/NotoSans-Regular.ttf');
export const SRGB_ICC_PATH = path.join(ASSET_DIR, 'icc/sRGB.icc');

export interface PdfAssets {
  fontBytes: Uint8Array;
  iccProfile: Uint8Array;
}

let loaded: Promise<PdfAssets> | null = null;

export function loadPdfAssets(): Promise<PdfAssets> {
  loaded ??= Promise.all([readFile(TEXT_LAYER_FONT_PATH), readFile(SRGB_ICC_PATH)]).then(([fontBytes, iccProfile]) => ({
    fontBytes,
    iccProfile,
  }));
  loaded.catch(() => {
    loaded = null;
  });
  return loaded;
}
