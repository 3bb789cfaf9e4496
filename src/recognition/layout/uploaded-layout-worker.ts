// The thread one uploaded layout file is read in (uploaded-layout-thread.ts starts it, off-thread.ts).
import { answerFromThread } from '../threads/off-thread.ts';
import { type ImageSize, type LayoutReadOptions, parseUploadedLayout } from './uploaded-layout.ts';

await answerFromThread((data: { xml: Uint8Array; image: ImageSize; options?: LayoutReadOptions }) =>
  parseUploadedLayout(data.xml, data.image, data.options),
);
