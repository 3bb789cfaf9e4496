// The thread one JPEG 2000 page is decoded in (jpeg2000-decode.ts starts it, off-thread.ts).
import { answerFromThread } from '../threads/off-thread.ts';
import { decodeInThisThread } from './jpeg2000-codec.ts';

await answerFromThread(
  (bytes: Uint8Array) => decodeInThisThread(bytes),
  (decoded) => [decoded.data.buffer as ArrayBuffer],
);
