// The job's TEI P5 file (docs/result-archive.md, "TEI"; ADR 0037): the shape dariok's page2tei
// gives a Transkribus export, built page by page while the archive is written.
// - `facsimile`: one `surface` per page (`ulx`/`uly`/`lrx`/`lry` = the image, a `graphic` with the
//   source name), in it one `zone rendition="TextRegion"` per region with its polygon (`points`)
//   and, nested, one `zone rendition="Line"` per line; ids `facs_<page>_<id>` (PAGE's ids).
// - `text/body`: per page a `pb facs="#facs_<page>"`, per region a `p` (an `ab type=…` for other
//   region types), per line an `lb facs="#facs_<page>_<line>"` followed by the line's text: the
//   correction where a person corrected it (the `lb` then points to the header's `change`).
// Valid against tei_all.rng (TEI P5 4.3.0), checked by test/unit/export-tei.test.ts.
import type { ExportPage } from './export-page.ts';
import { formatPoints } from './export-page.ts';
import { escapeAttribute, escapeText, formatDateTime } from './xml.ts';

export const TEI_NAMESPACE = 'http://www.tei-c.org/ns/1.0';
/** The id of the header's `change` that corrected lines point to. */
const CORRECTIONS_CHANGE_ID = 'hwr_corrections';

export interface TeiJob {
  jobId: string;
  createdAt: Date;
  software: { name: string; version: string };
  /** The job's count of saved corrections the archive is built with (0: the machine's reading). */
  correctionVersion: number;
}

export interface TeiPageSource {
  pageNumber: number;
  /** The image's entry name in the submitted ZIP. */
  name: string;
}

export class TeiBuilder {
  private readonly surfaces: string[] = [];
  private readonly body: string[] = [];
  private correctedLines = 0;
  private pages = 0;
  private textBlocks = 0;

  addPage(page: ExportPage, source: TeiPageSource): void {
    const n = source.pageNumber;
    this.pages += 1;
    const surface = `facs_${n}`;
    const parts = [
      `    <surface xml:id="${surface}" n="${n}" ulx="0" uly="0" lrx="${page.width}" lry="${page.height}">\n`,
      `      <graphic url="${escapeAttribute(imageUrl(source.name))}" width="${page.width}px" height="${page.height}px"/>\n`,
    ];
    const body = [`      <pb facs="#${surface}" n="${n}" xml:id="img_${String(n).padStart(4, '0')}"/>\n`];
    let lineNumber = 0;
    for (const region of page.regions) {
      const regionZone = `${surface}_${region.id}`;
      const subtype = region.type ? ` subtype="${escapeAttribute(enumerated(region.type))}"` : '';
      if (region.lines.length === 0) {
        parts.push(`      <zone xml:id="${regionZone}" rendition="TextRegion"${subtype} points="${formatPoints(region.polygon)}"/>\n`);
        continue;
      }
      parts.push(`      <zone xml:id="${regionZone}" rendition="TextRegion"${subtype} points="${formatPoints(region.polygon)}">\n`);
      const paragraph = region.type === null || region.type === 'paragraph';
      body.push(
        paragraph
          ? `      <p facs="#${regionZone}">\n`
          : `      <ab facs="#${regionZone}" type="${escapeAttribute(enumerated(region.type ?? 'text'))}">\n`,
      );
      for (const line of region.lines) {
        lineNumber += 1;
        const lineZone = `${surface}_${line.id}`;
        parts.push(`        <zone xml:id="${lineZone}" rendition="Line" points="${formatPoints(line.polygon)}"/>\n`);
        const corrected = line.machine !== undefined;
        if (corrected) this.correctedLines += 1;
        const change = corrected ? ` change="#${CORRECTIONS_CHANGE_ID}"` : '';
        body.push(`        <lb facs="#${lineZone}" n="N${lineNumber}"${change}/>${escapeText(line.text)}\n`);
      }
      parts.push('      </zone>\n');
      body.push(paragraph ? '      </p>\n' : '      </ab>\n');
      this.textBlocks += 1;
    }
    parts.push('    </surface>\n');
    this.surfaces.push(parts.join(''));
    this.body.push(body.join(''));
  }

  /** The TEI document (UTF-8 text); deterministic in its inputs. */
  build(job: TeiJob): string {
    const software = `${job.software.name} ${job.software.version}`;
    const created = formatDateTime(job.createdAt);
    const header = [
      '  <teiHeader>\n',
      '    <fileDesc>\n',
      '      <titleStmt>\n',
      `        <title>Recognised text of job ${escapeText(job.jobId)}</title>\n`,
      '      </titleStmt>\n',
      '      <publicationStmt>\n',
      `        <p>Exported by ${escapeText(software)} from the result of job <idno type="job">${escapeText(job.jobId)}</idno>, created <date when="${created}">${created}</date>.</p>\n`,
      '      </publicationStmt>\n',
      '      <sourceDesc>\n',
      `        <p>${this.pages} page image${this.pages === 1 ? '' : 's'} read by handwriting recognition; the text is the machine's reading, with the lines people corrected in their corrected form.</p>\n`,
      '      </sourceDesc>\n',
      '    </fileDesc>\n',
      '    <encodingDesc>\n',
      '      <appInfo>\n',
      `        <application ident="${escapeAttribute(enumerated(job.software.name))}" version="${escapeAttribute(versionOf(job.software.version))}">\n`,
      `          <label>${escapeText(job.software.name)}</label>\n`,
      '        </application>\n',
      '      </appInfo>\n',
      '    </encodingDesc>\n',
    ];
    if (this.correctedLines > 0) {
      header.push(
        '    <revisionDesc>\n',
        `      <change xml:id="${CORRECTIONS_CHANGE_ID}" n="${job.correctionVersion}">${this.correctedLines} line${this.correctedLines === 1 ? '' : 's'} corrected by people (correction version ${job.correctionVersion}); their text replaces the machine's reading.</change>\n`,
        '    </revisionDesc>\n',
      );
    }
    header.push('  </teiHeader>\n');
    // A body needs at least one paragraph-like element: a job without any text region gets an empty one.
    const empty = this.textBlocks === 0 ? ['      <p/>\n'] : [];
    return [
      '<?xml version="1.0" encoding="UTF-8"?>\n',
      `<TEI xmlns="${TEI_NAMESPACE}">\n`,
      ...header,
      '  <facsimile>\n',
      ...this.surfaces,
      '  </facsimile>\n',
      '  <text>\n',
      '    <body>\n',
      ...this.body,
      ...empty,
      '    </body>\n',
      '  </text>\n',
      '</TEI>\n',
    ].join('');
  }
}

/** The source name as a relative URI, each path segment percent-encoded (page2tei's encode-for-uri). */
function imageUrl(name: string): string {
  return name
    .replace(/\\/g, '/')
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/');
}

/** A TEI enumerated value (teidata.enumerated: no whitespace or control characters). */
function enumerated(value: string): string {
  const token = value.replace(/[\p{C}\p{Z}]+/gu, '-').replace(/^-+|-+$/g, '');
  return token.length > 0 ? token : 'unknown';
}

/** teidata.versionNumber: digits and dots with optional letters; anything else becomes 0. */
function versionOf(version: string): string {
  return /^[\d]+[a-z]*[\d]*(\.[\d]+[a-z]*[\d]*){0,3}$/.test(version) ? version : '0';
}
