// Intake of an uploaded scan ZIP: checks it (docs/intake.md lists every rule) and stores
// each page image in the blob store under `<keyPrefix>/<0001>.<ext>`, in natural order of
// the entry paths. Nothing is trusted from the ZIP headers alone: sizes, ratios and CRCs are
// checked on the bytes actually inflated, and images are recognised by content.
import { createHash } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import sharp, { type Metadata } from 'sharp';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Config } from '../platform/config.ts';
import type { PageSource } from '../../domain/events.ts';
import { checkEntryPath, isDirectoryPath, isJunkPath } from '../shared/entry-path.ts';
import { ACCEPTED_FORMAT_NAMES, detectImageType, IMAGE_SNIFF_BYTES, unsupportedFormatName } from './image-type.ts';
import { IntakeError, quoteName, uploadTooLargeError } from './intake-error.ts';
import { sortPathsNaturally } from '../shared/natural-sort.ts';
import { isLayoutError, MAX_LAYOUT_BYTES } from '../recognition/layout/uploaded-layout.ts';
import { readUploadedLayout } from '../recognition/layout/uploaded-layout-thread.ts';
import { type ByteReader, jpeg2000TooLarge, readJpeg2000Header, unsupportedJpeg2000 } from '../recognition/image/jpeg2000-header.ts';
import { MIN_PAGE_SIDE } from '../recognition/image/prepare-image.ts';

export interface IntakeOptions {
  limits: Config['limits'];
  blobs: BlobStore;
  /** Where pages go, e.g. `jobs/<job_id>/pages`; deleted again if intake fails. */
  keyPrefix: string;
  signal?: AbortSignal;
  /** The upload's name in error details (the client's file name, or the form field). */
  uploadName?: string;
}

/**
 * Small entries may be very compressible (a blank page, a tiny PNG stored deflated): the
 * compression-ratio rule applies only once an entry has inflated past this many bytes.
 */
export const RATIO_GRACE_BYTES = 1024 * 1024;

/** Entries read from the central directory at most: pages plus room for folders and OS junk. */
export function maxZipEntries(maxPages: number): number {
  return maxPages * 4 + 1000;
}

/** An entry that passed the central directory's checks (ground-truth-zip.ts reads the same). */
export interface Candidate {
  entry: Entry;
  /** The entry path, `/`-separated. */
  path: string;
}

export async function intakeScanZip(zipPath: string, options: IntakeOptions): Promise<PageSource[]> {
  const { limits, signal } = options;
  const uploadName = options.uploadName ?? 'scan_zip';
  signal?.throwIfAborted();

  const { zip, size } = await openUploadedZip(zipPath, limits, uploadName);
  try {
    const entries = await readCandidates(zip, limits, uploadName, size);
    const { candidates, layouts } = pairLayouts(entries);
    if (candidates.length === 0) {
      throw new IntakeError(
        'no_images',
        `${quoteName(uploadName)} contains no images (OS junk such as __MACOSX/ and .DS_Store is ignored)`,
      );
    }
    if (candidates.length > limits.maxPages) {
      throw new IntakeError(
        'too_many_pages',
        `${quoteName(uploadName)} has ${candidates.length} files; at most ${limits.maxPages} pages are accepted in one upload`,
        { setting: 'MAX_PAGES' },
      );
    }
    const ordered = sortPathsNaturally(candidates, (candidate) => candidate.path);
    const digits = Math.max(4, String(ordered.length).length);
    const progress = { inflatedBytes: 0, archiveBytes: size };
    const pages: PageSource[] = [];
    try {
      for (const [index, candidate] of ordered.entries()) {
        signal?.throwIfAborted();
        const pageNumber = index + 1;
        const keyStem = `${options.keyPrefix}/${String(pageNumber).padStart(digits, '0')}`;
        const page = await storePage(zip, candidate, pageNumber, keyStem, options, progress);
        const layout = layouts.get(candidate);
        if (layout) {
          signal?.throwIfAborted();
          page.source.layoutBlobKey = await storeLayout(zip, layout, page.size, `${keyStem}.layout.xml`, options, progress);
        }
        pages.push(page.source);
      }
    } catch (error) {
      await options.blobs.deletePrefix(options.keyPrefix).catch(() => undefined);
      throw error;
    }
    return pages;
  } finally {
    zip.close();
  }
}

