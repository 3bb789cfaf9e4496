// The page image the `best` tier may send: auto-oriented (and turned upright where the page was
// read turned), fitted inside
// MAX_SIDE pixels (enough to read handwriting; a larger image costs more tokens
// and upload time for no gain) and re-encoded as JPEG, which every provider
// accepts (TIFF, for one, is not).
import { openImage } from '../image/open-image.ts';
import type { PageTurn } from '../reading/page-turn.ts';

export const MAX_SIDE = 2048;
const JPEG_QUALITY = 85;

export interface PageImage {
  mimeType: 'image/jpeg';
  data: Buffer;
  width: number;
  height: number;
}

/** The page image, turned clockwise by `turn` where the page was read turned (PageResult.orientation), so that the model sees it upright. */
export async function pageImageOf(source: Buffer, turn: PageTurn): Promise<PageImage> {
  const oriented = (await openImage(source, { failOn: 'none' })).autoOrient();
  const { data, info } = await (turn === 0 ? oriented : oriented.rotate(turn))
    .resize({ width: MAX_SIDE, height: MAX_SIDE, fit: 'inside', withoutEnlargement: true })
    .jpeg({ quality: JPEG_QUALITY })
    .toBuffer({ resolveWithObject: true });
  return { mimeType: 'image/jpeg', data, width: info.width, height: info.height };
}
