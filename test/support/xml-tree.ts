// The strict XML reader now lives with the layout code that reads uploaded PageXML/ALTO
// (src/recognition/layout/xml-reader.ts); tests and checks keep importing it from here.
export { childNamed, childrenNamed, descendantsNamed, parseXml, type XmlElement } from '../../src/recognition/layout/xml-reader.ts';