/**
 * Bring your own layout: an `.xml` entry (any case) with the same path but for the extension as
 * an image entry is that page's layout (PageXML or ALTO), not a page; one matching no image,
 * or several, is refused. Which entry is an image is only known from its content later: an
 * `.xml` that pairs with a non-image is refused there as the non-image it pairs with would be.
 */
function pairLayouts(entries: Candidate[]): { candidates: Candidate[]; layouts: Map<Candidate, Candidate> } {
  const isXml = (candidate: Candidate): boolean => /\.xml$/i.test(candidate.path);
  const stem = (path: string): string => path.replace(/\.[^./]*$/, '');
  const candidates = entries.filter((candidate) => !isXml(candidate));
  const byStem = new Map<string, Candidate[]>();
  for (const candidate of candidates) byStem.set(stem(candidate.path), [...(byStem.get(stem(candidate.path)) ?? []), candidate]);
  const layouts = new Map<Candidate, Candidate>();
  for (const layout of entries.filter(isXml)) {
    const images = byStem.get(stem(layout.path)) ?? [];
    if (images.length !== 1) {
      throw new IntakeError(
        'layout_unmatched',
        images.length === 0
          ? `entry ${quoteName(layout.path)} is an XML file but no image has the name ${quoteName(stem(layout.path))} with an image extension; a page's layout (PageXML or ALTO) must sit next to its image with the same name`
          : `entry ${quoteName(layout.path)} could be the layout of ${images.map((image) => quoteName(image.path)).join(' or ')}; give each image its own name`,
        { entry: layout.path },
      );
    }
    layouts.set(images[0], layout);
  }
  return { candidates, layouts };
}

/** An uploaded ZIP opened for intake, and its size: refused when the file or its entry count is over the limits. */
export async function openUploadedZip(
  zipPath: string,
  limits: Config['limits'],
  uploadName: string,
): Promise<{ zip: ZipFile; size: number }> {
  const { size } = await stat(zipPath);
  if (size > limits.maxUploadBytes) throw uploadTooLargeError(limits.maxUploadBytes, uploadName);
  const zip = await openZip(zipPath, uploadName);
  if (zip.entryCount > maxZipEntries(limits.maxPages)) {
    zip.close();
    throw new IntakeError(
      'too_many_entries',
      `${quoteName(uploadName)} has ${zip.entryCount} entries; at most ${maxZipEntries(limits.maxPages)} are accepted`,
      { setting: 'MAX_PAGES' },
    );
  }
  return { zip, size };
}

function openZip(zipPath: string, uploadName: string): Promise<ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(
      zipPath,
      // decodeStrings: false so that unsafe names reach our own checks (with a precise error)
      // instead of failing inside yauzl; names are decoded in readCandidates.
      { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true, strictFileNames: true },
      (error, zip) => (error ? reject(zipLevelError(error, uploadName)) : resolve(zip)),
    );
  });
}

function zipLevelError(error: Error, uploadName: string): IntakeError {
  if (/strong encryption/i.test(error.message)) {
    return new IntakeError('encrypted_zip', `${quoteName(uploadName)} uses strong encryption; submit an unencrypted ZIP`, { cause: error });
  }
  if (/end of central directory record signature not found/i.test(error.message)) {
    return new IntakeError('invalid_zip', `${quoteName(uploadName)} is not a ZIP archive (or is truncated)`, { cause: error });
  }
  return new IntakeError('invalid_zip', `${quoteName(uploadName)} is a damaged ZIP archive: ${error.message}`, { cause: error });
}

