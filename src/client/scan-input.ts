// What `hwr submit PATH…` uploads: one ZIP as it is, or image files and folders of images
// zipped on the fly into a temp file. Entry names are the files' names (a folder's images
// keep their path below the folder), added in natural order, the order the service gives
// the pages (`2.jpg` before `10.jpg`, docs/intake.md). `hwr models train PATH…` zips ground
// truth the same way, with every PageXML or ALTO file of its folders where it lies (a
// Transkribus export's `page/p1.xml` beside `p1.jpg`'s folder): the service pairs them
// (docs/models.md, "Ground truth").
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { isJunkPath } from '../shared/entry-path.ts';
import { sortPathsNaturally } from '../shared/natural-sort.ts';
import { IMAGE_EXTENSIONS } from '../shared/scan-files.ts';

export interface ScanInput {
  /** The ZIP to upload. */
  zipPath: string;
  /** Name the service sees. */
  filename: string;
  /** Images zipped here (0 for a ZIP given as it is). */
  images: number;
  /** Layout files zipped with their images: `p1.xml` beside `p1.jpg` (docs/intake.md, "Bring your own layout"). */
  layouts: number;
  bytes: number;
  /** Removes a temp ZIP (nothing for a given one). */
  cleanUp(): Promise<void>;
}

export class ScanInputError extends Error {}

export interface ScanInputOptions {
  /**
   * Ground truth for a training (`hwr models train`): every `.xml` file of a folder is zipped too,
   * at its path below the folder, and `.xml` files may be given as files; the service pairs each
   * with its image and names what it ignores.
   */
  groundTruth?: boolean;
}

export async function prepareScan(paths: string[], options: ScanInputOptions = {}): Promise<ScanInput> {
  const groundTruth = options.groundTruth === true;
  const what = groundTruth
    ? 'a ZIP, a folder of images with their PageXML or ALTO files, or such files'
    : 'a ZIP, a folder of images, or image files';
  if (paths.length === 0) throw new ScanInputError(`no PATH: give ${what}`);
  const zips = paths.filter((entry) => entry.toLowerCase().endsWith('.zip'));
  if (zips.length > 0) {
    if (paths.length > 1) throw new ScanInputError('a ZIP is uploaded as it is: give it alone, or give images and folders');
    const info = await statOrThrow(zips[0]);
    if (!info.isFile()) throw new ScanInputError(`${zips[0]} is not a file`);
    return { zipPath: zips[0], filename: path.basename(zips[0]), images: 0, layouts: 0, bytes: info.size, cleanUp: async () => {} };
  }
  const entries: { name: string; file: string }[] = [];
  const xmlFiles: { name: string; file: string }[] = [];
  for (const given of paths) {
    const info = await statOrThrow(given);
    if (info.isDirectory()) {
      const { images, xml } = await filesUnder(given);
      const named = (file: string) => ({ name: path.relative(given, file).split(path.sep).join('/'), file });
      entries.push(...images.map(named));
      if (groundTruth) xmlFiles.push(...xml.map(named));
    } else if (IMAGE_EXTENSIONS.has(path.extname(given).toLowerCase())) {
      entries.push({ name: path.basename(given), file: given });
    } else if (groundTruth && path.extname(given).toLowerCase() === '.xml') {
      xmlFiles.push({ name: path.basename(given), file: given });
    } else {
      throw new ScanInputError(
        `${given}: not an image (${[...IMAGE_EXTENSIONS].join(' ')}${groundTruth ? '), a PageXML or ALTO file (.xml' : ''}), a folder or a ZIP`,
      );
    }
  }
  if (entries.length === 0) throw new ScanInputError(`no images in ${paths.join(' ')}`);
  const seen = new Map<string, string>();
  for (const entry of [...entries, ...xmlFiles]) {
    const other = seen.get(entry.name);
    if (other !== undefined)
      throw new ScanInputError(`two pages would be named ${entry.name} (${other} and ${entry.file}); give their folder instead`);
    seen.set(entry.name, entry.file);
  }
  // An image's layout beside it goes with it, unless it is in the ZIP already (ground truth: a folder's XML files).
  const taken = new Set(xmlFiles.map((entry) => path.resolve(entry.file)));
  const layouts = [...xmlFiles, ...(await layoutsBeside(entries)).filter((layout) => !taken.has(path.resolve(layout.file)))];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hwr-submit-'));
  const zipPath = path.join(dir, 'scan.zip');
  const zip = new yazl.ZipFile();
  // Scans are already compressed images: store them.
  for (const entry of sortPathsNaturally(entries, (item) => item.name)) zip.addFile(entry.file, entry.name, { compress: false });
  for (const layout of layouts) {
    if (!seen.has(layout.name)) seen.set(layout.name, layout.file);
    else if (seen.get(layout.name) !== layout.file)
      throw new ScanInputError(`two files would be named ${layout.name} (${seen.get(layout.name)} and ${layout.file})`);
    zip.addFile(layout.file, layout.name);
  }
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(zipPath));
  const name = paths.length === 1 ? `${path.basename(path.resolve(paths[0])).replace(/\.[^.]*$/, '')}.zip` : 'scan.zip';
  return {
    zipPath,
    filename: name,
    images: entries.length,
    layouts: layouts.length,
    bytes: (await stat(zipPath)).size,
    cleanUp: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A folder's images and XML files, at any depth; hidden and system files skipped. */
async function filesUnder(folder: string): Promise<{ images: string[]; xml: string[] }> {
  const images: string[] = [];
  const xml: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const relative = path.relative(folder, file).split(path.sep).join('/');
    if (isJunkPath(relative) || relative.split('/').some((segment) => segment.startsWith('.'))) continue;
    const extension = path.extname(entry.name).toLowerCase();
    if (IMAGE_EXTENSIONS.has(extension)) images.push(file);
    else if (extension === '.xml') xml.push(file);
  }
  return { images, xml };
}

/**
 * The page's own layout file, where an image has one beside it with the same name and `.xml`
 * (`p1.jpg`, `p1.xml`), named as its image is in the ZIP: the service then keeps its regions and
 * lines. Not when two images share the name (`p1.jpg` and `p1.png`): whose layout would it be?
 */
async function layoutsBeside(images: { name: string; file: string }[]): Promise<{ name: string; file: string }[]> {
  const stem = (file: string) => file.slice(0, file.length - path.extname(file).length);
  // Shared stems, on disk and in the ZIP (`a/p1.png` and `b/p1.jp2` given as files are both `p1.*`).
  const count = (keys: string[]) => keys.reduce((counts, key) => counts.set(key, (counts.get(key) ?? 0) + 1), new Map<string, number>());
  const onDisk = count(images.map((image) => stem(image.file)));
  const inZip = count(images.map((image) => stem(image.name)));
  const layouts: { name: string; file: string }[] = [];
  for (const image of images) {
    if (onDisk.get(stem(image.file)) !== 1 || inZip.get(stem(image.name)) !== 1) continue;
    const xml = `${stem(image.file)}.xml`;
    const info = await stat(xml).catch(() => null);
    if (info?.isFile()) layouts.push({ name: `${stem(image.name)}.xml`, file: xml });
  }
  return layouts;
}

async function statOrThrow(file: string) {
  try {
    return await stat(file);
  } catch {
    throw new ScanInputError(`${file}: no such file or folder`);
  }
}
