// The thread one uploaded layout file is read in (uploaded-layout-thread.ts starts it, off-thread.ts).
import { answerFromThread } from '../threads/off-thread.ts';
import { type ImageSize, parseUploadedLayout } from './uploaded-layout.ts';

await answerFromThread((data: { xml: Uint8Array; image: ImageSize }) => parseUploadedLayout(data.xml, data.image));
