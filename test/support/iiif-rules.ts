// The IIIF specifications' rules our JSON must keep, checked structurally: Presentation 3
// (https://iiif.io/api/presentation/3.0/: contexts, `id` an absolute HTTP(S) URI on every resource
// that needs one, `type` values, language maps, Canvas sizes, painting annotations targeting their
// Canvas), Image 3 (`info.json`: context, ImageService3, protocol, profile, sizes, tiles) and
// Content Search 2 (an AnnotationPage of annotations with SpecificResource targets on Canvases).
// Returns one message per broken rule (none: the document keeps them).

const PRESENTATION = 'http://iiif.io/api/presentation/3/context.json';
const IMAGE = 'http://iiif.io/api/image/3/context.json';
const SEARCH = 'http://iiif.io/api/search/2/context.json';
/** Types whose resources must carry an `id` (Presentation 3, "id"; Image 3; Search 2). */
const NEEDS_ID = new Set([
  'Manifest',
  'Canvas',
  'AnnotationPage',
  'Annotation',
  'Image',
  'ImageService3',
  'SearchService2',
  'Collection',
  'Range',
]);
const KNOWN_TYPES = new Set([...NEEDS_ID, 'TextualBody', 'SpecificResource', 'FragmentSelector', 'SvgSelector', 'TextQuoteSelector']);

type Json = Record<string, unknown>;

export function checkIiifJson(document: unknown): string[] {
  const problems: string[] = [];
  const fail = (where: string, message: string) => problems.push(`${where}: ${message}`);
  if (!isObject(document)) return ['the document is not a JSON object'];
  const context = document['@context'];
  const contexts = Array.isArray(context) ? context : [context];
  const expected =
    document.type === 'ImageService3' ? IMAGE : document.id && String(document.id).includes('/search') ? SEARCH : PRESENTATION;
  if (contexts.at(-1) !== expected) fail('$', `@context must end with ${expected}, is ${JSON.stringify(context)}`);
  walk(document, '$', null, fail);
  if (document.type === 'Manifest') checkManifest(document, fail);
  if (document.type === 'ImageService3') checkImageInfo(document, fail);
  return problems;
}

function walk(value: unknown, where: string, parent: Json | null, fail: (where: string, message: string) => void): void {
  if (Array.isArray(value)) {
    value.forEach((item, index) => walk(item, `${where}[${index}]`, parent, fail));
    return;
  }
  if (!isObject(value)) return;
  const type = value.type;
  if (typeof type === 'string') {
    if (!KNOWN_TYPES.has(type)) fail(where, `unknown type ${type}`);
    if (NEEDS_ID.has(type) && !absoluteHttp(value.id)) fail(where, `${type} needs an absolute HTTP(S) id, has ${JSON.stringify(value.id)}`);
    if (type === 'Annotation') {
      if (typeof value.motivation !== 'string') fail(where, 'an Annotation needs a motivation');
      if (!('target' in value)) fail(where, 'an Annotation needs a target');
    }
    if (type === 'AnnotationPage' && 'items' in value && !Array.isArray(value.items)) fail(where, 'AnnotationPage items must be an array');
    if (type === 'TextualBody' && typeof value.value !== 'string') fail(where, 'a TextualBody needs a string value');
  }
  for (const key of ['label', 'summary', 'requiredStatement'])
    if (key in value && key !== 'requiredStatement') checkLanguageMap(value[key], `${where}.${key}`, fail);
  for (const [key, child] of Object.entries(value)) if (key !== '@context') walk(child, `${where}.${key}`, value, fail);
}

function checkManifest(manifest: Json, fail: (where: string, message: string) => void): void {
  if (!('label' in manifest)) fail('$', 'a Manifest needs a label');
  const items = manifest.items;
  if (!Array.isArray(items) || items.length === 0) {
    fail('$', 'a Manifest needs at least one Canvas');
    return;
  }
  items.forEach((canvas: Json, index) => {
    const where = `$.items[${index}]`;
    if (canvas.type !== 'Canvas') {
      fail(where, 'items of a Manifest are Canvases');
      return;
    }
    if (!positiveInteger(canvas.width) || !positiveInteger(canvas.height)) fail(where, 'a Canvas needs integer width and height');
    for (const page of (canvas.items as Json[]) ?? []) {
      if (page.type !== 'AnnotationPage') fail(where, 'Canvas items are AnnotationPages');
      for (const annotation of (page.items as Json[]) ?? []) {
        if (annotation.motivation !== 'painting') fail(where, 'a Canvas paints with motivation painting');
        if (annotation.target !== canvas.id) fail(where, 'a painting annotation targets its Canvas');
        const body = annotation.body as Json;
        if (body?.type !== 'Image' || typeof body.format !== 'string') fail(where, 'the painting body is an Image with a format');
        for (const service of (body?.service as Json[]) ?? []) {
          if (service.type !== 'ImageService3' || !/^level[012]$/.test(String(service.profile)))
            fail(where, 'an ImageService3 with a profile');
        }
      }
    }
    for (const page of (canvas.annotations as Json[]) ?? [])
      if (page.type !== 'AnnotationPage') fail(where, 'Canvas annotations are AnnotationPages');
  });
}

function checkImageInfo(info: Json, fail: (where: string, message: string) => void): void {
  if (info.protocol !== 'http://iiif.io/api/image') fail('$', 'protocol must be http://iiif.io/api/image');
  if (!/^level[012]$/.test(String(info.profile))) fail('$', 'profile must be level0, level1 or level2');
  if (!positiveInteger(info.width) || !positiveInteger(info.height)) fail('$', 'width and height are positive integers');
  for (const size of (info.sizes as Json[]) ?? [])
    if (!positiveInteger(size.width) || !positiveInteger(size.height)) fail('$.sizes', 'integer sizes');
  for (const tile of (info.tiles as Json[]) ?? []) {
    if (!positiveInteger(tile.width)) fail('$.tiles', 'tile width');
    if (!Array.isArray(tile.scaleFactors) || !tile.scaleFactors.every(positiveInteger)) fail('$.tiles', 'integer scaleFactors');
  }
}

function checkLanguageMap(value: unknown, where: string, fail: (where: string, message: string) => void): void {
  if (!isObject(value)) {
    fail(where, 'a language map is an object');
    return;
  }
  for (const [language, strings] of Object.entries(value)) {
    if (!Array.isArray(strings) || !strings.every((item) => typeof item === 'string'))
      fail(where, `${language}: a language map's values are arrays of strings`);
  }
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function absoluteHttp(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function positiveInteger(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) > 0;
}