function entryName(entry: Entry): string {
  // With decodeStrings: false yauzl leaves names as bytes; decode as yauzl would
  // (UTF-8 flag, Info-ZIP Unicode path field, else CP437) but keep backslashes.
  return yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, true);
}

function isSymbolicLink(entry: Entry): boolean {
  const madeByUnix = entry.versionMadeBy >> 8 === 3;
  return madeByUnix && ((entry.externalFileAttributes >>> 16) & 0o170000) === 0o120000;
}

function isDirectoryEntry(entry: Entry, path: string): boolean {
  const msDosDirectory = (entry.externalFileAttributes & 0x10) !== 0 && entry.uncompressedSize === 0;
  return isDirectoryPath(path) || msDosDirectory;
}

/** Reads the central directory, applies every rule that needs no decompression, returns the page candidates. */
export function readCandidates(zip: ZipFile, limits: Config['limits'], uploadName: string, archiveBytes: number): Promise<Candidate[]> {
  return new Promise((resolve, reject) => {
    const candidates: Candidate[] = [];
    const seen = new Set<string>();
    let declaredTotal = 0;
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      reject(error);
    };

    zip.on('error', (error: Error) => fail(zipLevelError(error, uploadName)));
    zip.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(candidates);
    });
    zip.on('entry', (entry: Entry) => {
      if (settled) return;
      try {
        const candidate = checkEntry(entry);
        if (candidate) candidates.push(candidate);
        zip.readEntry();
      } catch (error) {
        fail(error);
      }
    });
    zip.readEntry();

    function checkEntry(entry: Entry): Candidate | null {
      const name = entryName(entry);
      const checked = checkEntryPath(name);
      if (!checked.safe) {
        // A name refused for its length is not echoed whole.
        const shown = name.length > 256 ? `${name.slice(0, 256)}…` : name;
        throw new IntakeError('unsafe_path', `entry ${quoteName(shown)} ${checked.reason}`, { entry: shown });
      }
      const path = checked.path;
      if (isDirectoryEntry(entry, path) || isJunkPath(path)) return null;
      if (isSymbolicLink(entry)) throw new IntakeError('unsafe_path', `entry ${quoteName(path)} is a symbolic link`, { entry: path });
      if (entry.isEncrypted()) {
        throw new IntakeError('encrypted_zip', `entry ${quoteName(path)} is encrypted (password-protected); submit an unencrypted ZIP`, {
          entry: path,
        });
      }
      if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
        throw new IntakeError(
          'unsupported_compression',
          `entry ${quoteName(path)} uses compression method ${entry.compressionMethod}; only stored (0) and deflate (8) are supported`,
          { entry: path },
        );
      }
      if (seen.has(path)) throw new IntakeError('duplicate_entry', `entry ${quoteName(path)} appears more than once`, { entry: path });
      seen.add(path);
      checkInflatedSize(path, entry.uncompressedSize, entry.compressedSize, limits, 'declares');
      declaredTotal += entry.uncompressedSize;
      if (declaredTotal > limits.maxUncompressedBytes) {
        throw new IntakeError(
          'zip_bomb',
          `${quoteName(uploadName)} declares more than ${limits.maxUncompressedBytes} bytes uncompressed in total, the most an upload may hold`,
          { entry: path, setting: 'MAX_UNCOMPRESSED_BYTES' },
        );
      }
      checkArchiveRatio(uploadName, declaredTotal, archiveBytes, limits, 'declares', path);
      return { entry, path };
    }
  });
}

function checkInflatedSize(
  path: string,
  inflated: number,
  compressed: number,
  limits: Config['limits'],
  verb: 'declares' | 'inflates to',
): void {
  if (inflated > limits.maxUncompressedBytes) {
    throw new IntakeError(
      'zip_bomb',
      `entry ${quoteName(path)} ${verb} more than ${limits.maxUncompressedBytes} bytes uncompressed, the most an upload may hold`,
      { entry: path, setting: 'MAX_UNCOMPRESSED_BYTES' },
    );
  }
  if (inflated > RATIO_GRACE_BYTES && inflated / Math.max(1, compressed) > limits.maxCompressionRatio) {
    throw new IntakeError(
      'zip_bomb',
      `entry ${quoteName(path)} ${verb} ${inflated} bytes from ${compressed} compressed, a ratio above ${limits.maxCompressionRatio}`,
      { entry: path, setting: 'MAX_COMPRESSION_RATIO' },
    );
  }
}

