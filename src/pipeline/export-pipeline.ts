// The export task: reads the job's stored page results one at a time and streams the result
// archive (docs/result-archive.md) into the blob store. Memory stays flat in the page count:
// pass 1 writes each page's PAGE XML, ALTO and text; pass 2 streams the PDF page by page into
// its ZIP entry; the manifest comes last. The same inputs give the same archive bytes.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Transform } from 'node:stream';
import yazl from 'yazl';
import { BlobNotFoundError } from '../blobs/blob-store.ts';
import type { ExportContext, ExportOutcome, ExportPipeline, ExportTask } from './pipeline.ts';
import { renderAlto } from '../export/alto.ts';
import { jobFileNames, MANIFEST_PATH, pageFileNames, pdfFileName } from '../export/archive-layout.ts';
import { loadPdfAssets, type PdfAssets } from '../export/assets.ts';
import { ExportError } from '../export/errors.ts';
import { applyCorrections, correctedLineCount, prepareExportPage } from '../export/export-page.ts';
import { ManifestBuilder } from '../export/manifest.ts';
import { readPageResult } from './page-result-reader.ts';
import { renderPageXml } from '../export/pagexml.ts';
import { SearchablePdfWriter } from '../export/pdf/searchable-pdf.ts';
import { renderJobText, renderPlainText } from '../export/plain-text.ts';
import { TeiBuilder } from '../export/tei.ts';

export interface ExportPipelineOptions {
  /** Font and ICC profile for the PDF; default: the ones under assets/. */
  assets?: () => Promise<PdfAssets>;
}

export function createExportPipeline(options: ExportPipelineOptions = {}): ExportPipeline {
  const assets = options.assets ?? loadPdfAssets;
  return {
    exportJob: (task, context) => exportJob(task, context, assets),
  };
}

