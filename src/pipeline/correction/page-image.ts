// The page image the `best` tier may send: auto-oriented, fitted inside
// MAX_SIDE pixels (enough to read handwriting; a larger image costs more tokens
// and upload time for no gain) and re-encoded as JPEG, which every provider
// accepts (TIFF, for one, is not).
import sharp from 'sharp';
import type { BlobStore } from '../../blobs/blob-store.ts';

export const MAX_SIDE = 2048;
const JPEG_QUALITY = 85;

export interface PageImage {
  mimeType: 'image/jpeg';
  data: Buffer;
  width: number;
  height: number;
}

export async function loadPageImage(blobs: BlobStore, key: string): Promise<PageImage> {
  const source = await blobs.get(key);
  const { data, info } = await sharp(source, { failOn: 'none' })
    .rotate()
    .resize({ width: MAX_SIDE, height: MAX_SIDE, fit: 'inside', withoutEnlargement: true })
    .jpeg({ quality: JPEG_QUALITY })
    .toBuffer({ resolveWithObject: true });
  return { mimeType: 'image/jpeg', data, width: info.width, height: info.height };
}
