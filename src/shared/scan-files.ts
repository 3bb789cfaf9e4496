// Which files are a scan's page images, by name: what `hwr submit` zips from folders and files
// (src/client/scan-input.ts) and what the portal's upload form zips in the browser
// (src/portal/static/portal.js, given the list by the page), so that both pick the same pages.
// The service itself recognises images by content (src/intake/image-type.ts), never by name.
export const IMAGE_EXTENSIONS: ReadonlySet<string> = new Set([
  '.jpg',
  '.jpeg',
  '.png',
  '.tif',
  '.tiff',
  '.webp',
  '.jp2',
  '.j2k',
  '.j2c',
  '.jpf',
  '.jpx',
]);