async function exportJob(task: ExportTask, context: ExportContext, assets: () => Promise<PdfAssets>): Promise<ExportOutcome> {
  const started = performance.now();
  const { blobs, signal, log } = context;
  signal.throwIfAborted();
  if (task.pages.length === 0) throw new Error(`export task for job ${task.jobId} has no pages`);
  const pages = [...task.pages].sort((a, b) => a.source.pageNumber - b.source.pageNumber);
  const createdAt = new Date(task.createdAt);
  if (Number.isNaN(createdAt.getTime())) throw new Error(`export task for job ${task.jobId}: bad createdAt ${task.createdAt}`);
  const pdfAssets = task.options.pdfFormat === 'none' ? null : await assets();

  const zip = new yazl.ZipFile();
  const output = zip.outputStream as unknown as PassThrough;
  const archiveHash = createHash('sha256');
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      archiveHash.update(chunk);
      callback(null, chunk);
    },
  });
  output.on('error', (error) => hashing.destroy(error));
  zip.on('error', (error: Error) => hashing.destroy(error));
  const stored = blobs.put(task.archiveKey, output.pipe(hashing));
  stored.catch(() => undefined); // awaited below; this only keeps an early failure from being unhandled

  const manifest = new ManifestBuilder();
  const tei = new TeiBuilder();
  const pageTexts: string[] = [];
  let producer = '';
  let software = { name: 'hwr', version: 'unknown' };
  const entry = { mtime: createdAt, mode: 0o100644 };
  const addFile = (path: string, body: Buffer, mediaType: string): void => {
    zip.addBuffer(body, path, { ...entry, compress: true });
    manifest.addFile({ path, bytes: body.length, sha256: sha256(body), media_type: mediaType });
  };

  try {
    // Pass 1: the per-page XML and text files.
    for (const { source, resultKey } of pages) {
      signal.throwIfAborted();
      const result = await readPageResult(blobs, resultKey, source.pageNumber);
      if (result.pageNumber !== source.pageNumber) {
        throw new ExportError('page_result_invalid', `page ${source.pageNumber}: the stored page result is for page ${result.pageNumber}`, {
          pageNumber: source.pageNumber,
        });
      }
      const page = applyCorrections(prepareExportPage(result), task.corrections?.lines[source.pageNumber]);
      if (!producer) software = { name: result.producer.software, version: result.producer.version };
      producer ||= `${result.producer.software} ${result.producer.version}`;
      const names = pageFileNames(source.pageNumber, pages.length, source.name);
      addFile(names.page, Buffer.from(renderPageXml(page, { timestamp: createdAt }), 'utf8'), 'application/vnd.prima.page+xml');
      addFile(names.alto, Buffer.from(renderAlto(page, { timestamp: createdAt }), 'utf8'), 'application/alto+xml');
      const text = renderPlainText(page);
      addFile(names.text, Buffer.from(text, 'utf8'), 'text/plain; charset=utf-8');
      pageTexts.push(text);
      tei.addPage(page, { pageNumber: source.pageNumber, name: source.name });
      const lines = page.regions.flatMap((region) => region.lines);
      manifest.addPage(
        {
          page_number: source.pageNumber,
          source: { name: source.name, sha256: source.sha256, bytes: source.bytes },
          image: { width: result.image.width, height: result.image.height, format: result.image.format, dpi: result.image.dpi },
          files: names,
          regions: page.regions.length,
          lines: lines.length,
          words: lines.reduce((sum, line) => sum + line.words.length, 0),
          corrected_lines: correctedLineCount(page),
          layout_source: result.layoutSource ?? 'detected',
          orientation: result.orientation ?? 0,
          warnings: result.warnings,
        },
        result,
      );
      if (output.writableNeedDrain) await once(output, 'drain', { signal });
    }

    // The job's text and TEI, built from pass 1.
    const jobFiles = jobFileNames(task.jobId);
    addFile(jobFiles.text, Buffer.from(renderJobText(pageTexts), 'utf8'), 'text/plain; charset=utf-8');
    const teiBody = tei.build({
      jobId: task.jobId,
      createdAt,
      software,
      correctionVersion: task.corrections?.version ?? 0,
    });
    addFile(jobFiles.tei, Buffer.from(teiBody, 'utf8'), 'application/tei+xml');
    manifest.setJobFiles(jobFiles);

    // Pass 2: the PDF, streamed page by page into its entry.
    if (pdfAssets && task.options.pdfFormat !== 'none') {
      const path = pdfFileName(task.jobId);
      const pdfStream = new PassThrough();
      zip.addReadStream(pdfStream, path, { ...entry, compressionLevel: 1 });
      const pdf = await SearchablePdfWriter.start(pdfStream, {
        format: task.options.pdfFormat,
        title: `Recognised text of job ${task.jobId}`,
        producer,
        created: createdAt,
        documentKey: task.jobId,
        ...pdfAssets,
      }).catch((error: unknown) => {
        pdfStream.destroy();
        throw error;
      });
      try {
        for (const { source, resultKey } of pages) {
          signal.throwIfAborted();
          const result = await readPageResult(blobs, resultKey, source.pageNumber);
          const image = await readImage(context, source.blobKey, source.pageNumber);
          const report = await pdf.addPage(applyCorrections(prepareExportPage(result), task.corrections?.lines[source.pageNumber]), image);
          if (report.sizeMismatch) log.warn({ job_id: task.jobId, page: source.pageNumber }, `PDF page: ${report.sizeMismatch}`);
        }
        const outcome = await pdf.finish();
        pdfStream.end();
        manifest.addFile({ path, bytes: outcome.bytes, sha256: outcome.sha256, media_type: 'application/pdf' });
        manifest.setPdf({ path, format: task.options.pdfFormat, pages: outcome.pages });
      } catch (error) {
        pdfStream.destroy();
        throw error;
      }
    }

    const body = manifest.build({
      jobId: task.jobId,
      createdAt,
      options: task.options,
      correctionVersion: task.corrections?.version ?? 0,
      fallbackSoftware: { name: 'hwr', version: 'unknown' },
    });
    zip.addBuffer(Buffer.from(`${JSON.stringify(body, null, 2)}\n`, 'utf8'), MANIFEST_PATH, { ...entry, compress: true });
    zip.end();
    const { bytes } = await stored;
    const outcome = {
      archiveKey: task.archiveKey,
      bytes,
      sha256: archiveHash.digest('hex'),
      correctedLines: body.corrections.corrected_lines,
    };
    log.info(
      { job_id: task.jobId, pages: pages.length, bytes, pdf_format: task.options.pdfFormat, ms: Math.round(performance.now() - started) },
      'result archive written',
    );
    return outcome;
  } catch (error) {
    hashing.destroy(error as Error);
    output.destroy();
    await stored.catch(() => undefined);
    throw error;
  }
}

async function readImage(context: ExportContext, key: string, pageNumber: number): Promise<Buffer> {
  try {
    return await context.blobs.get(key);
  } catch (error) {
    if (error instanceof BlobNotFoundError) {
      throw new ExportError('page_image_missing', `page ${pageNumber}: the page image is not stored (${key})`, {
        pageNumber,
        cause: error,
      });
    }
    throw error;
  }
}

function sha256(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}
