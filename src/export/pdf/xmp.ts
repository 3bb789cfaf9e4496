// XMP metadata for the PDF (ISO 16684-1), with the PDF/A identification (ISO 19005-2, 6.6.4)
// when the document claims PDF/A-2b. The Info dictionary carries the same values (6.6.3).
import { escapeText } from '../xml.ts';

export interface DocumentMetadata {
  title: string;
  producer: string;
  creatorTool: string;
  created: Date;
  /** `uuid:...` */
  documentId: string;
  pdfa: boolean;
}

export function renderXmp(metadata: DocumentMetadata): string {
  const date = xmpDate(metadata.created);
  const pdfaid = metadata.pdfa
    ? `
    <rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/">
      <pdfaid:part>2</pdfaid:part>
      <pdfaid:conformance>B</pdfaid:conformance>
    </rdf:Description>`
    : '';
  return `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
  <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">${pdfaid}
    <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
      <dc:format>application/pdf</dc:format>
      <dc:title>
        <rdf:Alt>
          <rdf:li xml:lang="x-default">${escapeText(metadata.title)}</rdf:li>
        </rdf:Alt>
      </dc:title>
    </rdf:Description>
    <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
      <xmp:CreateDate>${date}</xmp:CreateDate>
      <xmp:ModifyDate>${date}</xmp:ModifyDate>
      <xmp:MetadataDate>${date}</xmp:MetadataDate>
      <xmp:CreatorTool>${escapeText(metadata.creatorTool)}</xmp:CreatorTool>
    </rdf:Description>
    <rdf:Description rdf:about="" xmlns:pdf="http://ns.adobe.com/pdf/1.3/">
      <pdf:Producer>${escapeText(metadata.producer)}</pdf:Producer>
    </rdf:Description>
    <rdf:Description rdf:about="" xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/">
      <xmpMM:DocumentID>${escapeText(metadata.documentId)}</xmpMM:DocumentID>
      <xmpMM:InstanceID>${escapeText(metadata.documentId)}</xmpMM:InstanceID>
    </rdf:Description>
  </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`;
}

/** 2024-05-01T10:00:00Z (XMP) */
export function xmpDate(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** D:20240501100000Z (PDF date string, UTC) */
export function pdfDate(date: Date): string {
  return `D:${date
    .toISOString()
    .replace(/\.\d{3}Z$/, '')
    .replace(/[-:T]/g, '')}Z`;
}