/**
 * The ratio rule for the archive as a whole: many small entries, each under the per-entry grace,
 * must not add up to a bomb (100 entries of 1 MiB from 312 KiB was one).
 */
function checkArchiveRatio(
  uploadName: string,
  inflated: number,
  archiveBytes: number,
  limits: Config['limits'],
  verb: 'declares' | 'inflates to',
  entry: string,
): void {
  if (inflated > RATIO_GRACE_BYTES && inflated / Math.max(1, archiveBytes) > limits.maxCompressionRatio) {
    throw new IntakeError(
      'zip_bomb',
      `${quoteName(uploadName)} ${verb} ${inflated} bytes or more from a ${archiveBytes}-byte archive, a ratio above ${limits.maxCompressionRatio}`,
      { entry, setting: 'MAX_COMPRESSION_RATIO' },
    );
  }
}

export function openEntryStream(zip: ZipFile, candidate: Candidate): Promise<Readable> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(candidate.entry, (error, stream) => (error ? reject(entryReadError(error, candidate.path)) : resolve(stream)));
  });
}

export function entryReadError(error: unknown, path: string): unknown {
  if (error instanceof IntakeError || (error as Error)?.name === 'AbortError') return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/too many bytes in the stream/i.test(message)) {
    return new IntakeError('zip_bomb', `entry ${quoteName(path)} inflates to more bytes than its header declares`, {
      entry: path,
      cause: error,
    });
  }
  return new IntakeError('invalid_zip', `entry ${quoteName(path)} is damaged: ${message}`, { entry: path, cause: error });
}

export async function storePage(
  zip: ZipFile,
  candidate: Candidate,
  pageNumber: number,
  keyStem: string,
  options: IntakeOptions,
  progress: { inflatedBytes: number; archiveBytes: number },
): Promise<{ source: PageSource; size: { width: number; height: number } }> {
  const { path, entry } = candidate;
  const { limits, signal } = options;
  const stream = await openEntryStream(zip, candidate);
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const hash = createHash('sha256');
  let crc = 0;
  let bytes = 0;

  const next = async (): Promise<Buffer | null> => {
    let result: IteratorResult<Buffer>;
    try {
      result = await chunks.next();
    } catch (error) {
      throw entryReadError(error, path);
    }
    if (result.done) return null;
    const chunk = result.value;
    signal?.throwIfAborted();
    bytes += chunk.length;
    progress.inflatedBytes += chunk.length;
    checkInflatedSize(path, bytes, entry.compressedSize, limits, 'inflates to');
    checkArchiveRatio(options.uploadName ?? 'scan_zip', progress.inflatedBytes, progress.archiveBytes, limits, 'inflates to', path);
    if (progress.inflatedBytes > limits.maxUncompressedBytes) {
      throw new IntakeError(
        'zip_bomb',
        `the archive inflates to more than ${limits.maxUncompressedBytes} bytes in total, the most an upload may hold`,
        { entry: path, setting: 'MAX_UNCOMPRESSED_BYTES' },
      );
    }
    hash.update(chunk);
    crc = crc32(chunk, crc);
    return chunk;
  };

  try {
    const headChunks: Buffer[] = [];
    let headLength = 0;
    while (headLength < IMAGE_SNIFF_BYTES) {
      const chunk = await next();
      if (chunk === null) break;
      headChunks.push(chunk);
      headLength += chunk.length;
    }
    const head = Buffer.concat(headChunks);
    const type = detectImageType(head);
    if (type.kind === 'unsupported') {
      throw new IntakeError(
        'unsupported_image_format',
        `entry ${quoteName(path)} is a ${unsupportedFormatName(type.format)} file; pages must be ${ACCEPTED_FORMAT_NAMES} images`,
        { entry: path },
      );
    }
    if (type.kind === 'unknown') {
      const what = head.length === 0 ? 'is empty' : 'is not an image';
      throw new IntakeError('not_an_image', `entry ${quoteName(path)} ${what}; pages must be ${ACCEPTED_FORMAT_NAMES} images`, {
        entry: path,
      });
    }

    const blobKey = `${keyStem}.${type.extension}`;
    async function* body(): AsyncGenerator<Buffer> {
      yield head;
      for (let chunk = await next(); chunk !== null; chunk = await next()) yield chunk;
    }
    await options.blobs.put(blobKey, Readable.from(body(), { objectMode: false }));

    if (crc >>> 0 !== entry.crc32 >>> 0) {
      throw new IntakeError('invalid_zip', `entry ${quoteName(path)} is damaged (CRC-32 mismatch)`, { entry: path });
    }
    const size = await options.blobs.withLocalFile(blobKey, (file) => checkImageHeader(file, path, type.format, limits));
    return { source: { pageNumber, name: path, blobKey, sha256: hash.digest('hex'), bytes }, size };
  } finally {
    stream.destroy();
  }
}

