// Names of the files in the result archive (documented in docs/result-archive.md):
//   page/0001_<stem>.xml   PAGE XML 2019-07-15
//   alto/0001_<stem>.xml   ALTO 4.4
//   text/0001_<stem>.txt   plain text, UTF-8
//   <job_id>.txt           the job's text: every page's, in order
//   <job_id>.tei.xml       TEI P5: facsimile (surfaces, zones) and text (pb, lb)
//   <job_id>.pdf           searchable PDF/A-2b (or plain PDF; absent for pdf_format=none)
//   manifest.json          written last
// `<stem>` is the source image's file name without directories and extension, reduced to
// letters, digits, `.`, `_` and `-`; the number is the page number, zero-padded to at least 4.
import path from 'node:path';

export const MANIFEST_PATH = 'manifest.json';

export interface PageFileNames {
  page: string;
  alto: string;
  text: string;
}

export function pageFileNames(pageNumber: number, pageCount: number, sourceName: string): PageFileNames {
  const base = `${String(pageNumber).padStart(Math.max(4, String(pageCount).length), '0')}_${fileStem(sourceName)}`;
  return { page: `page/${base}.xml`, alto: `alto/${base}.xml`, text: `text/${base}.txt` };
}

export function pdfFileName(jobId: string): string {
  return `${fileStem(jobId)}.pdf`;
}

/** The job-level text file and TEI file (docs/result-archive.md). */
export function jobFileNames(jobId: string): { text: string; tei: string } {
  const stem = fileStem(jobId);
  return { text: `${stem}.txt`, tei: `${stem}.tei.xml` };
}

export function fileStem(sourceName: string): string {
  const file = path.posix.basename(sourceName.replace(/\\/g, '/'));
  const extension = path.posix.extname(file);
  const stem = (extension.length > 0 && extension.length < file.length ? file.slice(0, -extension.length) : file)
    .normalize('NFC')
    .replace(/[^\p{L}\p{N}._-]+/gu, '_')
    .replace(/^[._]+|_+$/g, '');
  const short = [...stem].slice(0, 80).join('');
  return short.length > 0 ? short : 'page';
}
