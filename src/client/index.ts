// `import { HwrClient } from 'hwr/client'` (package.json `exports`): the typed client of the
// HTTP API, the zipping `hwr submit` does, and the API's request and response types.
export {
  HwrApiError,
  HwrClient,
  retryAfterMs,
  type HwrClientOptions,
  type SubmitRequest,
  type TrainRequest,
  type WaitOptions,
} from './api-client.ts';
export { prepareScan, ScanInputError, type ScanInput } from './scan-input.ts';
export { IMAGE_EXTENSIONS } from '../shared/scan-files.ts';
export * from './types.ts';