/** Checks the header; returns the size of the page as the pipeline sees it (EXIF orientation applied). */
async function checkImageHeader(
  file: string,
  path: string,
  format: string,
  limits: Config['limits'],
): Promise<{ width: number; height: number }> {
  let metadata: Pick<Metadata, 'width' | 'height' | 'pages' | 'orientation'>;
  try {
    // No pixel limit here: the image is measured below to give our own error.
    metadata =
      format === 'jp2' || format === 'j2k' ? await jpeg2000Size(file, path) : await sharp(file, { limitInputPixels: false }).metadata();
  } catch (error) {
    if (error instanceof IntakeError) throw error;
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new IntakeError(
      'unreadable_image',
      `entry ${quoteName(path)} looks like ${format.toUpperCase()} but its header cannot be read (${reason})`,
      {
        entry: path,
        cause: error,
      },
    );
  }
  const { width, height } = metadata;
  if (!width || !height) {
    throw new IntakeError('unreadable_image', `entry ${quoteName(path)} has no readable width and height`, { entry: path });
  }
  if ((metadata.pages ?? 1) > 1) {
    throw new IntakeError(
      'multi_page_image',
      `entry ${quoteName(path)} holds ${metadata.pages} pages or frames; submit one image per page`,
      {
        entry: path,
      },
    );
  }
  if (width * height > limits.maxImagePixels) {
    throw new IntakeError(
      'image_too_large',
      `entry ${quoteName(path)} is ${width}×${height} pixels, more than ${limits.maxImagePixels}, the most a page may have`,
      { entry: path, setting: 'MAX_IMAGE_PIXELS' },
    );
  }
  // A 1×1 image was accepted and failed its job later; the pipeline's own minimum, refused here.
  if (width < MIN_PAGE_SIDE || height < MIN_PAGE_SIDE) {
    throw new IntakeError(
      'image_too_small',
      `entry ${quoteName(path)} is ${width}×${height} pixels; a page image needs at least ${MIN_PAGE_SIDE} pixels a side`,
      { entry: path },
    );
  }
  const swap = (metadata.orientation ?? 1) >= 5;
  return { width: swap ? height : width, height: swap ? width : height };
}

const JPEG2000_HEAD_BYTES = 1024 * 1024;

/** A JPEG 2000 image's size from its headers (sharp cannot read it); a variant we cannot read is refused here. */
async function jpeg2000Size(file: string, path: string): Promise<{ width: number; height: number; pages: number }> {
  const handle = await open(file, 'r');
  try {
    // The headers are in the first bytes of any real file: read them once, and the file only past them.
    const head = Buffer.alloc(JPEG2000_HEAD_BYTES);
    const headLength = (await handle.read(head, 0, head.length, 0)).bytesRead;
    const read: ByteReader = async (offset, length) => {
      if (offset + length <= headLength) return head.subarray(offset, offset + length);
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      return buffer.subarray(0, bytesRead);
    };
    const header = await readJpeg2000Header(read);
    const unsupported = unsupportedJpeg2000(header);
    if (unsupported) {
      throw new IntakeError('unsupported_image_format', `entry ${quoteName(path)} is a JPEG 2000 image we cannot read: ${unsupported}`, {
        entry: path,
      });
    }
    const tooLarge = jpeg2000TooLarge(header, (await handle.stat()).size);
    if (tooLarge)
      throw new IntakeError('image_too_large', `entry ${quoteName(path)} is a JPEG 2000 image too large to decode: ${tooLarge}`, {
        entry: path,
      });
    return { width: header.width, height: header.height, pages: 1 };
  } finally {
    await handle.close();
  }
}

/**
 * Inflates a page's layout file (at most MAX_LAYOUT_BYTES, under the same bomb and CRC checks
 * as images), checks it against the page image's size (uploaded-layout.ts), stores it.
 */
async function storeLayout(
  zip: ZipFile,
  candidate: Candidate,
  imageSize: { width: number; height: number },
  blobKey: string,
  options: IntakeOptions,
  progress: { inflatedBytes: number; archiveBytes: number },
): Promise<string> {
  const { path } = candidate;
  const xml = await inflateLayout(zip, candidate, options, progress);
  try {
    await readUploadedLayout(xml, imageSize, options.signal);
  } catch (error) {
    if (isLayoutError(error))
      throw new IntakeError(error.code, `entry ${quoteName(path)}: ${error.message}`, { entry: path, cause: error });
    throw error;
  }
  await options.blobs.put(blobKey, Readable.from([xml]));
  return blobKey;
}

/** A layout file's bytes: at most MAX_LAYOUT_BYTES, under the same bomb and CRC checks as images. */
export async function inflateLayout(
  zip: ZipFile,
  candidate: Candidate,
  options: Pick<IntakeOptions, 'limits' | 'signal' | 'uploadName'>,
  progress: { inflatedBytes: number; archiveBytes: number },
): Promise<Buffer> {
  const { path, entry } = candidate;
  const { limits, signal } = options;
  if (entry.uncompressedSize > MAX_LAYOUT_BYTES) {
    throw new IntakeError(
      'layout_too_large',
      `entry ${quoteName(path)} declares ${entry.uncompressedSize} bytes; a layout file may have at most ${MAX_LAYOUT_BYTES}`,
      { entry: path },
    );
  }
  const stream = await openEntryStream(zip, candidate);
  const chunks: Buffer[] = [];
  let bytes = 0;
  let crc = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      signal?.throwIfAborted();
      bytes += chunk.length;
      progress.inflatedBytes += chunk.length;
      if (bytes > MAX_LAYOUT_BYTES) {
        throw new IntakeError(
          'layout_too_large',
          `entry ${quoteName(path)} is larger than ${MAX_LAYOUT_BYTES} bytes, the most a layout file may have`,
          { entry: path },
        );
      }
      checkInflatedSize(path, bytes, entry.compressedSize, limits, 'inflates to');
      checkArchiveRatio(options.uploadName ?? 'scan_zip', progress.inflatedBytes, progress.archiveBytes, limits, 'inflates to', path);
      crc = crc32(chunk, crc);
      chunks.push(chunk);
    }
  } catch (error) {
    throw entryReadError(error, path);
  } finally {
    stream.destroy();
  }
  if (crc >>> 0 !== entry.crc32 >>> 0)
    throw new IntakeError('invalid_zip', `entry ${quoteName(path)} is damaged (CRC-32 mismatch)`, { entry: path });
  return Buffer.concat(chunks);
}
